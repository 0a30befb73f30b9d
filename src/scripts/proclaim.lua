-- proclaim.lua: an election's leader stores the value it stands for, and announces itself.
-- KEYS: lock, channel
-- ARGV: hold, token, value, has, publish, seq
-- `lock` is the election's mutex hash. `hold` is the leader's hold id and `token` its fencing token
-- (in quorum mode the one a majority chose, which this node's own may be below). `has` '1' stores
-- `value`, '0' stores none. `publish`: PUBLISH, or SPUBLISH in a Cluster. `seq` numbers the
-- hold's proclaims (1, 2, ...) in the order its leader made them: a node stores one only if it is
-- no older than the one it has (`vs`), so in quorum mode a read takes the newest a majority shows
-- and a late or resent older proclaim never overwrites a newer value.
-- Invariant: only the hold that holds the lock writes; its value is recorded with its hold id
-- (`vh`) and token (`vt`), so no later hold ever shows an earlier hold's value; the hash keeps
-- its hold's PTTL; running it again changes nothing more (it announces again, harmlessly).
-- Returns 1 stored and announced ("e" on the channel), 0 gone, -1 held by another hold.
local h = redis.call('HGET', lock, 'h')
if h ~= hold then
  if h then return -1 end
  return 0
end
local n = tonumber(seq)
if redis.call('HGET', lock, 'vh') == hold and n < (tonumber(redis.call('HGET', lock, 'vs')) or 0) then return 1 end
redis.call('HSET', lock, 'vh', hold, 'vt', token, 'vs', seq)
if has == '1' then redis.call('HSET', lock, 'v', value) else redis.call('HDEL', lock, 'v') end
redis.call(publish, channel, 'e')
return 1
