-- inspect: everything about `p_name` as one JSON object: its counter, its semaphore limit, its live
-- holds and tickets with their time left (for the CLI and tests; nothing is changed).
CREATE OR REPLACE FUNCTION @schema.inspect(p_name text)
RETURNS jsonb
LANGUAGE sql STABLE AS $fn$
  WITH t AS (SELECT clock_timestamp() AS now)
  SELECT jsonb_build_object(
    'counter', coalesce((SELECT l.counter FROM @schema.locks l WHERE l.name = p_name), 0),
    'limit', (SELECT l.lim FROM @schema.locks l WHERE l.name = p_name),
    'holds', coalesce((SELECT jsonb_agg(jsonb_build_object('hold', x.hold, 'owner', x.owner, 'mode', x.mode::text,
        'permits', x.permits, 'token', x.token::text, 'entries', cardinality(x.entries), 'value', x.value,
        'pttl', floor(extract(epoch FROM x.expires_at - t.now) * 1000)::bigint) ORDER BY x.token)
      FROM @schema.holds x WHERE x.name = p_name AND x.expires_at > t.now), '[]'::jsonb),
    'tickets', coalesce((SELECT jsonb_agg(jsonb_build_object('ticket', y.ticket, 'mode', y.mode::text, 'permits', y.permits,
        'pttl', floor(extract(epoch FROM y.expires_at - t.now) * 1000)::bigint) ORDER BY y.seq)
      FROM @schema.tickets y WHERE y.name = p_name AND y.expires_at > t.now), '[]'::jsonb))
  FROM t
$fn$;

-- force_release: ends every hold and ticket of `p_name` (an operator's last resort: the holders
-- learn it at their next renewal). The counter stays, so tokens keep growing. Returns how many
-- live holds were ended.
CREATE OR REPLACE FUNCTION @schema.force_release(p_name text)
RETURNS integer
LANGUAGE plpgsql AS $fn$
DECLARE
  ended integer;
BEGIN
  PERFORM 1 FROM @schema.locks l WHERE l.name = p_name FOR UPDATE;
  WITH d AS (DELETE FROM @schema.holds d WHERE d.name = p_name RETURNING d.expires_at)
    SELECT count(*) FILTER (WHERE d.expires_at > clock_timestamp()) INTO ended FROM d;
  DELETE FROM @schema.tickets d WHERE d.name = p_name;
  PERFORM @schema.wake(p_name);
  RETURN ended;
END
$fn$;
