-- count-down.lua: one count down of a latch, counted once.
-- KEYS: latch, channel
-- ARGV: id, count, ttl, publish, ...withIds
-- `latch` hash: n the count it was made with, c what is left, and `d:<id>` for each count down
-- counted so far. The first call (or a count down after it expired) makes it with `count`.
-- `id` names this call: a replay of it (a reply lost, the client sent it again) finds its field.
-- `publish`: PUBLISH, or SPUBLISH in a Cluster. `withIds` '1' (quorum mode): the reply also lists
-- the ids this node has counted while it is not at 0 (a quorum counts distinct ids over a majority).
-- Invariant: each id counts at most once; c never goes below 0; every call sets the hash's PTTL to
-- `ttl`; the count down that reaches 0 announces it ("0" on the channel) and leaves only n and c
-- (no id is needed any more: nothing counts after 0); a latch made with another count is left
-- alone.
-- Returns {1, left[, ids...]} counted; {2, left[, ids...]} a replay, or already at 0 (nothing
-- counted); {-2, its count} a latch of another count.
local function reply(code, left)
  local out = {code, left}
  if ARGV[5] == '1' and left > 0 then
    for _, field in ipairs(redis.call('HKEYS', latch)) do
      if string.sub(field, 1, 2) == 'd:' then out[#out + 1] = string.sub(field, 3) end
    end
  end
  return out
end
local st = redis.call('HMGET', latch, 'n', 'c', 'd:' .. id)
if st[1] and st[1] ~= count then return {-2, tonumber(st[1])} end
local left = tonumber(st[2] or count)
if st[3] or left == 0 then
  redis.call('PEXPIRE', latch, ttl)
  return reply(2, left)
end
left = left - 1
if left == 0 then
  redis.call('DEL', latch)
  redis.call('HSET', latch, 'n', count, 'c', 0)
  redis.call(publish, channel, '0')
else
  redis.call('HSET', latch, 'n', count, 'c', left, 'd:' .. id, 1)
end
redis.call('PEXPIRE', latch, ttl)
return reply(1, left)
