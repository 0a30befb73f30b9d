-- lib/exclusive.lua: a mutex's hold lives in the lock hash: o owner, h hold id, t token, n
-- entries, and `@<entry>` per entry (1 the founding one, 2 a re-entry). The hash's PTTL is the
-- hold's lease, so the hold and the hash expire together.
-- `c` is the lock's counter as read by the caller (false or nil if it has none).
local function found(lock, hold, owner, entry, ttl, c)
  local token = tokenAfter(c)
  redis.call('HSET', lock, 'c', token, 'o', owner, 'h', hold, 't', token, 'n', 1, '@' .. entry, 1)
  redis.call('PEXPIRE', lock, ttl)
  return token
end

-- The lock was just freed. In single-node mode (`grant` '1') it goes to the live head of the
-- queue, founded with a PTTL of what is left of that ticket's lease, so that a dead or paused head
-- costs no more than that; the grant is announced as "g <ticket> <token> <pttl>" (to the ticket's
-- own instance: `tell`, lib/queue.lua). In quorum mode nodes would grant to different heads, so
-- the head is only told it is its turn ("t <ticket>"). A multiLock's waiter ('m', lib/multi.lua)
-- at the head is only told its turn: it must take all of its locks at once. MultiLock waiters
-- passed over (waiting for a holder, 'n') are told too, unless `quietPassed`: a hold ended, they
-- may be able to take all of their locks now. With nobody live in line the hash keeps its counter
-- for `keep` ms. A grant to a ticket of instance `here` (the caller's own, who hands it over from
-- the reply) is not announced; its waiter also learns of it from its next ticket refresh, should
-- the reply be lost.
local function handOver(lock, queue, tickets, channel, keep, grant, publish, quietPassed, here)
  local passed = {}
  local head = liveHead(queue, tickets, passed)
  if not quietPassed then
    for _, id in ipairs(passed) do tell(publish, channel, id, 't ' .. id) end
  end
  if head and grant == '1' and head.mode ~= 'm' then
    serveHead(queue, tickets, head.id)
    local pttl = math.min(head.ttl, head.deadline - nowMs())
    local token = found(lock, head.id, head.owner, head.id, pttl, redis.call('HGET', lock, 'c'))
    if not here or instanceOf(head.id) ~= here then
      tell(publish, channel, head.id, string.format('g %s %d %d', head.id, token, pttl))
    end
    return {1, head.id, token, pttl}
  end
  redis.call('PEXPIRE', lock, keep)
  if head then tell(publish, channel, head.id, 't ' .. head.id) end
  return {1}
end

-- A hold founded for `ticket` (a grant that crossed its waiter's departure, or the waiter's own
-- attempt whose answer was lost) goes back: its founding entry, which its waiter never used.
-- Others may have entered the hold by owner meanwhile (an explicit `owner`, '*'): the hold is
-- then theirs and stays. Running it again changes nothing. Returns whether the lock was freed.
local function giveBackFounding(lock, ticket)
  if redis.call('HEXISTS', lock, '@' .. ticket) == 0 then return false end
  if tonumber(redis.call('HGET', lock, 'n')) > 1 then
    redis.call('HDEL', lock, '@' .. ticket)
    redis.call('HINCRBY', lock, 'n', -1)
    return false
  end
  redis.call('HDEL', lock, 'o', 'h', 't', 'n', 'l', '@' .. ticket)
  return true
end
