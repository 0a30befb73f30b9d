-- release: gives the entry `p_entry` of the hold `p_hold` on `p_names` back. The hold ends with
-- its last entry; then (or when it had already expired) its rows are deleted, and when someone can
-- care (a ticket waits, or the hold was a proclaimed leader) each name is woken (see wake): an
-- uncontended release notifies nobody, since every NOTIFY takes a database-wide lock at commit.
-- Returns 'held' (other entries remain, or this entry was already given back), 'freed' (the hold
-- ended), 'gone' (no live hold: it expired, or was never there, or was released before).
CREATE OR REPLACE FUNCTION @schema.release(p_names text[], p_hold text, p_entry text, OUT status text, OUT remaining integer)
LANGUAGE plpgsql AS $fn$
DECLARE
  t timestamptz;
  n text;
  k record;
BEGIN
  FOREACH n IN ARRAY p_names LOOP
    PERFORM 1 FROM @schema.locks l WHERE l.name = n FOR UPDATE;
  END LOOP;
  t := clock_timestamp();
  SELECT count(*) AS c, bool_and(x.expires_at > t) AS live, bool_or(p_entry = ANY (x.entries)) AS has,
         max(cardinality(x.entries)) AS entries,
         bool_or(x.value IS NOT NULL) OR EXISTS (SELECT 1 FROM @schema.tickets y WHERE y.name = ANY (p_names)) AS watched
    INTO k FROM @schema.holds x WHERE x.name = ANY (p_names) AND x.hold = p_hold;
  IF k.c = 0 THEN
    status := 'gone'; remaining := 0;
    RETURN;
  END IF;
  IF NOT k.live THEN
    DELETE FROM @schema.holds d WHERE d.name = ANY (p_names) AND d.hold = p_hold;
    IF k.watched THEN
      FOREACH n IN ARRAY p_names LOOP PERFORM @schema.wake(n); END LOOP;
    END IF;
    status := 'gone'; remaining := 0;
    RETURN;
  END IF;
  IF NOT k.has THEN
    status := 'held'; remaining := k.entries;
    RETURN;
  END IF;
  IF k.entries > 1 THEN
    UPDATE @schema.holds x SET entries = array_remove(x.entries, p_entry) WHERE x.name = ANY (p_names) AND x.hold = p_hold;
    status := 'held'; remaining := k.entries - 1;
    RETURN;
  END IF;
  DELETE FROM @schema.holds d WHERE d.name = ANY (p_names) AND d.hold = p_hold;
  IF k.watched THEN
    FOREACH n IN ARRAY p_names LOOP PERFORM @schema.wake(n); END LOOP;
  END IF;
  status := 'freed'; remaining := 0;
END
$fn$;

-- resign: ends the hold `p_hold` on `p_names` whatever its entries (an election's resignation, a
-- forced give-back). Returns whether a live hold was ended.
CREATE OR REPLACE FUNCTION @schema.resign(p_names text[], p_hold text)
RETURNS boolean
LANGUAGE plpgsql AS $fn$
DECLARE
  n text;
  ended boolean;
BEGIN
  FOREACH n IN ARRAY p_names LOOP
    PERFORM 1 FROM @schema.locks l WHERE l.name = n FOR UPDATE;
  END LOOP;
  WITH d AS (DELETE FROM @schema.holds d WHERE d.name = ANY (p_names) AND d.hold = p_hold RETURNING d.expires_at)
    SELECT coalesce(bool_or(d.expires_at > clock_timestamp()), false) INTO ended FROM d;
  FOREACH n IN ARRAY p_names LOOP PERFORM @schema.wake(n); END LOOP;
  RETURN ended;
END
$fn$;

-- leave: the waiter `p_ticket` leaves the queues of `p_names` (it gave up, or was granted
-- elsewhere); those behind it are told to look. Returns how many tickets it had.
CREATE OR REPLACE FUNCTION @schema.leave(p_names text[], p_ticket text)
RETURNS integer
LANGUAGE plpgsql AS $fn$
DECLARE
  gone integer;
  n text;
BEGIN
  DELETE FROM @schema.tickets d WHERE d.name = ANY (p_names) AND d.ticket = p_ticket;
  GET DIAGNOSTICS gone = ROW_COUNT;
  IF gone > 0 THEN
    FOREACH n IN ARRAY p_names LOOP PERFORM @schema.wake(n); END LOOP;
  END IF;
  RETURN gone;
END
$fn$;
