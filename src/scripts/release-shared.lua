-- release-shared.lua: give back a semaphore permit or a read lock.
-- KEYS[1] zset of members, KEYS[2] wake-up channel | ARGV[1] member, ARGV[2] publish command
-- Invariant: only this acquisition's own member is removed; a freed slot is announced.
-- Returns 1 released, 0 gone (its lease had lapsed or it was removed).
local holders, channel = KEYS[1], KEYS[2]
local now = redis.call('TIME')
local nowMs = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local deadline = redis.call('ZSCORE', holders, ARGV[1])
redis.call('ZREM', holders, ARGV[1])
if (not deadline) or tonumber(deadline) <= nowMs then return 0 end
redis.call(ARGV[2], channel, '*')
return 1
