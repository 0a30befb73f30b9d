-- lib/counter.lua: fencing tokens. The counter is field `c` of the lock's own hash. A hash born
-- anew (first use, or after it expired) starts its counter at the server clock in microseconds,
-- above every token it issued before, and records that birth in `b`: a hold whose token is at
-- least `b` has lived in this hash without interruption.
local function nextToken(hash)
  local token = redis.call('HINCRBY', hash, 'c', 1)
  if token == 1 then
    token = nowUs()
    redis.call('HSET', hash, 'c', token, 'b', token)
  end
  return token
end
