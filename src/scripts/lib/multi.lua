-- lib/multi.lua: a multi-key hold is one mutex hold (one hold id, owner and entries) founded on
-- several mutexes at once. Its waiter stands in every one of their queues under one ticket, which
-- a release never grants (it announces the turn instead), so the waiter takes all of its locks or
-- none. The ticket's mode says whether it holds the line: 'm' while the waiter waits only for
-- tickets ahead of it (every lock is free), 'n' while it waits for a holder of one of the locks.
-- An 'n' ticket is passed over by everyone (lib/queue.lua): a waiter never keeps a free lock from
-- others while it waits for a busy one, so a flow that holds one of its locks and asks for
-- another is never stuck behind it. `locks` lists {lock =, queue =, tickets =, ...} per key.

-- The locks of a script, read from KEYS in groups of `size` (lock, queue, tickets[, channel, tombstone]).
local function locksOf(size)
  local locks = {}
  for i = 1, #KEYS, size do
    locks[#locks + 1] = { lock = KEYS[i], queue = KEYS[i + 1], tickets = KEYS[i + 2], channel = KEYS[i + 3], tombstone = KEYS[i + 4] }
  end
  return locks
end

-- Whether a live ticket that holds the line stands ahead of `ticket` in `l`'s queue (anywhere in
-- it, if `ticket` does not stand there). Read 16 at a time (one LRANGE, one HMGET): the answer is
-- usually near the head, and a line can be thousands long.
local function lineAhead(l, ticket)
  local from = 0
  while true do
    local ids = redis.call('LRANGE', l.queue, from, from + 15)
    if #ids == 0 then return false end
    local regs = redis.call('HMGET', l.tickets, unpack(ids))
    for j, id in ipairs(ids) do
      if id == ticket then return false end
      local t = parseTicket(id, regs[j])
      if t and t.deadline > nowMs() and t.mode ~= 'n' then return true end
    end
    if #ids < 16 then return false end
    from = from + 16
  end
end

-- The mode `ticket` stands with now ('m', 'n'), or nil if it stands nowhere live.
local function modeOf(locks, ticket)
  local t = ticketOf(locks[1].tickets, ticket)
  if t and t.deadline > nowMs() then return t.mode end
  return nil
end

-- Stands `ticket` in every queue with `mode`, or refreshes it where it stands. A ticket that
-- lapsed on any of them (or is missing from one) leaves them all and stands again at the back of
-- every one, in this one script: so each queue is ordered by when its tickets last stood, one
-- instant per ticket for all of its queues, and a waiter only ever waits for holders and for
-- line-holding tickets that stood before it. A set's ticket holds a line only while the set waits
-- for no holder, so a waiting set is never part of a cycle of waits: two sets that overlap never
-- each wait for the other, nor a set and a holder of one of its locks. Returns the largest
-- position (0: the head of every queue, else 1).
local function standAll(locks, ticket, leaseMs, ttl, owner, mode)
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
    position = math.max(position, stand(l.queue, l.tickets, ticket, leaseMs, ttl, 1, mode, owner))
  end
  return position
end
