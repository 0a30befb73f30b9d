-- acquire: one attempt at the names `p_names` (sorted, distinct) for the hold `p_hold`, as the
-- entry `p_entry`. `p_reentry`: 'fresh' founds a hold; 'hold' enters the hold `p_join`; 'owner'
-- enters a hold of `p_owner` in the same mode, or founds one when there is none.
-- Modes: 'x' mutex, 'w' write, 'r' read, 's' semaphore (`p_permits` of `p_limit`).
-- A fresh attempt is granted when it is compatible with every live hold of each name and with
-- every live ticket ahead of its own (all tickets when it has none): 'x'/'w' with nothing, 'r'
-- with readers only, 's' with semaphore claims whose permits leave room for its own. So a waiter
-- never jumps the queue, and readers (or small permit counts) ahead of it that could go do not
-- block it. A refused attempt with `p_ticket_ms` > 0 takes (or refreshes) a ticket on each name.
-- A replay of an entry (its reply was lost) finds the entry in our own rows and answers as before.
-- Returns status 'founded' | 'entered' | 'busy' | 'gone' (the hold to enter is not live) |
-- 'conflict' (a semaphore of another limit, in `lim`); `tokens` per name; `pttl_ms` the lease's
-- time left (least over the names); `position` tickets ahead; `wait_ms` until the first blocking
-- hold expires.
CREATE OR REPLACE FUNCTION @schema.acquire(
  p_names text[], p_hold text, p_owner text, p_mode "char", p_permits integer, p_limit integer,
  p_ttl_ms bigint, p_reentry text, p_join text, p_entry text, p_ticket_ms bigint,
  OUT status text, OUT hold text, OUT tokens bigint[], OUT pttl_ms bigint, OUT "position" integer,
  OUT lim integer, OUT wait_ms bigint)
LANGUAGE plpgsql AS $fn$
DECLARE
  t timestamptz;
  n text;
  target text;
  found_rows integer;
  k record;
  c record;
  my_seq bigint;
  blocked text;
  tok bigint;
  e timestamptz;
  ttl interval := p_ttl_ms * interval '1 millisecond';
BEGIN
  FOREACH n IN ARRAY p_names LOOP
    INSERT INTO @schema.locks AS l (name) VALUES (n) ON CONFLICT (name) DO NOTHING;
    PERFORM 1 FROM @schema.locks l WHERE l.name = n FOR UPDATE;
  END LOOP;
  -- Read after the row locks: a wait for them must not age the clock we judge leases by.
  t := clock_timestamp();
  DELETE FROM @schema.holds d WHERE d.name = ANY (p_names) AND d.expires_at <= t;
  DELETE FROM @schema.tickets d WHERE d.name = ANY (p_names) AND d.expires_at <= t;

  SELECT min(x.hold) AS h, count(*) AS c, array_agg(x.token ORDER BY x.name) AS toks, min(x.expires_at) AS e
    INTO k FROM @schema.holds x WHERE x.name = ANY (p_names) AND p_entry = ANY (x.entries);
  IF k.c > 0 THEN
    status := CASE WHEN k.h = p_entry THEN 'founded' ELSE 'entered' END;
    hold := k.h; tokens := k.toks;
    pttl_ms := floor(extract(epoch FROM k.e - t) * 1000)::bigint;
    RETURN;
  END IF;

  IF p_reentry = 'hold' THEN
    target := p_join;
  ELSIF p_reentry = 'owner' THEN
    SELECT x.hold INTO target FROM @schema.holds x
      WHERE x.name = p_names[1] AND x.owner = p_owner AND x.mode = p_mode ORDER BY x.token LIMIT 1;
  END IF;
  IF target IS NOT NULL THEN
    SELECT count(*) INTO found_rows FROM @schema.holds x WHERE x.name = ANY (p_names) AND x.hold = target;
    IF found_rows = cardinality(p_names) THEN
      UPDATE @schema.holds x SET entries = x.entries || p_entry, expires_at = greatest(x.expires_at, t + ttl)
        WHERE x.name = ANY (p_names) AND x.hold = target;
      SELECT array_agg(x.token ORDER BY x.name), min(x.expires_at) INTO tokens, e
        FROM @schema.holds x WHERE x.name = ANY (p_names) AND x.hold = target;
      status := 'entered'; hold := target;
      pttl_ms := floor(extract(epoch FROM e - t) * 1000)::bigint;
      RETURN;
    END IF;
    IF p_reentry = 'hold' THEN
      status := 'gone';
      RETURN;
    END IF;
  END IF;

  IF p_mode = 's' THEN
    SELECT l.lim INTO lim FROM @schema.locks l WHERE l.name = p_names[1];
    IF lim IS DISTINCT FROM p_limit THEN
      IF lim IS NULL OR NOT EXISTS (SELECT 1 FROM @schema.holds x WHERE x.name = p_names[1])
          AND NOT EXISTS (SELECT 1 FROM @schema.tickets x WHERE x.name = p_names[1] AND x.ticket <> p_hold) THEN
        UPDATE @schema.locks l SET lim = p_limit WHERE l.name = p_names[1];
        lim := p_limit;
      ELSE
        status := 'conflict';
        RETURN;
      END IF;
    END IF;
  END IF;

  FOREACH n IN ARRAY p_names LOOP
    SELECT x.seq INTO my_seq FROM @schema.tickets x WHERE x.name = n AND x.ticket = p_hold;
    SELECT count(*) AS c, coalesce(bool_or(a.mode <> p_mode OR p_mode IN ('x', 'w')), false) AS clash,
           coalesce(sum(a.permits), 0) AS used
      INTO c
      FROM (SELECT x.mode, x.permits FROM @schema.holds x WHERE x.name = n
            UNION ALL
            SELECT y.mode, y.permits FROM @schema.tickets y
              WHERE y.name = n AND y.ticket <> p_hold AND (my_seq IS NULL OR y.seq < my_seq)) a;
    IF c.clash OR (p_mode = 's' AND c.used + p_permits > lim) THEN
      blocked := n;
      EXIT;
    END IF;
  END LOOP;

  IF blocked IS NULL THEN
    tokens := '{}';
    FOREACH n IN ARRAY p_names LOOP
      UPDATE @schema.locks l SET counter = l.counter + 1 WHERE l.name = n RETURNING l.counter INTO tok;
      INSERT INTO @schema.holds (name, hold, owner, mode, permits, token, entries, expires_at)
        VALUES (n, p_hold, p_owner, p_mode, p_permits, tok, ARRAY[p_entry], t + ttl);
      tokens := tokens || tok;
      DELETE FROM @schema.tickets d WHERE d.name = n AND d.ticket = p_hold;
      -- Those behind a reader or a semaphore holder may be able to go too: the next one looks.
      IF p_mode IN ('r', 's') AND EXISTS (SELECT 1 FROM @schema.tickets y WHERE y.name = n) THEN
        PERFORM @schema.wake(n);
      END IF;
    END LOOP;
    status := 'founded'; hold := p_hold; pttl_ms := p_ttl_ms;
    RETURN;
  END IF;

  status := 'busy';
  IF p_ticket_ms > 0 THEN
    FOREACH n IN ARRAY p_names LOOP
      UPDATE @schema.tickets x SET expires_at = t + p_ticket_ms * interval '1 millisecond'
        WHERE x.name = n AND x.ticket = p_hold;
      IF NOT FOUND THEN
        UPDATE @schema.locks l SET seq = l.seq + 1 WHERE l.name = n RETURNING l.seq INTO my_seq;
        INSERT INTO @schema.tickets (name, ticket, mode, permits, seq, expires_at)
          VALUES (n, p_hold, p_mode, p_permits, my_seq, t + p_ticket_ms * interval '1 millisecond');
      END IF;
    END LOOP;
    SELECT count(*) INTO "position" FROM @schema.tickets y
      WHERE y.name = blocked AND y.seq < (SELECT x.seq FROM @schema.tickets x WHERE x.name = blocked AND x.ticket = p_hold);
  ELSE
    "position" := -1;
  END IF;
  SELECT floor(extract(epoch FROM min(x.expires_at) - t) * 1000)::bigint INTO wait_ms
    FROM @schema.holds x WHERE x.name = blocked;
END
$fn$;
