-- acquire-multi.lua: take or re-enter several mutexes at once, all or none, or stand in all their queues.
-- KEYS: ...locks
-- ARGV: owner, hold, entry, ttl, join, ticketLease, keep, grant, publish
-- KEYS are (lock, queue, tickets, channel, released) per key: the keys `mutex(key)` uses, so a
-- multi-key hold and a mutex of one of its keys exclude each other. `hold` is the id a fresh
-- acquisition founds its hold with on every lock (also its ticket); `entry` this entry's id
-- (= hold when fresh). `join`: '' fresh; a hold id to re-enter that very hold; '*' to enter the
-- hold `owner` has on every one of the locks (one hold, on all of them), else as fresh.
-- `ticketLease` ms, 0: no ticket. `keep`, `grant`, `publish` as in release.lua, for the locks a
-- waiter stops holding back.
-- Invariant: a hold is founded on every lock or on none, and only when each lock is free with no
-- live ticket that holds the line ahead of the caller's. A waiter holds nothing; it holds the
-- lines back ('m') only while every lock is free, never while it waits for a holder ('n'): no
-- deadlock between overlapping sets, nor with a flow that holds one of the locks and asks for
-- another (lib/multi.lua). An entry id is recorded on every lock, so a replayed call changes
-- nothing and answers what the first run answered; a re-entry never founds a hold; no lock hash
-- holds a hold without a PTTL.
-- Returns {1, hold, pttl, token, lease token, ...} founded (pttl: the shortest among the locks) (a token and a lease token per key, in
-- KEYS order; the lease token is field l, written by raise-fence in quorum mode, else the token);
-- {2, hold, pttl, token, lease token, ...} entered; {0, wait ms, position, 0} busy (position 0: at the head of every line, 1: behind a head, -1:
-- not queued; wait ms: the longest PTTL among the locks held by others); {-1} the hold to re-enter
-- is gone (or is no longer on every lock).
--@include lib/clock.lua
--@include lib/counter.lua
--@include lib/queue.lua
--@include lib/exclusive.lua
--@include lib/multi.lua
local ttlMs, leaseMs = tonumber(ttl), tonumber(ticketLease)
local locks = locksOf(5)

-- Every lock's hold as it stands: {code, hold, pttl, token, lease token, ...}, or {-1} if the
-- entry (or the hold `id`) is not on every lock. `pttl` is the shortest of the locks' PTTLs: the
-- hold is held only while every key holds it, and a join by owner finds keys that others kept
-- alive for longer (a mutex of one of them) beside keys about to expire.
local function answer(code, id)
  local out = {code, id, 0}
  local shortest
  for _, l in ipairs(locks) do
    local st = redis.call('HMGET', l.lock, 'h', 't', 'l', '@' .. entry, 'c')
    if st[1] ~= id or not hasEntry(st[1], entry, st[4]) then return {-1} end
    local pttl = redis.call('PTTL', l.lock)
    if not shortest or pttl < shortest then shortest = pttl end
    local token = tonumber(st[2] or st[5])
    out[#out + 1] = token
    out[#out + 1] = tonumber(st[3]) or token
  end
  out[3] = shortest
  return out
end

-- A replay: the entry is recorded already (1 founding, 2 re-entry).
local first = redis.call('HMGET', locks[1].lock, 'h', '@' .. entry)
if hasEntry(first[1], entry, first[2]) then return answer(tonumber(first[2] or 1), first[1]) end

if join == '*' then
  local st = redis.call('HMGET', locks[1].lock, 'o', 'h')
  join = ''
  if st[1] == owner then
    join = st[2]
    for _, l in ipairs(locks) do
      if redis.call('HGET', l.lock, 'h') ~= st[2] then join = '' end
    end
  end
  if join ~= '' then
    -- Served by its owner's hold: out of every line, or a lock would later be granted to nobody.
    for _, l in ipairs(locks) do serveHead(l.queue, l.tickets, hold) end
  end
end
if join ~= '' then
  for _, l in ipairs(locks) do
    if redis.call('HGET', l.lock, 'h') ~= join then return {-1} end
  end
  for _, l in ipairs(locks) do addEntry(l.lock, entry, redis.call('HGET', l.lock, 'n')) end
  return answer(2, join)
end

local waitMs, held, blocked, counters = 0, false, false, {}
for i, l in ipairs(locks) do
  local st = redis.call('HMGET', l.lock, 'o', 'c', 'b')
  counters[i] = st
  pruneHead(l.queue, l.tickets)
  if st[1] then
    held = true
    waitMs = math.max(waitMs, redis.call('PTTL', l.lock))
  elseif lineAhead(l, hold) then
    blocked = true
  end
end
if not held and not blocked then
  for i, l in ipairs(locks) do
    serveHead(l.queue, l.tickets, hold)
    found(l.lock, hold, owner, entry, ttlMs, counters[i][2], counters[i][3], '0', releasedOf(l.lock), tonumber(keep))
  end
  return answer(1, hold)
end
if leaseMs == 0 then return {0, waitMs, -1, 0} end
local was = modeOf(locks, hold)
local position = standAll(locks, hold, leaseMs, ttlMs, owner, held and 'n' or 'm')
-- It held the lines back and now waits for a holder: each free lock goes to whoever is next.
if held and was == 'm' then
  for _, l in ipairs(locks) do
    if redis.call('HEXISTS', l.lock, 'o') == 0 then handOver(l.lock, l.queue, l.tickets, l.channel, tonumber(keep), grant, publish, true) end
  end
end
return {0, waitMs, position, 0}
