-- release.lua: give back one entry of a mutex hold; the last one frees the lock and hands it over.
-- KEYS: lock, queue, tickets, channel, released
-- ARGV: hold, entry, token, keep, window, grant, publish, here
-- `hold` '*': whichever hold has this entry (abandoning a join by owner whose answer was lost).
-- `token`: the hold's token on this node ('0' if unknown: then the hold id alone must match).
-- `keep`: how long the freed hash keeps its counter (ms). `released`: the lock's recorded epochs
-- (lib/exclusive.lua, keepEpoch), and the prefix of its tombstones (set for `window` ms):
-- `<released>:<entry>` for an entry given back while the hold's others remain (the hold may still
-- expire), `<released>:<hold>` when a hold served from the line ends (for its ticket's late refresh).
-- `grant` '1': grant the freed lock to the queue's head (single-node mode). `publish`: PUBLISH,
-- or SPUBLISH in a Cluster. `here`: the caller's instance, its tickets' id prefix ('' none): a
-- grant to one of them goes unannounced, the caller hands it over from this reply (saving a message).
-- Invariant: only this very hold's (id and token) own entries are removed, each at most once, so a
-- replayed release changes nothing and answers "released before" even after the hold expired or
-- the lock changed hands: the evidence is the hash's epoch (a hold of a token between the hash's
-- birth b and its counter c that is not there any more ended without expiring, which would have
-- taken the hash with it), recorded in `released` whenever the epoch may end early; the lock is
-- freed at the last entry only.
-- Returns {2, entries left} still held by the hold's other entries; {1[, ticket, token, pttl]}
-- freed (and granted to that ticket); {3} released before (a replay); {0} gone; {-1, pttl} held
-- by another hold.
local st = redis.call('HMGET', lock, 'h', 'n', 't', '@' .. entry, 'c', 'q', 'b')
-- The uncontended release first, before the helpers below are made: this hold (id and token) by
-- its founding entry, its only one, not served from the line, nobody in line.
if st[1] == hold and entry == hold and not st[2] and not st[4] and not st[6] and (st[3] or st[5]) == token
  and not redis.call('LINDEX', queue, 0) then
  redis.call('HDEL', lock, 'o', 'h', 't', 'l')
  redis.call('PEXPIRE', lock, keep)
  return {1}
end
--@include lib/clock.lua
--@include lib/counter.lua
--@include lib/queue.lua
--@include lib/exclusive.lua
if hold == '*' and hasEntry(st[1], entry, st[4]) then hold = st[1] end
local mine = st[1] == hold and (token == '0' or (st[3] or st[5]) == token)
if mine and hasEntry(st[1], entry, st[4]) then
  local n = tonumber(st[2] or 1)
  if n > 1 then
    -- The hold lives on and may yet expire (taking the epoch with it): this entry's release
    -- leaves a tombstone of its own, as a re-entry's is no uncontended path.
    redis.call('SET', released .. ':' .. entry, '1', 'PX', window)
    dropEntry(lock, hold, entry, n)
    return {2, n - 1}
  end
  if st[6] then redis.call('SET', released .. ':' .. hold, '1', 'PX', window) end
  endHold(lock, hold, entry)
  return handOver(lock, queue, tickets, channel, tonumber(keep), grant, publish, false, here, released, tonumber(window))
end
-- Not there: given back before (a replay), or gone.
if mine then return {3} end
if token ~= '0' then
  local t, b = tonumber(token), tonumber(st[7])
  if (b and t >= b and t <= tonumber(st[5])) or inEpochs(released, t) then return {3} end
end
if redis.call('EXISTS', released .. ':' .. entry, released .. ':' .. hold) > 0 then return {3} end
if st[1] then return {-1, redis.call('PTTL', lock)} end
return {0}
