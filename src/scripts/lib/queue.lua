-- lib/queue.lua: a lock's queue. `queue` lists tickets, head first; `tickets` maps each ticket to
-- what its waiter asked for, "<deadline ms>|<ttl ms>|<permits>|<mode>|<owner>". A ticket is live
-- until its deadline (its waiter refreshes it); lapsed tickets are dropped from the head by
-- whichever script looks. A ticket is also the id of the hold its waiter will found.
local function parseTicket(ticket, reg)
  if not reg then return nil end
  local deadline, ttl, permits, mode, owner = string.match(reg, '^(%d+)|(%d+)|(%d+)|(%a)|(.*)$')
  return { id = ticket, deadline = tonumber(deadline), ttl = tonumber(ttl), permits = tonumber(permits),
    mode = mode, owner = owner }
end

local function ticketOf(tickets, ticket)
  return parseTicket(ticket, redis.call('HGET', tickets, ticket))
end

-- The first live ticket that holds the line, after dropping the lapsed ones at the head; nil if
-- there is none. A multiLock's waiter that waits for a holder (mode 'n', lib/multi.lua) holds
-- nobody back: it is passed over, and its ticket added to `passed` when that is given (the first
-- PASSED_TOLD of them: see handOver, lib/exclusive.lua).
local PASSED_TOLD = 8
local function liveHead(queue, tickets, passed)
  -- i: the index of the next ticket to look at. The head alone first (usually the answer), then
  -- 16 at a time (one LRANGE and one HMGET), as a line of waiters passed over can be long.
  local i, size = 0, 1
  while true do
    local ids = redis.call('LRANGE', queue, i, i + size - 1)
    if #ids == 0 then return nil end
    local regs = redis.call('HMGET', tickets, unpack(ids))
    for j, id in ipairs(ids) do
      local t = parseTicket(id, regs[j])
      if t and t.deadline > nowMs() then
        if t.mode ~= 'n' then return t end
        if passed and #passed < PASSED_TOLD then passed[#passed + 1] = id end
        i = i + 1
      elseif i == 0 then
        -- Lapsed at the head: dropped (the next one is the head now, at index 0 still).
        redis.call('LPOP', queue)
        redis.call('HDEL', tickets, id, '<' .. id)
      else
        -- Lapsed behind a passed-over ticket: not live; dropped once it reaches the head.
        i = i + 1
      end
    end
    size = 16
  end
end

-- Drops the lapsed tickets at the head of a line (what liveHead prunes), and nothing more: for a
-- script that only needs the line pruned, not its live head. liveHead walks every multiLock ticket
-- that stands aside ('n') at the front, so calling it for pruning alone, once per waiter, made a
-- line of a thousand such waiters cost the square of their number.
local function pruneHead(queue, tickets)
  local id = redis.call('LINDEX', queue, 0)
  while id do
    local t = ticketOf(tickets, id)
    if t and t.deadline > nowMs() then return end
    redis.call('LPOP', queue)
    redis.call('HDEL', tickets, id)
    id = redis.call('LINDEX', queue, 0)
  end
end

-- Puts a ticket at the back of the line, or refreshes its deadline if it stands there already.
-- Returns its position: 0 at the head, 1 behind it. Only the head matters to a waiter (it looks
-- again when the holder's lease runs out); its exact place would cost a walk of the line (LPOS)
-- on every attempt and refresh, and a tick that refreshes a line of n waiters the square of n.
local function stand(queue, tickets, ticket, leaseMs, ttl, permits, mode, owner)
  local length
  if redis.call('HEXISTS', tickets, ticket) == 0 then length = redis.call('RPUSH', queue, ticket) end
  redis.call('HSET', tickets, ticket,
    string.format('%d|%d|%d|%s|%s', nowMs() + leaseMs, ttl, permits, mode, owner))
  -- The line outlives its newest ticket's lease, then vanishes on its own.
  local keep = leaseMs * 2
  if redis.call('PTTL', queue) < keep then redis.call('PEXPIRE', queue, keep) end
  if redis.call('PTTL', tickets) < keep then redis.call('PEXPIRE', tickets, keep) end
  if length then return length == 1 and 0 or 1 end
  return redis.call('LINDEX', queue, 0) == ticket and 0 or 1
end

-- Takes a ticket out of line: it is being served (granted at the head, with passed-over tickets
-- perhaps before it, or served by its owner's hold).
local function serveHead(queue, tickets, ticket)
  redis.call('LREM', queue, 1, ticket)
  redis.call('HDEL', tickets, ticket, '<' .. ticket)
end

-- Quorum mode: the line is ordered by each waiter's `order` (the wall-clock ms its wait began, the
-- same on every node; ties by ticket id), kept beside its registration as field `<ticket`, so that
-- every node has the tickets it holds in one and the same order, whatever order they arrived in.
-- Puts the ticket in its place if it stands nowhere yet (tickets without an order stay ahead of
-- it), then registers or refreshes it as `stand` does. Returns its position (0 at the head, 1 behind it).
local function standOrdered(queue, tickets, ticket, order, leaseMs, ttl, permits, mode, owner)
  if redis.call('HEXISTS', tickets, ticket) == 0 then
    local before = nil
    for _, id in ipairs(redis.call('LRANGE', queue, 0, -1)) do
      local o = tonumber(redis.call('HGET', tickets, '<' .. id))
      if o and (o > order or (o == order and id > ticket)) then
        before = id
        break
      end
    end
    if before then redis.call('LINSERT', queue, 'BEFORE', before, ticket) else redis.call('RPUSH', queue, ticket) end
    -- Registered here, so that `stand` finds it standing and only refreshes it.
    redis.call('HSET', tickets, '<' .. ticket, string.format('%d', order), ticket, '0|0|0|x|')
  end
  return stand(queue, tickets, ticket, leaseMs, ttl, permits, mode, owner)
end

-- Says `message` to the waiter of `ticket` alone: on its instance's own channel of the lock,
-- `<channel>:<instance>` (a ticket is `<instance>.<n>`), which only that Surelock instance
-- listens to; a ticket of another form hears it on the lock's channel.
local function instanceOf(ticket)
  return string.match(ticket, '^([^.]+)%.')
end
local function tell(publish, channel, ticket, message)
  local instance = instanceOf(ticket)
  redis.call(publish, instance and (channel .. ':' .. instance) or channel, message)
end
