-- proclaim: an election's leader (the live hold `p_hold` on `p_name`) publishes its value.
-- Observers are told ('l:<name>'). Returns false when the hold is not live (the value is not set).
CREATE OR REPLACE FUNCTION @schema.proclaim(p_name text, p_hold text, p_value text)
RETURNS boolean
LANGUAGE plpgsql AS $fn$
BEGIN
  PERFORM 1 FROM @schema.locks l WHERE l.name = p_name FOR UPDATE;
  UPDATE @schema.holds x SET value = p_value
    WHERE x.name = p_name AND x.hold = p_hold AND x.expires_at > clock_timestamp();
  IF NOT FOUND THEN RETURN false; END IF;
  PERFORM pg_notify(@channel, 'l:' || p_name);
  RETURN true;
END
$fn$;

-- read_leader: the live exclusive hold of `p_name` with its value (no row when there is none).
CREATE OR REPLACE FUNCTION @schema.read_leader(p_name text)
RETURNS TABLE (hold text, owner text, token bigint, value text, pttl_ms bigint)
LANGUAGE sql STABLE AS $fn$
  SELECT x.hold, x.owner, x.token, x.value, floor(extract(epoch FROM x.expires_at - clock_timestamp()) * 1000)::bigint
    FROM @schema.holds x
    WHERE x.name = p_name AND x.mode = 'x' AND x.expires_at > clock_timestamp()
    ORDER BY x.token DESC LIMIT 1
$fn$;

-- count_down: one count down of the latch `p_name`, counted once per `p_id`. The first call (or
-- one after the latch expired) makes it with `p_count`; every call sets its expiry to `p_ttl_ms`
-- from now. The count down that reaches 0 tells the waiters ('c:<name>').
-- Returns status 1 counted, 2 a replay or already at 0 (nothing counted), -2 a latch made with
-- another count (then `remaining` is that count); `remaining` what is left.
CREATE OR REPLACE FUNCTION @schema.count_down(p_name text, p_id text, p_count integer, p_ttl_ms bigint, OUT status integer, OUT remaining integer)
LANGUAGE plpgsql AS $fn$
DECLARE
  t timestamptz;
  k record;
  ttl interval := p_ttl_ms * interval '1 millisecond';
BEGIN
  INSERT INTO @schema.latches AS a (name, count, remaining, ids, expires_at) VALUES (p_name, p_count, p_count, '{}', '-infinity')
    ON CONFLICT (name) DO NOTHING;
  SELECT * INTO k FROM @schema.latches a WHERE a.name = p_name FOR UPDATE;
  t := clock_timestamp();
  IF k.expires_at <= t THEN
    k.count := p_count; k.remaining := p_count; k.ids := '{}';
  END IF;
  IF k.count <> p_count THEN
    status := -2; remaining := k.count;
    RETURN;
  END IF;
  IF p_id = ANY (k.ids) OR k.remaining = 0 THEN
    UPDATE @schema.latches a SET count = k.count, remaining = k.remaining, ids = k.ids, expires_at = t + ttl WHERE a.name = p_name;
    status := 2; remaining := k.remaining;
    RETURN;
  END IF;
  remaining := k.remaining - 1;
  UPDATE @schema.latches a
    SET count = k.count, remaining = count_down.remaining,
        ids = CASE WHEN count_down.remaining = 0 THEN '{}' ELSE k.ids || p_id END, expires_at = t + ttl
    WHERE a.name = p_name;
  IF remaining = 0 THEN PERFORM pg_notify(@channel, 'c:' || p_name); END IF;
  status := 1;
END
$fn$;

-- read_latch: the live latch `p_name`'s count and what is left (no row when there is none).
CREATE OR REPLACE FUNCTION @schema.read_latch(p_name text)
RETURNS TABLE (count integer, remaining integer)
LANGUAGE sql STABLE AS $fn$
  SELECT a.count, a.remaining FROM @schema.latches a WHERE a.name = p_name AND a.expires_at > clock_timestamp()
$fn$;
