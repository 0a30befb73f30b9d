-- read-latch.lua: what is left of a latch. Changes nothing.
-- KEYS: latch
-- ARGV: count
-- Invariant: read-only; a latch Redis does not have (never counted down, or expired) has all of
-- `count` left.
-- Returns {1, left}; {-2, its count} for a latch made with another count.
local st = redis.call('HMGET', latch, 'n', 'c')
if st[1] and st[1] ~= count then return {-2, tonumber(st[1])} end
return {1, tonumber(st[2] or count)}
