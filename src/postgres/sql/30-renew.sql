-- renew: one statement per keep-alive tick for every lease and ticket of an instance. Item i is
-- (kind, name, id, ttl): kind 'h' renews the hold `id` on `name` for `ttl` ms, 't' refreshes the
-- ticket `id`. Only a live row is renewed: an expired lease stays expired (it may already be
-- someone else's), so the answer tells the caller it is gone. Rows are locked before the clock is
-- read, so a wait for a lock cannot renew a lease that expired during it.
-- Returns one row per item, in order: whether it is live now, and its time left in ms.
CREATE OR REPLACE FUNCTION @schema.renew(p_kinds "char"[], p_names text[], p_ids text[], p_ttls bigint[])
RETURNS TABLE (i integer, live boolean, pttl_ms bigint)
LANGUAGE plpgsql AS $fn$
DECLARE
  t timestamptz;
BEGIN
  PERFORM 1 FROM @schema.holds x
    JOIN unnest(p_kinds, p_names, p_ids) AS u(k, n, id) ON u.k = 'h' AND x.name = u.n AND x.hold = u.id
    ORDER BY x.name, x.hold FOR UPDATE OF x;
  PERFORM 1 FROM @schema.tickets x
    JOIN unnest(p_kinds, p_names, p_ids) AS u(k, n, id) ON u.k = 't' AND x.name = u.n AND x.ticket = u.id
    ORDER BY x.name, x.ticket FOR UPDATE OF x;
  t := clock_timestamp();
  RETURN QUERY
  WITH u AS (SELECT * FROM unnest(p_kinds, p_names, p_ids, p_ttls) WITH ORDINALITY AS u(k, n, id, ttl, i)),
  rh AS (
    UPDATE @schema.holds x SET expires_at = t + u.ttl * interval '1 millisecond'
      FROM u WHERE u.k = 'h' AND x.name = u.n AND x.hold = u.id AND x.expires_at > t
      RETURNING u.i),
  rt AS (
    UPDATE @schema.tickets x SET expires_at = t + u.ttl * interval '1 millisecond'
      FROM u WHERE u.k = 't' AND x.name = u.n AND x.ticket = u.id AND x.expires_at > t
      RETURNING u.i)
  SELECT u.i::integer, (rh.i IS NOT NULL OR rt.i IS NOT NULL),
         CASE WHEN rh.i IS NOT NULL OR rt.i IS NOT NULL THEN u.ttl ELSE 0 END
    FROM u LEFT JOIN rh ON rh.i = u.i LEFT JOIN rt ON rt.i = u.i
    ORDER BY u.i;
END
$fn$;

-- check: whether the hold `p_hold` is live on every name of `p_names`, and its time left (least).
CREATE OR REPLACE FUNCTION @schema.check_hold(p_names text[], p_hold text, OUT live boolean, OUT pttl_ms bigint, OUT tokens bigint[], OUT entries integer)
LANGUAGE plpgsql AS $fn$
DECLARE
  t timestamptz := clock_timestamp();
  k record;
BEGIN
  SELECT count(*) AS c, min(x.expires_at) AS e, array_agg(x.token ORDER BY x.name) AS toks, max(cardinality(x.entries)) AS n
    INTO k FROM @schema.holds x WHERE x.name = ANY (p_names) AND x.hold = p_hold AND x.expires_at > t;
  live := k.c = cardinality(p_names);
  pttl_ms := CASE WHEN live THEN floor(extract(epoch FROM k.e - t) * 1000)::bigint ELSE 0 END;
  tokens := CASE WHEN live THEN k.toks ELSE NULL END;
  entries := CASE WHEN live THEN k.n ELSE 0 END;
END
$fn$;
