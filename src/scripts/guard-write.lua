-- guard-write.lua: a write to a protected resource that only a current lock holder may make,
-- applied exactly once.
-- KEYS: guard, data
-- ARGV: token, writer, seq, keep, window, command, ...args
-- `guard` hash: t the highest token seen; per writer (one FencingGuard object) `<writer>` =
-- `<seq>|<server ms>` of its last write, `r:<writer>` that write's reply, and `s:<writer>` the
-- sequence numbers of its recent writes that were applied (the last APPLIED_KEPT). `writer` and `seq`
-- identify this call. `keep`: how long the guard outlives its last write (ms); `window`: how long
-- a writer's record outlives a newer holder's write (ms), the time a resent call can still be
-- waited for.
-- Invariant: a write whose token is below the highest seen is refused, so a holder that woke up late
-- cannot overwrite newer work; a write is applied at most once: a replay of a writer's last write
-- answers its recorded reply (even after a newer holder wrote, within the window), a replay of an
-- older one is refused unapplied; an older write that arrives first after a newer one (it was
-- sent again as EVAL after a NOSCRIPT while the newer one's EVALSHA found the script) is applied,
-- if it is among the writer's last APPLIED_KEPT; check and write are one step.
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
local APPLIED_KEPT = 64
local record = redis.call('HGET', guard, writer)
local last = record and tonumber(string.match(record, '^(%d+)'))
local applied = redis.call('HGET', guard, 's:' .. writer) or ''
if last then
  if n == last then return {1, cjson.decode(redis.call('HGET', guard, 'r:' .. writer))} end
  if n < last and (n + APPLIED_KEPT <= last or string.find(',' .. applied .. ',', ',' .. seq .. ',', 1, true)) then return {2} end
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
    local kind = string.sub(field, 1, 2)
    if field ~= 't' and kind ~= 'r:' and kind ~= 's:' then
      local at = tonumber(string.match(value, '|(%d+)$')) or 0
      if at + tonumber(window) <= now then redis.call('HDEL', guard, field, 'r:' .. field, 's:' .. field) end
    end
  end
end
local reply = redis.call(verb, data, unpack(ARGV, 7))
-- A status reply (SET's OK) is a table; keep its text, which is what the caller sees.
local recorded = reply
if type(reply) == 'table' and reply.ok then recorded = reply.ok end
-- The applied sequence numbers, the last APPLIED_KEPT of them.
local kept = {}
for s in string.gmatch(applied, '%d+') do
  if tonumber(s) + APPLIED_KEPT > math.max(n, last or 0) then kept[#kept + 1] = s end
end
kept[#kept + 1] = seq
redis.call('HSET', guard, 's:' .. writer, table.concat(kept, ','))
-- An older write applied late keeps the newest one's record: a replay of that one answers it.
if not last or n > last then redis.call('HSET', guard, writer, seq .. '|' .. now, 'r:' .. writer, cjson.encode(recorded)) end
redis.call('PEXPIRE', guard, keep)
return {1, reply}
