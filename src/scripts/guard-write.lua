-- guard-write.lua: a write to a protected resource that only a current lock holder may make,
-- applied exactly once.
-- KEYS: guard, data
-- ARGV: token, writer, seq, keep, command, ...args
-- `guard` hash: t the highest token seen; per writer (one FencingGuard object) the sequence number
-- of its last write and `r:<writer>` that write's reply. `writer` and `seq` identify this call.
-- Invariant: a write whose token is below the highest seen is refused, so a holder that woke up late
-- cannot overwrite newer work; a write is applied at most once: a replay of a writer's last write
-- answers its recorded reply, an older one is refused unapplied; check and write are one step.
-- Returns {1, reply} written (now or by the first run of a replay), {0, highest token} refused as
-- stale, {2} a replay of an older write, not applied again.
local allowed = { SET = true, DEL = true, INCRBY = true, DECRBY = true, HSET = true, HDEL = true,
  HINCRBY = true, RPUSH = true, LPUSH = true, SADD = true, SREM = true, ZADD = true, ZREM = true,
  PEXPIRE = true, APPEND = true, XADD = true }
local verb = string.upper(command)
if not allowed[verb] then return redis.error_reply('ERR surelock guard: command not allowed: ' .. verb) end

-- Tokens are decimal integers that may exceed a double's precision: compare by length, then text.
local function below(a, b) return #a < #b or (#a == #b and a < b) end
local highest = redis.call('HGET', guard, 't')
if highest and below(token, highest) then return {0, highest} end
if highest ~= token then
  -- A newer holder: the writers of older tokens are of no interest any more.
  redis.call('DEL', guard)
  redis.call('HSET', guard, 't', token)
end
local last = tonumber(redis.call('HGET', guard, writer)) or 0
local n = tonumber(seq)
if n < last then return {2} end
if n == last then return {1, cjson.decode(redis.call('HGET', guard, 'r:' .. writer))} end
local reply = redis.call(verb, data, unpack(ARGV, 6))
-- A status reply (SET's OK) is a table; keep its text, which is what the caller sees.
local recorded = reply
if type(reply) == 'table' and reply.ok then recorded = reply.ok end
redis.call('HSET', guard, writer, seq, 'r:' .. writer, cjson.encode(recorded))
redis.call('PEXPIRE', guard, keep)
return {1, reply}
