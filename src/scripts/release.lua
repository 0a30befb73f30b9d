-- release.lua: give back one entry of a mutex (or of a read-write lock's write side).
-- KEYS[1] holder hash, KEYS[2] wake-up channel, KEYS[3] fair queue list
-- ARGV[1] owner, ARGV[2] fencing token of the entry, ARGV[3] publish command (PUBLISH or SPUBLISH)
-- Invariant: only the owner of this very acquisition (owner and token both match) changes the
-- lock, so an expired holder never frees its successor's lock; the last entry deletes the hash
-- and announces it on the channel (with the fair queue's head, or "*" for anyone).
-- Returns {1, 0} freed, {2, entries left} still held, {0, 0} gone, {-1, pttl} held by another.
local lock, channel, queue = KEYS[1], KEYS[2], KEYS[3]
local owner, token, publish = ARGV[1], ARGV[2], ARGV[3]

local holder = redis.call('HMGET', lock, 'o', 't', 'n')
if not holder[1] then return {0, 0} end
if holder[1] ~= owner or holder[2] ~= token then return {-1, redis.call('PTTL', lock)} end

if holder[3] ~= '1' then
  local left = redis.call('HINCRBY', lock, 'n', -1)
  if left > 0 then return {2, left} end
end

redis.call('DEL', lock)
redis.call(publish, channel, redis.call('LINDEX', queue, 0) or '*')
return {1, 0}
