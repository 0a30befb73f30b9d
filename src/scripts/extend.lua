-- extend.lua: set a held mutex's lease to ttl ms from now.
-- KEYS[1] holder hash | ARGV[1] owner, ARGV[2] fencing token, ARGV[3] ttl ms
-- Invariant: only the owner of this very acquisition moves the expiry; a lock is never left
-- without one.
-- Returns 1 extended, 0 gone, -1 held by another owner.
local lock = KEYS[1]
local holder = redis.call('HMGET', lock, 'o', 't')
if not holder[1] then return 0 end
if holder[1] ~= ARGV[1] or holder[2] ~= ARGV[2] then return -1 end
redis.call('PEXPIRE', lock, ARGV[3])
return 1
