-- leave-queue.lua: a fair waiter gives up (timeout or abort) and takes its ticket out.
-- KEYS[1] holder hash, KEYS[2] queue list, KEYS[3] waiter deadlines zset, KEYS[4] channel
-- ARGV[1] waiter id, ARGV[2] publish command (PUBLISH or SPUBLISH)
-- Invariant: a departed waiter never stays at the head of the queue; if it was the head of a
-- free lock, the next waiter is told at once instead of at its next refresh.
-- Returns 1 if the ticket was there, 0 if not.
local lock, queue, deadlines, channel = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local waiter, publish = ARGV[1], ARGV[2]

local wasHead = redis.call('LINDEX', queue, 0) == waiter
local removed = redis.call('ZREM', deadlines, waiter)
redis.call('LREM', queue, 1, waiter)
if wasHead and redis.call('EXISTS', lock) == 0 then
  local nextWaiter = redis.call('LINDEX', queue, 0)
  if nextWaiter then redis.call(publish, channel, nextWaiter) end
end
return removed
