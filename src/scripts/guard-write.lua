-- guard-write.lua: a write to a protected resource that only a current lock holder may make,
-- applied exactly once.
-- KEYS: guard, data
-- ARGV: token, writer, seq, keep, window, command, ...args
-- `guard` hash: t the highest token seen; per writer (one FencingGuard object) `<writer>` =
-- `<seq>|<server ms>` of its last write and `r:<writer>` that write's reply. `writer` and `seq`
-- identify this call. `keep`: how long the guard outlives its last write (ms); `window`: how long
-- a writer's record outlives a newer holder's write (ms), the time a resent call can still be
-- waited for.
-- Invariant: a write whose token is below the highest seen is refused, so a holder that woke up late
-- cannot overwrite newer work; a write is applied at most once: a replay of a writer's last write
-- answers its recorded reply (even after a newer holder wrote, within the window), an older one is
-- refused unapplied; check and write are one step.
-- Returns {1, reply} written (now or by the first run of a replay), {0, highest token} refused as
-- stale, {2} a replay of an older write, not applied again.
local allowed = { SET = true, DEL = true, INCRBY = true, DECRBY = true, HSET = true, HDEL = true,
  HINCRBY = true, RPUSH = true, LPUSH = true, SADD = true, SREM = true, ZADD = true, ZREM = true,
  PEXPIRE = true, APPEND = true, XADD = true }
local verb = string.upper(command)
if not allowed[verb] then return redis.error_reply('ERR surelock guard: command not allowed: ' .. verb) end

local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local n = tonumber(seq)

-- A replay first: the answer of its first run stands, whoever wrote since.
local record = redis.call('HGET', guard, writer)
if record then
  local last = tonumber(string.match(record, '^(%d+)'))
  if n < last then return {2} end
  if n == last then return {1, cjson.decode(redis.call('HGET', guard, 'r:' .. writer))} end
end

-- Tokens are decimal integers that may exceed a double's precision: compare by length, then text.
local function below(a, b) return #a < #b or (#a == #b and a < b) end
local highest = redis.call('HGET', guard, 't')
if highest and below(token, highest) then return {0, highest} end
if highest ~= token then
  -- A newer holder: the writers of older tokens are of no interest once no resend can come.
  redis.call('HSET', guard, 't', token)
  local fields = redis.call('HGETALL', guard)
  for i = 1, #fields, 2 do
    local field, value = fields[i], fields[i + 1]
    if field ~= 't' and string.sub(field, 1, 2) ~= 'r:' then
      local at = tonumber(string.match(value, '|(%d+)$')) or 0
      if at + tonumber(window) <= now then redis.call('HDEL', guard, field, 'r:' .. field) end
    end
  end
end
local reply = redis.call(verb, data, unpack(ARGV, 7))
-- A status reply (SET's OK) is a table; keep its text, which is what the caller sees.
local recorded = reply
if type(reply) == 'table' and reply.ok then recorded = reply.ok end
redis.call('HSET', guard, writer, seq .. '|' .. now, 'r:' .. writer, cjson.encode(recorded))
redis.call('PEXPIRE', guard, keep)
return {1, reply}
