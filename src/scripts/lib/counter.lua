-- lib/counter.lua: fencing tokens. The counter is field `c` of the lock's own hash. A hash born
-- anew (first use, or after it expired) starts its counter at the server clock in microseconds,
-- above every token it issued before (as long as that clock does not step back by more than the
-- counter's retention). A token is never below 1, whatever the clock reads (a test double's may
-- read 0).
local function nextToken(hash)
  local token = redis.call('HINCRBY', hash, 'c', 1)
  if token == 1 then
    token = math.max(nowUs(), 1)
    redis.call('HSET', hash, 'c', token)
  end
  return token
end

-- What a "queued" reply tells a waiter of the counter (`c` as read, or nil): the lock's counter
-- while its hash lives; once the hash is gone (it expired with a hold, or with its retention), the
-- server clock in microseconds, which every token issued before is below and the counter of any
-- hash born later starts above (as long as that clock does not step back). So "a grant of token T
-- was made after exactly the replies whose counter is below T" holds across a counter's restart:
-- a 0 there would read as "before" a grant that expired unused before the reply ran.
local function counterNow(c)
  if c then return tonumber(c) end
  return math.max(nowUs(), 1)
end

-- The token after `c` (a counter read with the hash's other fields, or nil): the caller writes it
-- back as `c` in its own HSET, saving a command.
local function tokenAfter(c)
  if c then return tonumber(c) + 1 end
  return math.max(nowUs(), 1)
end
