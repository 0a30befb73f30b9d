-- leave-queue-shared.lua: a waiter of a semaphore or read-write lock gives up and leaves the lock
-- as if it had never asked.
-- KEYS: state, holders, entries, queue, tickets, channel
-- ARGV: ticket, window, keep, grant, publish
-- Invariant: afterwards the ticket neither stands in line nor holds a place — a hold founded for it
-- (a grant that crossed its departure, or its own attempt whose answer was lost) is given back,
-- unless others entered it by owner meanwhile (a write hold: then only its founding entry goes);
-- the places it leaves go to the heads behind it; running it again changes nothing.
-- Returns 2 gave back a hold, 1 left the line, 0 was nowhere.
--@include lib/clock.lua
--@include lib/counter.lua
--@include lib/queue.lua
--@include lib/shared.lua
prune(state, holders, entries)
local left = 0
local score = tonumber(redis.call('ZSCORE', holders, ticket))
local founded = score and score > 0 and recordOf(state, ticket)
if founded and founded.mode == 'w' and (founded.n > 1 or redis.call('HGET', entries, ticket) ~= ticket) then
  -- Others entered this write hold by owner meanwhile: only its founding entry goes (once), and
  -- the hold stays theirs.
  if redis.call('HDEL', entries, ticket) == 1 then
    founded.n = founded.n - 1
    writeRecord(state, founded)
  end
  return 2
end
if score and score > 0 then
  redis.call('ZADD', holders, -(nowMs() + tonumber(window)), ticket)
  forget(state, entries, founded)
  left = 2
else
  left = redis.call('HDEL', tickets, ticket)
  redis.call('LREM', queue, 1, ticket)
end
if left > 0 then
  handOverShared(state, holders, entries, queue, tickets, channel, grant, publish)
  touch(state, holders, entries, tonumber(keep))
end
return left
