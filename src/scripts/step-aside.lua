-- step-aside.lua: quorum mode: a waiter whose attempt founded a hold on this node without winning
-- a majority gives that hold back and keeps its place in the ordered line.
-- KEYS: lock, queue, tickets, channel
-- ARGV: ticket, order, ticketLease, ttl, owner, keep, publish
-- `ticket` is the waiter's ticket (= the id of the hold its attempt founded); `order` its place in
-- line (lib/queue.lua, standOrdered); `ticketLease` and `ttl` ms, `owner` as its acquire sent them;
-- `keep` how long a freed hash keeps its counter (ms); `publish` PUBLISH or SPUBLISH.
-- Invariant: afterwards the ticket holds no hold founded for it on this node (unless others entered
-- that hold by owner: then only its founding entry goes) and stands in line at its ordered place;
-- a freed lock's head (most often this very ticket) is told its turn; running it again changes
-- nothing but the ticket's deadline.
-- Returns 2 gave a hold back, 1 stands in line.
--@include lib/clock.lua
--@include lib/counter.lua
--@include lib/queue.lua
--@include lib/exclusive.lua
local gave = 1
local freed = false
if redis.call('HGET', lock, 'h') == ticket then
  freed = giveBackFounding(lock, ticket)
  gave = 2
end
standOrdered(queue, tickets, ticket, tonumber(order), tonumber(ticketLease), tonumber(ttl), 1, 'x', owner)
if freed then handOver(lock, queue, tickets, channel, tonumber(keep), '0', publish) end
return gave
