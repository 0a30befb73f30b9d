-- check.lua: whether one hold still holds its lock. Changes nothing.
-- KEYS: key
-- ARGV: kind, hold
-- `key` is a mutex's lock hash (kind 'x') or a shared lock's holders zset (kind 's').
-- Invariant: read-only; a shared hold past its deadline counts as gone even before it is pruned.
-- Returns 1 held, 0 gone, -1 held by another hold.
--@include lib/clock.lua
if kind == 'x' then
  local h = redis.call('HGET', key, 'h')
  if h == hold then return 1 end
  if h then return -1 end
  return 0
end
local score = tonumber(redis.call('ZSCORE', key, hold))
if score and score > nowMs() then return 1 end
return 0
