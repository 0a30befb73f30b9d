-- release.lua: give back one entry of a mutex hold; the last one frees the lock and hands it over.
-- KEYS: lock, queue, tickets, channel, tombstone
-- ARGV: hold, entry, token, keep, window, grant, publish, here
-- `hold` '*': whichever hold has this entry (abandoning a join by owner whose answer was lost).
-- `token`: the hold's token on this node ('0' if unknown: then the hold id alone must match).
-- `keep`: how long the freed hash keeps its counter (ms). `tombstone`: this entry's tombstone, a
-- string key (`<lock's released prefix>:<entry>`) set for `window` ms once the entry is given
-- back: one SET, where a shared zset of tombstones cost a clock read, a ZADD and a PEXPIRE.
-- `grant` '1': grant the freed lock to the queue's head (single-node mode). `publish`: PUBLISH,
-- or SPUBLISH in a Cluster. `here`: the caller's instance, its tickets' id prefix ('' none): a
-- grant to one of them goes unannounced, the caller hands it over from this reply (saving a message).
-- Invariant: only this very hold's (id and token) own entries are removed, each at most once,
-- and each leaves a tombstone, so a replayed release changes nothing and answers "released
-- before" even after the hold expired or the lock changed hands; the lock is freed at the last
-- entry only.
-- Returns {2, entries left} still held by the hold's other entries; {1[, ticket, token, pttl]}
-- freed (and granted to that ticket); {3} released before (a replay); {0} gone; {-1, pttl} held
-- by another hold.
--@include lib/clock.lua
--@include lib/counter.lua
--@include lib/queue.lua
--@include lib/exclusive.lua
local st = redis.call('HMGET', lock, 'h', 'n', 't', '@' .. entry)
if hold == '*' and st[4] then hold = st[1] end
if st[1] == hold and st[4] and (token == '0' or st[3] == token) then
  local n = tonumber(st[2])
  redis.call('SET', tombstone, '1', 'PX', window)
  if n > 1 then
    redis.call('HDEL', lock, '@' .. entry)
    redis.call('HINCRBY', lock, 'n', -1)
    return {2, n - 1}
  end
  redis.call('HDEL', lock, 'o', 'h', 't', 'n', 'l', '@' .. entry)
  return handOver(lock, queue, tickets, channel, tonumber(keep), grant, publish, false, here)
end
if redis.call('EXISTS', tombstone) == 1 then return {3} end
if redis.call('HEXISTS', lock, 'o') == 1 then return {-1, redis.call('PTTL', lock)} end
return {0}
