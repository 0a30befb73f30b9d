-- release-multi.lua: give back one entry of a multi-key hold on every lock at once; the last one frees them all and hands each over.
-- KEYS: ...locks
-- ARGV: hold, entry, keep, window, grant, publish
-- KEYS are (lock, queue, tickets, channel, tombstone) per key, `tombstone` the entry's own there
-- (as in release.lua). The hold is matched by its id and
-- the entry's id (a multi-key hold is never granted, so its id names no other hold); `hold` '*':
-- whichever hold has this entry on the first lock (abandoning a join by owner whose answer was lost). `keep`,
-- `window`, `grant` and `publish` as in release.lua: each freed lock is handed to its queue's live
-- head exactly as a mutex release hands it (a multi-key waiter at the head is told its turn).
-- Invariant: only this hold's own entry is removed, at most once per lock, each leaving a
-- tombstone, so a replayed release changes nothing and answers "released before"; the locks are
-- freed together at the hold's last entry.
-- Returns {2, entries left} still held by the hold's other entries; {1[, ticket, token, pttl]...}
-- freed (on every key, or on some while others keep an entry of their own: a mutex that joined
-- the hold there by owner), with the grants made; {3} released before (a replay); {0} gone (also when the hold was
-- on some of the locks only: what was left of it is given back); {-1, pttl} held by another hold.
--@include lib/clock.lua
--@include lib/counter.lua
--@include lib/queue.lua
--@include lib/exclusive.lua
--@include lib/multi.lua
local locks = locksOf(5)
if hold == '*' then
  local st = redis.call('HMGET', locks[1].lock, 'h', '@' .. entry)
  if hasEntry(st[1], entry, st[2]) then hold = st[1] end
end
local mine = {}
for i, l in ipairs(locks) do
  local st = redis.call('HMGET', l.lock, 'h', 'n', '@' .. entry)
  if st[1] == hold and hasEntry(st[1], entry, st[3]) then mine[#mine + 1] = { l = l, n = tonumber(st[2] or 1) } end
end
if #mine == 0 then
  for _, l in ipairs(locks) do
    if redis.call('EXISTS', l.tombstone) == 1 then return {3} end
  end
  for _, l in ipairs(locks) do
    if redis.call('HEXISTS', l.lock, 'o') == 1 then return {-1, redis.call('PTTL', l.lock)} end
  end
  return {0}
end
local out, left, freed = {1}, 0, 0
for _, m in ipairs(mine) do
  local l = m.l
  redis.call('SET', l.tombstone, '1', 'PX', window)
  if m.n > 1 then
    dropEntry(l.lock, hold, entry, m.n)
    left = m.n - 1
  else
    endHold(l.lock, hold, entry)
    freed = freed + 1
    local handed = handOver(l.lock, l.queue, l.tickets, l.channel, tonumber(keep), grant, publish, false, nil, releasedOf(l.lock), tonumber(window))
    for j = 2, #handed do out[#out + 1] = handed[j] end
  end
end
if #mine < #locks then return {0} end
-- A key may stay held by an entry of its own (a mutex joined the hold there by owner) while the
-- others were freed: the grants made are answered all the same.
if freed == 0 then return {2, left} end
return out
