-- read-latch.lua: what is left of a latch. Changes nothing.
-- KEYS: latch
-- ARGV: count, ...withIds
-- `withIds` '1' (quorum mode): the reply also lists the ids this node has counted, while not at 0.
-- Invariant: read-only; a latch Redis does not have (never counted down, or expired) has all of
-- `count` left.
-- Returns {1, left[, ids...]}; {-2, its count} for a latch made with another count.
local st = redis.call('HMGET', latch, 'n', 'c')
if st[1] and st[1] ~= count then return {-2, tonumber(st[1])} end
local out = {1, tonumber(st[2] or count)}
if ARGV[2] == '1' and out[2] > 0 then
  for _, field in ipairs(redis.call('HKEYS', latch)) do
    if string.sub(field, 1, 2) == 'd:' then out[#out + 1] = string.sub(field, 3) end
  end
end
return out
