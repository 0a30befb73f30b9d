-- read-leader.lua: who leads an election, and the value it proclaimed. Changes nothing.
-- KEYS: lock
-- ARGV:
-- Invariant: read-only; a value is reported only for the hold that proclaimed it.
-- Returns {} when nobody holds the lock; else {owner, hold, token, pttl, proclaimed, value}:
-- `token` is the one the leader proclaimed (its lease's) or else the hold's own on this node,
-- as text; `proclaimed` 1 with a value, 2 proclaimed without one, 0 not yet proclaimed. A
-- proclaimed reply goes on with `seq`, then the kept proclaim (proclaim.lua): its number (0: none
-- yet), 1 or 0 for a value or none, the value.
local st = redis.call('HMGET', lock, 'o', 'h', 't', 'vh', 'vt', 'v', 'c')
if not st[1] then return {} end
local pttl = redis.call('PTTL', lock)
-- The hold's own token: field t, or the counter when it has none (lib/exclusive.lua).
if st[4] ~= st[2] then return {st[1], st[2], st[3] or st[7], pttl, 0, ''} end
-- Proclaimed: one more element, the number of the proclaim it shows (`vs`, see proclaim.lua).
local k = redis.call('HMGET', lock, 'vs', 'ks', 'kv')
local seq = tonumber(k[1]) or 0
local ks = tonumber(k[2]) or 0
local khas = k[3] and 1 or 0
if st[6] then return {st[1], st[2], st[5], pttl, 1, st[6], seq, ks, khas, k[3] or ''} end
return {st[1], st[2], st[5], pttl, 2, '', seq, ks, khas, k[3] or ''}
