-- guard-write.lua: a write to a protected resource that only a current lock holder may make.
-- KEYS[1] the resource's highest-token-seen key, KEYS[2] the data key written
-- ARGV[1] fencing token, ARGV[2] high-water retention ms, ARGV[3] command, ARGV[4..] its arguments
-- Invariant: a write whose token is below the highest token already seen for the resource is
-- refused, so a holder that woke up late cannot overwrite newer work; check and write are one step.
-- Returns {1, reply} written, {0, highest token seen} refused.
local seenKey, dataKey = KEYS[1], KEYS[2]
local token, keep, command = ARGV[1], tonumber(ARGV[2]), string.upper(ARGV[3])
local allowed = { SET = true, DEL = true, INCRBY = true, DECRBY = true, HSET = true, HDEL = true,
  HINCRBY = true, RPUSH = true, LPUSH = true, SADD = true, SREM = true, ZADD = true, ZREM = true,
  PEXPIRE = true, APPEND = true, XADD = true }
if not allowed[command] then return redis.error_reply('surelock guard: command not allowed: ' .. command) end

local seen = redis.call('GET', seenKey)
-- Tokens are decimal integers that may exceed a double's precision: compare by length, then text.
if seen and (#token < #seen or (#token == #seen and token < seen)) then return {0, seen} end
redis.call('SET', seenKey, token, 'PX', keep)
return {1, redis.call(command, dataKey, unpack(ARGV, 4))}
