-- wake: tells the waiters of `n` to look, at commit: 'r:<head>\x1f<name>' on the channel, where
-- <head> is the ticket first in line (empty when none is live). Only the head can be granted a
-- mutex or a write next, so the others need not make an attempt; they still poll within the bound
-- (the head may be dead, its ticket not yet expired), and a grant to a reader or a semaphore holder
-- wakes the next head in turn. Ids never hold control characters, so \x1f ends the head.
CREATE OR REPLACE FUNCTION @schema.wake(n text)
RETURNS void
LANGUAGE plpgsql AS $fn$
BEGIN
  PERFORM pg_notify(@channel, 'r:' || coalesce((SELECT y.ticket FROM @schema.tickets y
      WHERE y.name = n AND y.expires_at > clock_timestamp() ORDER BY y.seq LIMIT 1), '') || chr(31) || n);
END
$fn$;
