-- force-release.lua: `surelock release KEY --force`: takes a lock from a holder that will not give
-- it back (a crashed machine, a stuck process) and wakes its waiters. The holder is not told: it
-- learns at its next renewal.
-- KEYS: state, holders, entries, channel
-- ARGV: kind, publish
-- `kind` 'x': `state` is a mutex's lock hash (the other keys are unused); 's': a shared lock's
-- state hash, holders zset and writer entries.
-- Invariant: every hold of the lock ends, and with it the lock's counter and birth, so that a
-- forced-out holder's release answers "gone", never "released"; the waiters are woken to attempt.
-- Returns a JSON document of what was held: {"holds": [{"owner", "fencingToken", "entries"}]}.
local t = redis.call('TIME')
local nowMs = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local holds = {}
if kind == 'x' then
  local st = redis.call('HMGET', state, 'o', 't', 'n', 'c')
  if st[1] then
    holds[1] = { owner = st[1], fencingToken = string.format('%d', tonumber(st[2] or st[4])), entries = tonumber(st[3] or 1) }
  end
  redis.call('DEL', state)
else
  local members = redis.call('ZRANGEBYSCORE', holders, '(' .. nowMs, '+inf')
  for _, hold in ipairs(members) do
    local rec = redis.call('HGET', state, 's:' .. hold)
    if rec then
      local token, _, mode, n, owner = string.match(rec, '^(%d+)|(%d+)|(%a)|(%d+)|(.*)$')
      holds[#holds + 1] = { owner = owner, fencingToken = token, entries = tonumber(n), mode = mode }
    end
  end
  redis.call('DEL', state, holders, entries)
end
redis.call(publish, channel, '*')
if #holds == 0 then return '{"holds":[]}' end
return cjson.encode({ holds = holds })
