-- acquire.lua: take, re-enter or join a mutex, or stand in its queue.
-- KEYS: lock, queue, tickets
-- ARGV: owner, hold, entry, ttl, join, ticketLease, window, ...order
-- `hold` is the id a fresh acquisition founds its hold with (also its ticket); `entry` the id of
-- this entry (= hold for a fresh acquisition). `join`: '' fresh; a hold id to re-enter that very
-- hold; '*' to enter whatever hold `owner` has, or found one. `ticketLease` ms, 0: no ticket.
-- `window`: the replay window (ms): a hold founded with a shorter ttl on a hash that has a counter
-- records the hash's epoch first (keepEpoch, lib/exclusive.lua).
-- `order` (optional): absent, the ticket joins the back of the line; else (quorum mode) the wall-clock ms the wait
-- began, and the ticket takes its place in a line ordered by it (lib/queue.lua, standOrdered): a
-- caller whose place is at the head of a free lock's line founds the hold at once.
-- Invariant: an entry id is recorded once, so a replayed call changes nothing and answers what the
-- first run answered; a re-entry never founds a hold; a caller served by entering its owner's
-- hold leaves the line; a hold is founded only on a free lock with no live ticket ahead of the
-- caller's; the hash never holds a hold without a PTTL.
-- Returns {1, token, hold, pttl, lease token} founded; {2, token, hold, pttl, lease token} entered
-- a live hold (`token` the hold's own on this node; `lease token` the one its quorum chose, field
-- l, written by raise-fence, else the same);
-- {0, wait ms, position, counter} busy (position 0: at the head, 1: behind it, -1: not queued; counter: the lock's counter now,
-- or the server clock in µs when its hash is gone, lib/counter.lua, so a waiter can tell a grant
-- made after this reply from one made before); {-1} the hold to
-- re-enter is gone.
local st = redis.call('HMGET', lock, 'o', 'h', 't', '@' .. entry, 'c', 'l', 'n', 'b')
-- The uncontended fresh acquisition first, before the helpers below are made (Redis makes every
-- function a script defines on each call): a free lock (so no entry of this id: a free hash keeps
-- none), nobody in line, and a ttl that leaves the hash's epoch intact (see `window`). It founds
-- the hold as `found` does.
if not st[1] and (join == '' or join == '*') and entry == hold and (not st[5] or tonumber(ttl) >= tonumber(window))
  and not redis.call('LINDEX', queue, 0) then
  local token
  if st[5] then
    token = tonumber(st[5]) + 1
    redis.call('HSET', lock, 'c', token, 'o', owner, 'h', hold)
  else
    local t = redis.call('TIME')
    token = math.max(tonumber(t[1]) * 1000000 + tonumber(t[2]), 1)
    redis.call('HSET', lock, 'c', token, 'b', token, 'o', owner, 'h', hold)
  end
  redis.call('PEXPIRE', lock, ttl)
  return {1, token, hold, tonumber(ttl), token}
end
--@include lib/clock.lua
--@include lib/counter.lua
--@include lib/queue.lua
--@include lib/exclusive.lua
local ttlMs, leaseMs, orderMs = tonumber(ttl), tonumber(ticketLease), ARGV[8] and tonumber(ARGV[8])
local token = tonumber(st[3] or st[5])
if hasEntry(st[2], entry, st[4]) then return {tonumber(st[4] or 1), token, st[2], redis.call('PTTL', lock), tonumber(st[6]) or token} end

-- One more entry on the live hold `id`.
local function enter(id)
  addEntry(lock, entry, st[7])
  return {2, token, id, redis.call('PTTL', lock), tonumber(st[6]) or token}
end

local function wait(ms)
  local c = counterNow(st[5])
  if leaseMs == 0 then return {0, ms, -1, c} end
  if orderMs then return {0, ms, standOrdered(queue, tickets, hold, orderMs, leaseMs, ttlMs, 1, 'x', owner), c} end
  return {0, ms, stand(queue, tickets, hold, leaseMs, ttlMs, 1, 'x', owner), c}
end

if join ~= '' and join ~= '*' then
  if st[2] ~= join then return {-1} end
  return enter(join)
end
if st[1] then
  if join == '*' and st[1] == owner then
    -- Served by its owner's hold: a ticket it left in line would be granted the lock later, for
    -- nobody (a stall of up to a ticket lease).
    serveHead(queue, tickets, hold)
    return enter(st[2])
  end
  return wait(redis.call('PTTL', lock))
end
local head = liveHead(queue, tickets)
if head and head.id ~= hold then
  if not orderMs or leaseMs == 0 then return wait(0) end
  local reply = wait(0)
  if reply[3] ~= 0 then return reply end
  head = liveHead(queue, tickets)
end
-- Served from the line: its hold is marked, so that its release leaves the tombstone a late
-- refresh of its ticket looks for (keepalive.lua).
if head then serveHead(queue, tickets, hold) end
local founded = found(lock, hold, owner, entry, ttlMs, st[5], st[8], head and '1' or '0', releasedOf(lock), tonumber(window))
return {1, founded, hold, ttlMs, founded}
