-- lib/multi.lua: a multi-key hold is one mutex hold (one hold id, owner and entries) founded on
-- several mutexes at once. Its waiter stands in every one of their queues under one ticket of
-- mode 'm', which a release never grants (it announces the turn instead), so the waiter takes all
-- of its locks or none. `locks` lists {lock =, queue =, tickets =} per key, read from KEYS.

-- The locks of a script, read from KEYS in groups of `size` (lock, queue, tickets[, channel, released]).
local function locksOf(size)
  local locks = {}
  for i = 1, #KEYS, size do
    locks[#locks + 1] = { lock = KEYS[i], queue = KEYS[i + 1], tickets = KEYS[i + 2], channel = KEYS[i + 3], released = KEYS[i + 4] }
  end
  return locks
end

-- Stands `ticket` in every queue, or refreshes it where it stands. A ticket that lapsed on any of
-- them (or is missing from one) leaves them all and stands again at the back of every one, in this
-- one script: so each queue is ordered by when its tickets last stood, one instant per ticket for
-- all of its queues, and a waiter only ever waits for tickets that stood before it. That order has
-- no cycle: two waiters of overlapping sets never each wait for the other. Returns the largest
-- position (0: the head of every queue).
local function standAll(locks, ticket, leaseMs, ttl, owner)
  local lapsed = false
  for _, l in ipairs(locks) do
    local t = ticketOf(l.tickets, ticket)
    if not t or t.deadline <= nowMs() then lapsed = true end
  end
  if lapsed then
    for _, l in ipairs(locks) do
      redis.call('HDEL', l.tickets, ticket)
      redis.call('LREM', l.queue, 1, ticket)
    end
  end
  local position = 0
  for _, l in ipairs(locks) do
    position = math.max(position, stand(l.queue, l.tickets, ticket, leaseMs, ttl, 1, 'm', owner))
  end
  return position
end
