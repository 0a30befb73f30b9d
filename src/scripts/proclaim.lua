-- proclaim.lua: an election's leader stores the value it stands for, and announces itself.
-- KEYS: lock, channel
-- ARGV: hold, token, value, has, publish, seq, kept
-- `lock` is the election's mutex hash. `hold` is the leader's hold id and `token` its fencing token
-- (in quorum mode the one a majority chose, which this node's own may be below). `has` '1' stores
-- `value`, '0' stores none. `publish`: PUBLISH, or SPUBLISH in a Cluster. `seq` numbers the
-- hold's proclaims (1, 2, ...) in the order its leader made them: a node stores one only if it is
-- no older than the one it has (`vs`), so in quorum mode a read takes the newest a majority shows
-- and a late or resent older proclaim never overwrites a newer value. `kept` '1': this proclaim
-- is known to have reached a majority (always so on one node; in quorum mode the store sends it
-- again with '1' once a majority stored it): it becomes the hold's *kept* proclaim (`ks`, `kv`)
-- unless a newer one is, and only a kept proclaim is named by a read (docs/quorum.md, "Elections").
-- It is announced then, not before.
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
local st = redis.call('HMGET', lock, 'vh', 'vs', 'ks')
local mine = st[1] == hold
if mine and n < (tonumber(st[2]) or 0) then
  -- An older proclaim, late or resent: it may still become the kept one.
  if kept ~= '1' or n <= (tonumber(st[3]) or 0) then return 1 end
else
  redis.call('HSET', lock, 'vh', hold, 'vt', token, 'vs', seq)
  if has == '1' then redis.call('HSET', lock, 'v', value) else redis.call('HDEL', lock, 'v') end
  if not mine then redis.call('HDEL', lock, 'ks', 'kv') end
  if kept ~= '1' then return 1 end
end
redis.call('HSET', lock, 'ks', seq)
if has == '1' then redis.call('HSET', lock, 'kv', value) else redis.call('HDEL', lock, 'kv') end
redis.call(publish, channel, 'e')
return 1
