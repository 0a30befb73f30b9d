-- keepalive.lua: the watchdog's one call per node and tick (per slot in a Cluster): renews the
-- holds that are due and refreshes the tickets of the waiters that are due.
-- KEYS: ...keys
-- ARGV: ...items
-- Each item is a kind followed by its arguments, and takes the next KEYS in order:
--   'x' hold ttl                          KEYS lock                                a mutex hold
--   'X' hold ttl window                   KEYS lock                                an extend of one
--   's' hold ttl                          KEYS state holders entries               a shared hold
--   'S' hold ttl                          KEYS state holders entries               an extend of one
--   'q' ticket lease ttl owner            KEYS lock queue tickets tombstone        a mutex waiter
--   'o' ticket lease ttl owner            KEYS lock queue tickets tombstone        a mutex waiter in
--                                                                                  quorum mode's ordered line
--   'Q' ticket lease ttl owner mode n     KEYS state holders entries queue tickets a shared waiter
--   'm' ticket lease ttl owner n          KEYS (lock queue tickets tombstone) x n  a multi-key waiter
-- (`tombstone`: the one the ticket's hold leaves when it is released, release.lua.)
-- Invariant: a hold is renewed only while that very hold is live, never revived, and its life is
-- only ever lengthened (never below what any sharer was promised), except by an extend ('X', 'S')
-- of a hold of one entry, which sets it to exactly `ttl` (nobody else was promised anything: a
-- fixed lease shortened frees the lock when its lease says so); a ticket keeps its place while
-- refreshed (a lapsed one stands again at the back, unless it asks for more permits than the
-- semaphore has: it is told to attempt, which refuses it), but a ticket whose hold was granted and
-- given back never stands again (a late refresh would put a ghost at the head, which the next
-- release would grant to); an ordered line's ticket ('o') is refreshed where it stands and never
-- put back by a refresh (only its waiter's attempts place it: a refresh that crossed the win of its
-- waiter would leave a ghost ticket at its early place); nothing is founded here.
-- Returns one reply per item. Holds: 1 renewed, 0 gone, -1 held by another hold. Tickets:
-- {1, token, pttl} already granted; {2} the lock is free and it is the head: attempt now;
-- {0, position, counter} waiting (position 0 at the head, 1 behind it; counter: the lock's counter now, as in acquire.lua); {3} its hold was granted and
-- given back already (a late refresh: nothing done). A multi-key waiter is never granted: {2}
-- when every lock is free with no line held ahead of it (or when it held the lines back while a
-- lock was taken: its attempt stands aside), {0, position, 0} otherwise (position -1, not
-- standing again, while a hold of its own attempt is on its locks).
--@include lib/clock.lua
--@include lib/counter.lua
--@include lib/queue.lua
--@include lib/shared.lua
--@include lib/exclusive.lua
--@include lib/multi.lua
local out, k, i = {}, 1, 1
local function key()
  local name = KEYS[k]
  k = k + 1
  return name
end
while i <= #ARGV do
  local kind = ARGV[i]
  if kind == 'x' or kind == 'X' then
    local lock, hold, ttl = key(), ARGV[i + 1], ARGV[i + 2]
    local st = redis.call('HMGET', lock, 'h', 'n', 't', 'c', 'b')
    local h = st[1]
    if h == hold then
      -- Only ever lengthened: processes that share a hold (an explicit owner) each trust it for the
      -- ttl they asked for, so a shorter request must not cut another's trust short. A lease that
      -- asked for less trusts less: that is its own validity, not the key's. An extend of a hold
      -- with one entry has no sharer to cut short; a life cut below the replay window ends the
      -- hash's epoch early, so the holds before this one are recorded first (lib/exclusive.lua).
      if kind == 'X' and tonumber(st[2] or 1) == 1 then
        local token = tonumber(st[3] or st[4])
        if st[5] then keepEpoch(releasedOf(lock), tonumber(st[5]), token - 1, tonumber(ttl), tonumber(ARGV[i + 3])) end
        redis.call('PEXPIRE', lock, ttl)
      elseif redis.call('PTTL', lock) < tonumber(ttl) then redis.call('PEXPIRE', lock, ttl) end
      out[#out + 1] = 1
    elseif h then out[#out + 1] = -1
    else out[#out + 1] = 0 end
    i = i + (kind == 'X' and 4 or 3)
  elseif kind == 's' or kind == 'S' then
    local state, holders, entries, hold, ttl = key(), key(), key(), ARGV[i + 1], tonumber(ARGV[i + 2])
    local score = tonumber(redis.call('ZSCORE', holders, hold))
    if score and score > nowMs() then
      local alone = kind == 'S' and (recordOf(state, hold) or {}).n == 1
      if alone or score < nowMs() + ttl then redis.call('ZADD', holders, 'XX', nowMs() + ttl, hold) end
      for _, name in ipairs({state, holders, entries}) do
        local pttl = redis.call('PTTL', name)
        if pttl >= 0 and pttl < ttl then redis.call('PEXPIRE', name, ttl) end
      end
      out[#out + 1] = 1
    else out[#out + 1] = 0 end
    i = i + 3
  elseif kind == 'q' or kind == 'o' then
    local lock, queue, tickets, tombstone = key(), key(), key(), key()
    local ticket, lease, ttl, owner = ARGV[i + 1], tonumber(ARGV[i + 2]), tonumber(ARGV[i + 3]), ARGV[i + 4]
    local st = redis.call('HMGET', lock, 'h', 't', 'c')
    if st[1] == ticket then
      out[#out + 1] = {1, tonumber(st[2] or st[3]), redis.call('PTTL', lock)}
    elseif redis.call('EXISTS', tombstone) == 1 then
      out[#out + 1] = {3}
    else
      pruneHead(queue, tickets)
      local position = -1
      if kind == 'q' or redis.call('HEXISTS', tickets, ticket) == 1 then position = stand(queue, tickets, ticket, lease, ttl, 1, 'x', owner) end
      -- Its turn: the lock is free and it heads the line (multiLock waiters passed over stand aside).
      local head = not st[1] and liveHead(queue, tickets)
      if head and head.id == ticket then out[#out + 1] = {2} else out[#out + 1] = {0, position, counterNow(st[3])} end
    end
    i = i + 5
  elseif kind == 'm' then
    local ticket, lease, ttl, owner, n = ARGV[i + 1], tonumber(ARGV[i + 2]), tonumber(ARGV[i + 3]), ARGV[i + 4], tonumber(ARGV[i + 5])
    local locks, mine, held = {}, false, false
    for j = 1, n do
      local l = { lock = key(), queue = key(), tickets = key(), tombstone = key() }
      locks[j] = l
      pruneHead(l.queue, l.tickets)
      local h = redis.call('HGET', l.lock, 'h')
      if h == ticket then mine = true elseif h then held = true end
    end
    local done = false
    for _, l in ipairs(locks) do if redis.call('EXISTS', l.tombstone) == 1 then done = true end end
    if mine then out[#out + 1] = {0, -1, 0}
    elseif done then out[#out + 1] = {3}
    else
      -- Waiting for a holder, it stands aside ('n'). Holding the lines back ('m') while one of its
      -- locks was taken meanwhile, it keeps its mode and is told to attempt: the attempt stands
      -- aside and hands on the locks it held back (which needs what only acquire-multi is given).
      local was = modeOf(locks, ticket)
      local stale = held and was == 'm'
      local position = standAll(locks, ticket, lease, ttl, owner, (held and not stale) and 'n' or 'm')
      -- Whether a line is held ahead of it matters only while every lock is free.
      local ahead = false
      if not held and not stale then
        for _, l in ipairs(locks) do if not ahead and lineAhead(l, ticket) then ahead = true end end
      end
      if stale or (not held and not ahead) then out[#out + 1] = {2} else out[#out + 1] = {0, position, 0} end
    end
    i = i + 6
  else
    local state, holders, entries, queue, tickets = key(), key(), key(), key(), key()
    local ticket, lease, ttl, owner = ARGV[i + 1], tonumber(ARGV[i + 2]), tonumber(ARGV[i + 3]), ARGV[i + 4]
    local mode, take = ARGV[i + 5], tonumber(ARGV[i + 6])
    prune(state, holders, entries)
    local score = tonumber(redis.call('ZSCORE', holders, ticket))
    local stored = mode == 's' and tonumber(redis.call('HGET', state, 'p'))
    if score and score > 0 then
      out[#out + 1] = {1, recordOf(state, ticket).token, score - nowMs()}
    elseif score then
      -- A tombstone: granted and given back.
      out[#out + 1] = {3}
    elseif stored and take > stored then
      -- The limit was lowered under this request: not back in line; its attempt is refused.
      out[#out + 1] = {2}
    else
      liveHead(queue, tickets)
      local position = stand(queue, tickets, ticket, lease, ttl, take, mode, owner)
      if position == 0 and fits(state, holders, mode, take, owner) then out[#out + 1] = {2}
      else out[#out + 1] = {0, position, counterNow(redis.call('HGET', state, 'c'))} end
    end
    i = i + 7
  end
end
return out
