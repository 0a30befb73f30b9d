-- release-shared.lua: give back one entry of a semaphore or read-write lock hold; the last one
-- frees its place and grants the lock to the queue's heads that now fit.
-- KEYS: state, holders, entries, queue, tickets, channel
-- ARGV: hold, entry, window, keep, grant, publish
-- `hold` '*': whichever hold has this entry (abandoning a join by owner whose answer was lost).
-- `window`: how long the released hold's tombstone answers replays (ms). `keep`, `grant`,
-- `publish`: as in release.lua.
-- Invariant: only this hold's own entries are removed, each at most once; a replayed release
-- changes nothing and answers "released before" while the tombstone lasts; freed places go to the
-- queue in order.
-- Returns {2, entries left}; {1, ticket, token, pttl, ...} freed, with the grants made;
-- {3} released before (a replay); {0} gone.
--@include lib/clock.lua
--@include lib/counter.lua
--@include lib/queue.lua
--@include lib/shared.lua
prune(state, holders, entries)
if hold == '*' then hold = redis.call('HGET', entries, entry) or '' end
local score = tonumber(redis.call('ZSCORE', holders, hold))
if not score then return {0} end
if score < 0 then return {3} end
local r = recordOf(state, hold)
if r.mode == 'w' then
  if redis.call('HGET', entries, entry) ~= hold then return {2, r.n} end
  redis.call('HDEL', entries, entry)
end
if r.n > 1 then
  r.n = r.n - 1
  writeRecord(state, r)
  return {2, r.n}
end
redis.call('ZADD', holders, -(nowMs() + tonumber(window)), hold)
forget(state, entries, r)
local granted = handOverShared(state, holders, entries, queue, tickets, channel, grant, publish)
touch(state, holders, entries, tonumber(keep))
local reply = {1}
for _, v in ipairs(granted) do reply[#reply + 1] = v end
return reply
