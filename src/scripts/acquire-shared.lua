-- acquire-shared.lua: take a semaphore permit, or a read-write lock's read side.
-- KEYS[1] zset member -> lease deadline (server ms), KEYS[2] fencing counter,
-- KEYS[3] writer's holder hash (read locks; missing for a semaphore), KEYS[4] writer-waiting mark
-- ARGV[1] member (unique per acquisition), ARGV[2] ttl ms, ARGV[3] counter retention ms,
-- ARGV[4] permits (0: unlimited, for readers), ARGV[5] owner (a writer with this owner lets us in)
-- Invariant: live members never number more than the permits; a lapsed member counts for
-- nothing; no reader enters while another owner writes or a writer is waiting; every key has a PTTL.
-- Returns {1, token} acquired, {0, ms until a slot may free} otherwise.
local holders, fence, writer, mark = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local member, ttl, keep = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local permits, owner = tonumber(ARGV[4]), ARGV[5]

local now = redis.call('TIME')
local nowMs = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', holders, '-inf', nowMs)

local writerOwner = redis.call('HGET', writer, 'o')
if writerOwner and writerOwner ~= owner then return {0, redis.call('PTTL', writer)} end
if (not writerOwner) and redis.call('EXISTS', mark) == 1 and redis.call('GET', mark) ~= owner then
  return {0, redis.call('PTTL', mark)}
end
if permits > 0 and redis.call('ZCARD', holders) >= permits then
  local first = redis.call('ZRANGE', holders, 0, 0, 'WITHSCORES')
  return {0, tonumber(first[2]) - nowMs}
end

if redis.call('EXISTS', fence) == 0 then
  redis.call('SET', fence, now[1] .. string.format('%06d', tonumber(now[2])))
end
local token = redis.call('INCR', fence)
redis.call('PEXPIRE', fence, keep)
redis.call('ZADD', holders, nowMs + ttl, member)
if redis.call('PTTL', holders) < ttl then redis.call('PEXPIRE', holders, ttl) end
return {1, token}
