-- lib/shared.lua: semaphores and read-write locks keep their holds in a zset, `holders`, hold id ->
-- deadline (server ms), with a record per hold in the `state` hash:
-- s:<hold> = "<token>|<permits>|<mode>|<entries>|<owner>". Modes: 's' takes `permits` of a
-- semaphore's limit (field p; u counts permits in use), 'r' reads, 'w' writes (field w names the
-- writer; it excludes everyone but its own flow's nested reads, and its re-entries are recorded in
-- `entries`, entry -> hold). A released hold leaves a tombstone, score -(expiry), so a replayed
-- release can tell "released" from "expired"; tombstones are dropped once they lapse. In quorum
-- mode l:<hold> records the token the quorum chose for a hold whose own token here is smaller.

local function recordOf(state, hold)
  local rec = redis.call('HGET', state, 's:' .. hold)
  if not rec then return nil end
  local token, permits, mode, n, owner = string.match(rec, '^(%d+)|(%d+)|(%a)|(%d+)|(.*)$')
  return { id = hold, token = tonumber(token), permits = tonumber(permits), mode = mode, n = tonumber(n),
    owner = owner }
end

-- The token of a hold's lease: what its quorum chose (l:<hold>), else the hold's own.
local function leaseToken(state, r)
  return tonumber(redis.call('HGET', state, 'l:' .. r.id) or r.token)
end

local function writeRecord(state, r)
  redis.call('HSET', state, 's:' .. r.id, string.format('%d|%d|%s|%d|%s', r.token, r.permits, r.mode, r.n, r.owner))
end

-- Forgets a hold that ended: its permits, its record, and for a writer its mark and re-entries.
local function forget(state, entries, r)
  redis.call('HINCRBY', state, 'u', -r.permits)
  redis.call('HDEL', state, 's:' .. r.id, 'l:' .. r.id)
  if r.mode == 'w' then
    redis.call('HDEL', state, 'w')
    redis.call('DEL', entries)
  end
end

-- Drops the holds whose deadline passed, and the tombstones that lapsed.
local function prune(state, holders, entries)
  local now = nowMs()
  local expired = redis.call('ZRANGEBYSCORE', holders, '(0', now)
  for _, hold in ipairs(expired) do
    local r = recordOf(state, hold)
    if r then forget(state, entries, r) end
  end
  if #expired > 0 then redis.call('ZREMRANGEBYSCORE', holders, '(0', now) end
  redis.call('ZREMRANGEBYSCORE', holders, -now, 0)
end

-- Whether a hold of `mode` taking `permits` fits beside the live holds (pruned already).
local function fits(state, holders, mode, permits, owner)
  if mode == 's' then
    local used = tonumber(redis.call('HGET', state, 'u')) or 0
    return used + permits <= tonumber(redis.call('HGET', state, 'p'))
  end
  local writer = redis.call('HGET', state, 'w')
  if mode == 'r' then
    if not writer then return true end
    -- A writer lets in the readers of its own owner (an explicit `owner` shared on purpose).
    local w = recordOf(state, writer)
    return w ~= nil and w.owner == owner
  end
  return redis.call('ZCOUNT', holders, '(0', '+inf') == 0
end

local function foundShared(state, holders, entries, hold, owner, mode, permits, ttl)
  local token = nextToken(state)
  redis.call('ZADD', holders, nowMs() + ttl, hold)
  writeRecord(state, { id = hold, token = token, permits = permits, mode = mode, n = 1, owner = owner })
  redis.call('HINCRBY', state, 'u', permits)
  if mode == 'w' then
    redis.call('HSET', state, 'w', hold)
    redis.call('HSET', entries, hold, hold)
  end
  return token
end

-- Keeps the lock's keys alive as long as their longest-lived hold, and `keep` ms at least (the
-- counter and a semaphore's stored limit outlive the last release by that much).
local function touch(state, holders, entries, keep)
  local last = redis.call('ZRANGE', holders, -1, -1, 'WITHSCORES')
  local ms = keep
  if last[2] and tonumber(last[2]) > 0 then ms = math.max(ms, tonumber(last[2]) - nowMs()) end
  redis.call('PEXPIRE', state, ms)
  redis.call('PEXPIRE', holders, ms)
  redis.call('PEXPIRE', entries, ms)
end

-- Holds were freed: grant the lock to the live heads of the queue that now fit, in order, stopping
-- at the first that does not (a large request is never overtaken by smaller ones). In quorum mode
-- the first head that fits is told it is its turn instead. Returns {ticket, token, pttl, ...}.
local function handOverShared(state, holders, entries, queue, tickets, channel, grant, publish)
  local granted = {}
  while true do
    local head = liveHead(queue, tickets)
    if not head or not fits(state, holders, head.mode, head.permits, head.owner) then break end
    if grant ~= '1' then
      tell(publish, channel, head.id, 't ' .. head.id)
      break
    end
    serveHead(queue, tickets, head.id)
    local pttl = math.min(head.ttl, head.deadline - nowMs())
    local token = foundShared(state, holders, entries, head.id, head.owner, head.mode, head.permits, pttl)
    tell(publish, channel, head.id, string.format('g %s %d %d', head.id, token, pttl))
    granted[#granted + 1] = head.id
    granted[#granted + 1] = token
    granted[#granted + 1] = pttl
  end
  return granted
end
