-- leave-multi.lua: a waiter for several mutexes gives up and leaves them as if it had never asked.
-- KEYS: ...locks
-- ARGV: ticket, keep, grant, publish
-- KEYS are (lock, queue, tickets, channel, released) per key; `keep`, `grant`, `publish` as in
-- leave-queue.lua.
-- Invariant: afterwards the ticket neither stands in any of the queues nor holds any of the locks
-- — a hold founded for it (its own attempt whose answer was lost) is given back and each lock is
-- handed on; a lock left free behind a departed head is handed to the next; running it again
-- changes nothing.
-- Returns 2 gave back a hold, 1 left the lines, 0 was nowhere.
--@include lib/clock.lua
--@include lib/counter.lua
--@include lib/queue.lua
--@include lib/exclusive.lua
--@include lib/multi.lua
local result = 0
for _, l in ipairs(locksOf(5)) do
  if redis.call('HGET', l.lock, 'h') == ticket then
    -- Founded for it and never used by it: its founding entry goes (the hold stays if others
    -- entered it by owner meanwhile).
    if giveBackFounding(l.lock, ticket) then handOver(l.lock, l.queue, l.tickets, l.channel, tonumber(keep), grant, publish) end
    result = 2
  else
    local stood = redis.call('HDEL', l.tickets, ticket)
    redis.call('LREM', l.queue, 1, ticket)
    if stood == 1 then
      if result == 0 then result = 1 end
      -- It may have been the head that a free lock was waiting for: serve the next.
      if redis.call('HEXISTS', l.lock, 'o') == 0 then
        handOver(l.lock, l.queue, l.tickets, l.channel, tonumber(keep), grant, publish)
      end
    end
  end
end
return result
