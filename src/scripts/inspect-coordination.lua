-- inspect-coordination.lua: what Redis holds for one name as an election and as a countdown
-- latch (the CLI's `inspect`, `list` and `leader`; inspect.lua reads the locks). Changes nothing.
-- KEYS: lock, queue, tickets, latch
-- ARGV:
-- Invariant: read-only; reports only a live hold and live tickets, as the scripts that serve the
-- election would count them, and the leader's value only for the hold that proclaimed it.
-- Returns a JSON document: {"election": …, "latch": …}, each null when Redis holds nothing of it;
-- tokens are decimal strings (they may exceed a double).
local t = redis.call('TIME')
local nowMs = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local function election()
  local st = redis.call('HMGET', lock, 'o', 'h', 't', 'vh', 'vt', 'v', 'c')
  local candidates = {}
  for _, ticket in ipairs(redis.call('LRANGE', queue, 0, -1)) do
    local reg = redis.call('HGET', tickets, ticket)
    if reg then
      local deadline, _, _, _, owner = string.match(reg, '^(%d+)|(%d+)|(%d+)|(%a)|(.*)$')
      if tonumber(deadline) > nowMs then
        candidates[#candidates + 1] = { ticket = ticket, owner = owner, expiresInMs = tonumber(deadline) - nowMs }
      end
    end
  end
  if not st[1] and #candidates == 0 then return cjson.null end
  local holder = cjson.null
  if st[1] then
    local proclaimed = st[4] == st[2]
    holder = { owner = st[1], hold = st[2], proclaimed = proclaimed, pttlMs = redis.call('PTTL', lock),
      fencingToken = string.format('%d', tonumber(proclaimed and st[5] or st[3] or st[7])), value = cjson.null }
    if proclaimed and st[6] then holder.value = st[6] end
  end
  return { holder = holder, candidates = candidates }
end

local function countdown()
  local st = redis.call('HMGET', latch, 'n', 'c')
  if not st[1] then return cjson.null end
  return { count = tonumber(st[1]), left = tonumber(st[2]), pttlMs = redis.call('PTTL', latch) }
end

return cjson.encode({ election = election(), latch = countdown() })
