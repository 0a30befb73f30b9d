-- leave-queue.lua: a waiter of a mutex gives up (timeout, abort, close, or an attempt whose
-- answer was lost) and leaves the lock as if it had never asked.
-- KEYS: lock, queue, tickets, channel
-- ARGV: ticket, keep, grant, publish
-- Invariant: afterwards the ticket neither stands in line nor holds the lock — a hold founded for
-- it (a grant that crossed its departure, or its own attempt whose answer was lost) is given back
-- and handed on, unless others entered it by owner meanwhile (then only its founding entry goes:
-- the hold is theirs); running it again changes nothing.
-- Returns 2 gave back a hold, 1 left the line, 0 was nowhere.
--@include lib/clock.lua
--@include lib/counter.lua
--@include lib/queue.lua
--@include lib/exclusive.lua
if redis.call('HGET', lock, 'h') == ticket then
  if giveBackFounding(lock, ticket) then handOver(lock, queue, tickets, channel, tonumber(keep), grant, publish) end
  return 2
end
local stood = redis.call('HDEL', tickets, ticket)
redis.call('LREM', queue, 1, ticket)
-- Its place in an ordered line (quorum mode), if it had one.
if stood == 1 then redis.call('HDEL', tickets, '<' .. ticket) end
-- It may have been the head that a free lock (whose holder expired) was waiting for: serve the next.
if stood == 1 and redis.call('HEXISTS', lock, 'o') == 0 then
  handOver(lock, queue, tickets, channel, tonumber(keep), grant, publish)
end
return stood
