-- release.lua: give back one entry of a mutex hold; the last one frees the lock and hands it over.
-- KEYS: lock, queue, tickets, channel
-- ARGV: hold, entry, token, keep, grant, publish
-- `hold` '*': whichever hold has this entry (abandoning a join by owner whose answer was lost).
-- `token`: the hold's token on this node, '0' if unknown. `keep`: how long the freed hash keeps
-- its counter (ms). `grant` '1': grant the freed lock to the queue's head (single-node mode).
-- `publish`: PUBLISH, or SPUBLISH in a Cluster.
-- Invariant: only this hold's own entries are removed, each at most once, so a replayed release
-- changes nothing; the lock is freed at the last entry only; a release answers "released before"
-- only when the hash has lived without interruption since the hold's token (its birth `b` is not
-- above it) and the hold is gone from it, which only a release can do — an expired hold takes the
-- hash with it.
-- Returns {2, entries left} still held by the hold's other entries; {1[, ticket, token, pttl]}
-- freed (and granted to that ticket); {3} released before (a replay); {0} gone; {-1, pttl} held
-- by another hold.
--@include lib/clock.lua
--@include lib/counter.lua
--@include lib/queue.lua
--@include lib/exclusive.lua
local st = redis.call('HMGET', lock, 'h', 'n', 'b', '@' .. entry)
if hold == '*' and st[4] then hold = st[1] end
if st[1] == hold then
  local n = tonumber(st[2])
  if not st[4] then return {2, n} end
  if n > 1 then
    redis.call('HDEL', lock, '@' .. entry)
    redis.call('HINCRBY', lock, 'n', -1)
    return {2, n - 1}
  end
  redis.call('HDEL', lock, 'o', 'h', 't', 'n', '@' .. entry)
  return handOver(lock, queue, tickets, channel, tonumber(keep), grant, publish)
end
if st[3] and tonumber(token) > 0 and tonumber(st[3]) <= tonumber(token) then return {3} end
if redis.call('HEXISTS', lock, 'o') == 1 then return {-1, redis.call('PTTL', lock)} end
return {0}
