-- raise-fence.lua: quorum mode's write-back of the token a majority chose to a node that issued a
-- smaller one, so that any later majority, which shares a node with this one, issues a larger one.
-- KEYS: hash
-- ARGV: chosen, keep
-- `hash` is a mutex's lock hash or a shared lock's state hash; `keep` the counter retention (ms).
-- Invariant: the counter only grows; no hold's own token is ever rewritten; a counter created here
-- starts at the chosen token and expires.
-- Returns 1.
local c = redis.call('HGET', hash, 'c')
if not c then
  redis.call('HSET', hash, 'c', chosen)
  if redis.call('PTTL', hash) < 0 then redis.call('PEXPIRE', hash, keep) end
elseif tonumber(c) < tonumber(chosen) then
  redis.call('HSET', hash, 'c', chosen)
end
return 1
