-- inspect.lua: what Redis holds for one user key, for every kind of lock at once (the CLI's
-- `inspect`, `list` and `exec`). Changes nothing.
-- KEYS: lock, queue, tickets, rwState, rwHolders, rwQueue, rwTickets, semState, semHolders, semQueue, semTickets
-- ARGV:
-- Invariant: read-only; reports only live holds and live tickets, as the scripts that serve the
-- lock would count them (a hold past its deadline or a lapsed ticket is left out).
-- Returns a JSON document: {"mutex": …, "rw": …, "semaphore": …}, each null when Redis holds
-- nothing of that kind; tokens are decimal strings (they may exceed a double).
local t = redis.call('TIME')
local nowMs = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local function line(q, tickets)
  local out = {}
  for _, ticket in ipairs(redis.call('LRANGE', q, 0, -1)) do
    local reg = redis.call('HGET', tickets, ticket)
    if reg then
      local deadline, ttl, permits, mode, owner = string.match(reg, '^(%d+)|(%d+)|(%d+)|(%a)|(.*)$')
      if tonumber(deadline) > nowMs then
        out[#out + 1] = { ticket = ticket, owner = owner, mode = mode, permits = tonumber(permits),
          expiresInMs = tonumber(deadline) - nowMs }
      end
    end
  end
  return out
end

local function mutex()
  local st = redis.call('HMGET', lock, 'o', 'h', 't', 'n', 'c')
  local waiting = line(queue, tickets)
  if not st[1] and #waiting == 0 then return cjson.null end
  local holder = cjson.null
  if st[1] then
    holder = { owner = st[1], hold = st[2], fencingToken = string.format('%d', tonumber(st[3] or st[5])), entries = tonumber(st[4] or 1),
      pttlMs = redis.call('PTTL', lock) }
  end
  return { holder = holder, queue = waiting }
end

local function shared(state, holders, q, tickets)
  local list = {}
  local members = redis.call('ZRANGEBYSCORE', holders, '(' .. nowMs, '+inf', 'WITHSCORES')
  for i = 1, #members, 2 do
    local rec = redis.call('HGET', state, 's:' .. members[i])
    if rec then
      local token, permits, mode, n, owner = string.match(rec, '^(%d+)|(%d+)|(%a)|(%d+)|(.*)$')
      list[#list + 1] = { hold = members[i], owner = owner, fencingToken = token, permits = tonumber(permits),
        mode = mode, entries = tonumber(n), expiresInMs = tonumber(members[i + 1]) - nowMs }
    end
  end
  local waiting = line(q, tickets)
  if #list == 0 and #waiting == 0 then return cjson.null end
  local limit = tonumber(redis.call('HGET', state, 'p')) or cjson.null
  return { holders = list, queue = waiting, limit = limit }
end

return cjson.encode({ mutex = mutex(), rw = shared(rwState, rwHolders, rwQueue, rwTickets),
  semaphore = shared(semState, semHolders, semQueue, semTickets) })
