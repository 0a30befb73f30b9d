-- is-held.lua: ask whether one acquisition still holds its lock; changes nothing.
-- KEYS[1] holder hash or zset of holders | ARGV[1] kind ('h' | 'z'), ARGV[2] owner or member,
-- ARGV[3] fencing token ('h' only)
-- Invariant: read-only; a zset member past its deadline counts as gone even before it is pruned.
-- Returns 1 held, 0 gone, -1 held by another owner.
local key, kind, who, token = KEYS[1], ARGV[1], ARGV[2], ARGV[3]
if kind == 'h' then
  local holder = redis.call('HMGET', key, 'o', 't')
  if not holder[1] then return 0 end
  if holder[1] ~= who or holder[2] ~= token then return -1 end
  return 1
end
local deadline = redis.call('ZSCORE', key, who)
if not deadline then return 0 end
local now = redis.call('TIME')
if tonumber(deadline) <= tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000) then return 0 end
return 1
