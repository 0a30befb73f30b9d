-- set-permits.lua: change a semaphore's stored limit on purpose; permits a raised limit frees go to
-- the queue's heads that now fit, as a release would.
-- KEYS: state, holders, entries, queue, tickets, channel
-- ARGV: limit, id, window, keep, grant, publish
-- `limit`: the new number of permits. `id`: this change's id; changes are remembered for `window`
-- ms (field P, "<id>=<until ms> ..."), so a replayed call changes nothing. `keep`, `grant`,
-- `publish`: as in release.lua.
-- Invariant: the stored limit is the one of the latest change (a replay changes nothing), marked
-- as set on purpose (field ps: callers created with another number adopt it instead of a
-- conflict); live holds keep their permits, so usage may stay above a lowered limit until they are
-- released; no ticket in line asks for more than the limit (those are taken out of line and told
-- to attempt, which refuses them); the heads that fit are served in order; every key keeps a PTTL.
-- Returns {1, previous limit (0: none), ticket, token, pttl, ...} set, with the grants made;
-- {2} set before (a replay).
--@include lib/clock.lua
--@include lib/counter.lua
--@include lib/queue.lua
--@include lib/shared.lua
local n, windowMs = tonumber(limit), tonumber(window)

-- The changes still remembered, this one's id looked for among them.
local log, replayed = {}, false
for seen, untilMs in string.gmatch(redis.call('HGET', state, 'P') or '', '([^%s=]+)=(%d+)') do
  if seen == id then replayed = true end
  if tonumber(untilMs) > nowMs() then log[#log + 1] = seen .. '=' .. untilMs end
end
if replayed then return {2} end
log[#log + 1] = string.format('%s=%d', id, nowMs() + windowMs)

prune(state, holders, entries)
local previous = tonumber(redis.call('HGET', state, 'p')) or 0
redis.call('HSET', state, 'p', limit, 'ps', '1', 'P', table.concat(log, ' '))

-- Tickets that ask for more than the new limit could never be served, and would hold everyone
-- behind them back: out of line, and told to attempt now (their attempt is refused).
for _, ticket in ipairs(redis.call('LRANGE', queue, 0, -1)) do
  local t = ticketOf(tickets, ticket)
  if t and t.mode == 's' and t.permits > n then
    redis.call('LREM', queue, 1, ticket)
    redis.call('HDEL', tickets, ticket)
    tell(publish, channel, ticket, 't ' .. ticket)
  end
end

local granted = handOverShared(state, holders, entries, queue, tickets, channel, grant, publish)
touch(state, holders, entries, tonumber(keep))
local reply = {1, previous}
for _, v in ipairs(granted) do reply[#reply + 1] = v end
return reply
