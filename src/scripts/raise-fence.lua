-- raise-fence.lua: quorum mode's write-back of the token a majority chose to a node that issued a
-- smaller one, so that any later majority, which shares a node with this one, issues a larger one.
-- KEYS: hash
-- ARGV: chosen, keep, kind, hold
-- `hash` is a mutex's lock hash (`kind` 'x') or a shared lock's state hash ('s'); `keep` the
-- counter retention (ms); `hold` the hold the token was chosen for.
-- Invariant: the counter only grows; no hold's own token is ever rewritten: the chosen one is
-- recorded beside it (l, or l:<hold>) while the hold lives here, so a process that joins the hold
-- by owner reads the same lease token from any majority; a counter created here starts at the
-- chosen token and expires.
-- Returns 1.
local c = redis.call('HGET', hash, 'c')
if not c then
  -- A counter born here: its epoch (lib/exclusive.lua) starts at the chosen token.
  if kind == 'x' then redis.call('HSET', hash, 'c', chosen, 'b', chosen) else redis.call('HSET', hash, 'c', chosen) end
  if redis.call('PTTL', hash) < 0 then redis.call('PEXPIRE', hash, keep) end
elseif tonumber(c) < tonumber(chosen) then
  -- A mutex hold without a `t` has the counter as its token: it keeps it, written out first.
  if kind == 'x' and redis.call('HEXISTS', hash, 'h') == 1 and redis.call('HEXISTS', hash, 't') == 0 then
    redis.call('HSET', hash, 't', c)
  end
  redis.call('HSET', hash, 'c', chosen)
end
if kind == 'x' then
  if redis.call('HGET', hash, 'h') == hold then redis.call('HSET', hash, 'l', chosen) end
elseif redis.call('HEXISTS', hash, 's:' .. hold) == 1 then
  redis.call('HSET', hash, 'l:' .. hold, chosen)
end
return 1
