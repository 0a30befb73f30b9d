-- lib/exclusive.lua: a mutex's hold lives in the lock hash: o owner, h hold id, and only where
-- they differ from what an uncontended hold needs: t the hold's token (absent: the counter c,
-- which is the last token issued, so the live hold's), n the entry count (absent: 1), and
-- `@<entry>` per re-entry (2). The founding entry's id is the hold's: it is an entry while `h`
-- names it and `@<hold>` is not '0' (written when it is given back before the hold's other
-- entries). `b` is the counter's birth (the first token of this hash's life, written with the
-- hash), `q` marks a hold founded for a ticket that stood in line (its release leaves a tombstone
-- that the ticket's late refresh finds). The hash's PTTL is the hold's lease, so the hold and the
-- hash expire together.

-- The lock's `released` key (its recorded epochs, and the prefix of its tombstones) from the lock
-- hash's name: `<base>:lock` and `<base>:released` share the base, and so the slot (src/keys.ts).
local function releasedOf(lock)
  return string.sub(lock, 1, -5) .. 'released'
end

-- Whether `entry` is an entry of the hold `h`, given its `@<entry>` field `at` (false if none).
local function hasEntry(h, entry, at)
  if at then return at ~= '0' end
  return h == entry
end

-- The hash's epoch is about to end early: it gets a PTTL of `pttl` ms, below the replay window,
-- while holds of its epoch were released less than a window ago (their replays find the hash's
-- birth <= their token <= its counter: "released"). The epoch [b, c] is recorded in `released`
-- (a zset: member b, score c) for the window, so those replays still find it once the hash is gone.
local function keepEpoch(released, b, c, pttl, window)
  if not b or not c or pttl >= window then return end
  redis.call('ZADD', released, c, b)
  redis.call('PEXPIRE', released, window)
end

-- Whether a hold of token `token` ended in a recorded epoch of `released` (not by expiry).
local function inEpochs(released, token)
  local r = redis.call('ZRANGEBYSCORE', released, token, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  return r[1] ~= nil and tonumber(r[1]) <= token
end

-- Founds a hold. `c` and `b`: the counter and the birth as read by the caller (false if none);
-- `mark` '1': founded for a ticket that stood in line. `window`, `released`: see keepEpoch (nil:
-- the hold's PTTL is at least the window).
local function found(lock, hold, owner, entry, ttl, c, b, mark, released, window)
  local token = tokenAfter(c)
  if released then keepEpoch(released, b and tonumber(b), c and tonumber(c), ttl, window) end
  -- One HSET: the birth only with a new hash, the mark only for a hold served from the line.
  local birth = c and 'c' or 'b'
  if mark == '1' then
    redis.call('HSET', lock, 'c', token, birth, token, 'o', owner, 'h', hold, 'q', 1)
  else
    redis.call('HSET', lock, 'c', token, birth, token, 'o', owner, 'h', hold)
  end
  if entry ~= hold then redis.call('HSET', lock, '@' .. entry, 1) end
  redis.call('PEXPIRE', lock, ttl)
  return token
end

-- One more entry on the live hold (`n` its entry count as read, false if none).
local function addEntry(lock, entry, n)
  redis.call('HSET', lock, '@' .. entry, 2, 'n', tonumber(n or 1) + 1)
end

-- One entry of a hold of `n` (> 1) entries given back.
local function dropEntry(lock, h, entry, n)
  if entry == h then redis.call('HSET', lock, '@' .. entry, 0, 'n', n - 1)
  else
    redis.call('HDEL', lock, '@' .. entry)
    redis.call('HSET', lock, 'n', n - 1)
  end
end

-- The hold `h` ends (its last entry `entry` given back): its fields go, the counter and birth stay.
local function endHold(lock, h, entry)
  redis.call('HDEL', lock, 'o', 'h', 't', 'n', 'l', 'q', '@' .. h, '@' .. entry)
end

-- The lock was just freed. In single-node mode (`grant` '1') it goes to the live head of the
-- queue, founded with a PTTL of what is left of that ticket's lease, so that a dead or paused head
-- costs no more than that; the grant is announced as "g <ticket> <token> <pttl>" (to the ticket's
-- own instance: `tell`, lib/queue.lua). In quorum mode nodes would grant to different heads, so
-- the head is only told it is its turn ("t <ticket>"). A multiLock's waiter ('m', lib/multi.lua)
-- at the head is only told its turn: it must take all of its locks at once. The first
-- PASSED_TOLD multiLock waiters passed over (waiting for a holder, 'n') are told too, unless
-- `quietPassed`: a hold ended, they may be able to take all of their locks now. Not all of them:
-- a line of a thousand such waiters would be told a thousand times per release, and each would
-- attempt, for one of them to take the lock (the square of the line per drained line); those
-- further back attempt when their ticket refresh finds every lock of theirs free (keepalive.lua). With nobody live in line the hash keeps its counter
-- for `keep` ms. A grant to a ticket of instance `here` (the caller's own, who hands it over from
-- the reply) is not announced; its waiter also learns of it from its next ticket refresh, should
-- the reply be lost. A grant's short PTTL would end the hash's epoch early: it is recorded in
-- `released` (default: the lock's) for `window` ms (keepEpoch; default `keep`, which is longer).
local function handOver(lock, queue, tickets, channel, keep, grant, publish, quietPassed, here, released, window)
  local passed = {}
  local head = liveHead(queue, tickets, passed)
  if not quietPassed then
    for _, id in ipairs(passed) do tell(publish, channel, id, 't ' .. id) end
  end
  if head and grant == '1' and head.mode ~= 'm' then
    serveHead(queue, tickets, head.id)
    local pttl = math.min(head.ttl, head.deadline - nowMs())
    local st = redis.call('HMGET', lock, 'c', 'b')
    local token = found(lock, head.id, head.owner, head.id, pttl, st[1], st[2], '1', released or releasedOf(lock), window or keep)
    if not here or instanceOf(head.id) ~= here then
      tell(publish, channel, head.id, string.format('g %s %d %d', head.id, token, pttl))
    end
    return {1, head.id, token, pttl}
  end
  redis.call('PEXPIRE', lock, keep)
  if head then tell(publish, channel, head.id, 't ' .. head.id) end
  return {1}
end

-- A hold founded for `ticket` (a grant that crossed its waiter's departure, or the waiter's own
-- attempt whose answer was lost) goes back: its founding entry, which its waiter never used.
-- Others may have entered the hold by owner meanwhile (an explicit `owner`, '*'): the hold is
-- then theirs and stays. Running it again changes nothing. Returns whether the lock was freed.
local function giveBackFounding(lock, ticket)
  local st = redis.call('HMGET', lock, 'h', 'n', '@' .. ticket)
  if not hasEntry(st[1], ticket, st[3]) then return false end
  local n = tonumber(st[2] or 1)
  if n > 1 then
    dropEntry(lock, st[1], ticket, n)
    return false
  end
  endHold(lock, ticket, ticket)
  return true
end
