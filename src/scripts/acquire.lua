-- acquire.lua: take or re-enter a mutex (or a read-write lock's write side), or queue for it.
-- KEYS[1] holder hash {o=owner, n=entries, t=token}, KEYS[2] fencing counter,
-- KEYS[3] readers zset (write locks), KEYS[4] writer-waiting mark (write locks),
-- KEYS[5] queue list of tickets, KEYS[6] zset ticket -> deadline (server ms)
-- ARGV[1] owner, ARGV[2] ttl ms, ARGV[3] counter retention ms, ARGV[4] writer mark ms (0: mutex),
-- ARGV[5] ticket ('' for none), ARGV[6] ticket lease ms, ARGV[7] '1' to keep the ticket queued
-- (at the back) after taking the lock, because more local waiters stand behind it
-- Invariant: the holder hash never exists without a PTTL; only ARGV[1]'s entry count changes;
-- a first entry takes a token greater than any this key has issued; a free lock goes to the
-- caller only if nobody is queued or the caller's ticket is the live head of the queue, so a
-- releaser cannot barge back in ahead of those it woke; a ticket not refreshed within its
-- lease is dropped; every key written has a PTTL.
-- Returns {1, token} first entry, {2, token} re-entry, {0, ms to wait at most, position} busy.
local lock, fence, readers, mark, queue, deadlines = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local owner, ttl, keep, markMs = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local ticket, ticketMs, requeue = ARGV[5], tonumber(ARGV[6]), ARGV[7] == '1'

local holder = redis.call('HGET', lock, 'o')
if holder == owner then
  redis.call('HINCRBY', lock, 'n', 1)
  -- A re-entry with a shorter ttl must not shorten the outer entry's lease.
  if redis.call('PTTL', lock) < ttl then redis.call('PEXPIRE', lock, ttl) end
  return {2, tonumber(redis.call('HGET', lock, 't'))}
end

-- The server clock is read only on the paths that need it (the uncontended one does not).
local now, nowMs
local function clock()
  if not nowMs then
    now = redis.call('TIME')
    nowMs = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
  end
  return nowMs
end

local function enqueue(waitMs)
  if ticket == '' then return {0, waitMs, -1} end
  if not redis.call('ZSCORE', deadlines, ticket) then redis.call('RPUSH', queue, ticket) end
  redis.call('ZADD', deadlines, clock() + ticketMs, ticket)
  -- The queue outlives the newest ticket's lease, then vanishes on its own.
  redis.call('PEXPIRE', queue, ticketMs * 2)
  redis.call('PEXPIRE', deadlines, ticketMs * 2)
  return {0, waitMs, redis.call('LPOS', queue, ticket)}
end

if holder then
  if markMs > 0 then redis.call('SET', mark, owner, 'PX', markMs) end
  return enqueue(redis.call('PTTL', lock))
end

if markMs > 0 then
  -- Readers whose lease ran out no longer count; live ones keep a writer out.
  redis.call('ZREMRANGEBYSCORE', readers, '-inf', clock())
  local first = redis.call('ZRANGE', readers, 0, 0, 'WITHSCORES')
  if first[2] then
    redis.call('SET', mark, owner, 'PX', markMs)
    return enqueue(tonumber(first[2]) - clock())
  end
end

-- Drop vanished waiters from the head, so they cannot hold the lock back past their lease.
local head = redis.call('LINDEX', queue, 0)
while head do
  local deadline = redis.call('ZSCORE', deadlines, head)
  if deadline and tonumber(deadline) > clock() then break end
  redis.call('LPOP', queue)
  redis.call('ZREM', deadlines, head)
  head = redis.call('LINDEX', queue, 0)
end
if head and head ~= ticket then return enqueue(0) end

if head then
  redis.call('LPOP', queue)
  if requeue then
    redis.call('RPUSH', queue, ticket)
    redis.call('ZADD', deadlines, clock() + ticketMs, ticket)
  else
    redis.call('ZREM', deadlines, ticket)
  end
elseif requeue and ticket ~= '' then
  enqueue(0)
end
if markMs > 0 then redis.call('DEL', mark) end

local token = redis.call('INCR', fence)
if token == 1 then
  -- A counter that expired (or never existed) restarts from the server clock in microseconds,
  -- which is above every token it handed out before, so tokens never go backwards.
  clock()
  redis.call('SET', fence, now[1] .. string.format('%06d', tonumber(now[2])))
  token = redis.call('INCR', fence)
end
redis.call('PEXPIRE', fence, keep)
redis.call('HSET', lock, 'o', owner, 'n', 1, 't', token)
redis.call('PEXPIRE', lock, ttl)
return {1, token}
