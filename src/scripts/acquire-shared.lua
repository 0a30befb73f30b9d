-- acquire-shared.lua: take semaphore permits or a read-write lock's read or write side, re-enter
-- a write, or stand in the lock's queue.
-- KEYS: state, holders, entries, queue, tickets
-- ARGV: owner, hold, entry, ttl, mode, permits, limit, join, ticketLease, keep
-- `mode` 's' (permits of a semaphore whose limit is `limit`), 'r' or 'w' (read-write lock).
-- `join`: '' fresh; '*' enter the write hold `owner` has, or found one; else a live hold of the
-- caller's own flow: the write hold to re-enter (mode 'w'), or the read or write hold under which
-- a nested read (mode 'r') is let in past the queue and the writer. `keep`: how long the state
-- outlives its last hold (ms).
-- Invariant: live holds never take more than the limit (unless it was lowered under them by
-- set-permits.lua: then nothing new is founded until they fit) and a writer is alone but for its own
-- flow's reads; a hold is founded only with no live ticket ahead of the caller's (nested reads
-- excepted: their flow already holds the lock); an entry is recorded once, so a replayed call
-- answers what the first run answered; every key keeps a PTTL covering its live holds.
-- Returns {1, token, hold, pttl, lease token} founded; {2, token, hold, pttl, lease token} entered
-- (`lease token`: the one the hold's quorum chose, else its own); {0, wait ms, position,
-- counter} busy (position 0: at the head, 1: behind it, -1: not queued; counter: the lock's counter now, as in
-- acquire.lua); {-1} the hold to join
-- is gone; {-2, limit} the semaphore is stored with another limit (not set on purpose), or has
-- fewer than `permits`.
--@include lib/clock.lua
--@include lib/counter.lua
--@include lib/queue.lua
--@include lib/shared.lua
local ttlMs, take, leaseMs, keepMs = tonumber(ttl), tonumber(permits), tonumber(ticketLease), tonumber(keep)
prune(state, holders, entries)

local function live(id)
  local deadline = tonumber(redis.call('ZSCORE', holders, id))
  if deadline and deadline > 0 then return recordOf(state, id), deadline - nowMs() end
  return nil
end

-- A replay: the fresh hold exists already, or this re-entry was recorded.
if entry == hold then
  local r, pttl = live(hold)
  if r then return {1, r.token, hold, pttl, leaseToken(state, r)} end
else
  local of = redis.call('HGET', entries, entry)
  if of then
    local r, pttl = live(of)
    if r then return {2, r.token, of, pttl, leaseToken(state, r)} end
  end
end

if mode == 's' then
  -- A limit set on purpose (set-permits.lua, field ps) is adopted; another stored one is a conflict.
  local st = redis.call('HMGET', state, 'p', 'ps')
  local stored = st[1]
  if stored and stored ~= limit and st[2] ~= '1' then return {-2, tonumber(stored)} end
  if not stored then
    redis.call('HSET', state, 'p', limit)
    stored = limit
  end
  -- More than the limit could never be served, and would hold the line back: refused, out of line.
  if take > tonumber(stored) then
    redis.call('LREM', queue, 1, hold)
    redis.call('HDEL', tickets, hold)
    return {-2, tonumber(stored)}
  end
end

local function enter(r, pttl)
  r.n = r.n + 1
  writeRecord(state, r)
  redis.call('HSET', entries, entry, r.id)
  return {2, r.token, r.id, pttl, leaseToken(state, r)}
end

local function founded()
  local token = foundShared(state, holders, entries, hold, owner, mode, take, ttlMs)
  touch(state, holders, entries, keepMs)
  return {1, token, hold, ttlMs, token}
end

if join == '*' then
  local writer = redis.call('HGET', state, 'w')
  local w, pttl = nil, 0
  if writer then w, pttl = live(writer) end
  if w and w.owner == owner then
    -- Served by its owner's write hold: out of line, or the lock would later be granted to nobody.
    serveHead(queue, tickets, hold)
    return enter(w, pttl)
  end
elseif join ~= '' then
  local r, pttl = live(join)
  if not r then return {-1} end
  if mode == 'w' then return enter(r, pttl) end
  return founded()
end

local head = liveHead(queue, tickets)
if (not head or head.id == hold) and fits(state, holders, mode, take, owner) then
  if head then serveHead(queue, tickets, hold) end
  return founded()
end
-- How long until a hold may free a place: the earliest live deadline (0 if only the queue is ahead).
local first = redis.call('ZRANGEBYSCORE', holders, '(0', '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
local waitMs = 0
if first[2] and not head then waitMs = tonumber(first[2]) - nowMs() end
local position = -1
if leaseMs > 0 then position = stand(queue, tickets, hold, leaseMs, ttlMs, take, mode, owner) end
touch(state, holders, entries, keepMs)
return {0, waitMs, position, counterNow(redis.call('HGET', state, 'c'))}
