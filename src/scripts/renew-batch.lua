-- renew-batch.lua: the watchdog's one call per node (per slot in a Cluster) and tick.
-- KEYS[i] a lease's key: a holder hash, or a zset of holders (semaphores, read locks)
-- ARGV[4i-3] kind ('h' hash | 'z' zset member), ARGV[4i-2] owner or member,
-- ARGV[4i-1] fencing token ('h' only), ARGV[4i] ttl ms
-- Invariant: a lease is renewed only while its own acquisition still holds it; a lapsed
-- one is never revived; every key touched keeps a PTTL of at least its lease.
-- Returns one code per key: 1 renewed, 0 gone, -1 held by another owner.
local now = redis.call('TIME')
local nowMs = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local out = {}
for i, key in ipairs(KEYS) do
  local kind, who, token, ttl = ARGV[4*i-3], ARGV[4*i-2], ARGV[4*i-1], tonumber(ARGV[4*i])
  if kind == 'h' then
    local holder = redis.call('HMGET', key, 'o', 't')
    if not holder[1] then out[i] = 0
    elseif holder[1] ~= who or holder[2] ~= token then out[i] = -1
    else redis.call('PEXPIRE', key, ttl); out[i] = 1 end
  else
    local deadline = redis.call('ZSCORE', key, who)
    if (not deadline) or tonumber(deadline) <= nowMs then out[i] = 0
    else
      redis.call('ZADD', key, 'XX', nowMs + ttl, who)
      if redis.call('PTTL', key) < ttl then redis.call('PEXPIRE', key, ttl) end
      out[i] = 1
    end
  end
end
return out
