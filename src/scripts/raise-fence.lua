-- raise-fence.lua: quorum mode's write-back of the token chosen by a majority.
-- KEYS[1] holder hash, KEYS[2] fencing counter | ARGV[1] owner, ARGV[2] node's own token,
-- ARGV[3] chosen token, ARGV[4] counter retention ms
-- Invariant: the counter only ever grows, so any later majority (which shares a node with this
-- one) issues a larger token; the hash's token follows only if this very acquisition holds it.
-- Returns 1 if this node now holds the lock under the chosen token, 0 if not.
local lock, fence = KEYS[1], KEYS[2]
local owner, mine, chosen, keep = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
-- Tokens are decimal integers beyond a double's precision: compare by length, then as text.
local function below(a, b) return #a < #b or (#a == #b and a < b) end
if below(chosen, mine) then return 0 end
local current = redis.call('GET', fence)
if (not current) or below(current, chosen) then
  redis.call('SET', fence, chosen, 'PX', keep)
end
local holder = redis.call('HMGET', lock, 'o', 't')
if holder[1] ~= owner or (holder[2] ~= mine and holder[2] ~= chosen) then return 0 end
redis.call('HSET', lock, 't', chosen)
return 1
