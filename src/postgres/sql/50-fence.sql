-- fence: called inside the user's own transaction with the fencing token of the lease the user
-- believes it holds. Records the token for `p_resource` unless a newer one was recorded; the
-- ON CONFLICT update takes the resource's row lock, so two transactions racing on one resource are
-- ordered by the database: the second waits for the first to commit or roll back, then sees its
-- token. A newer token raises SQLSTATE SLF01 (its detail: the recorded token), which aborts the
-- user's transaction: a stale holder cannot commit its write even if it ignores the error.
-- Returns the recorded token (= p_token).
CREATE OR REPLACE FUNCTION @schema.fence(p_resource text, p_token bigint)
RETURNS bigint
LANGUAGE plpgsql AS $fn$
DECLARE
  recorded bigint;
BEGIN
  INSERT INTO @schema.fences AS f (resource, token, recorded_at) VALUES (p_resource, p_token, clock_timestamp())
    ON CONFLICT (resource) DO UPDATE
      SET token = greatest(f.token, excluded.token),
          recorded_at = CASE WHEN excluded.token > f.token THEN excluded.recorded_at ELSE f.recorded_at END
    RETURNING f.token INTO recorded;
  IF recorded > p_token THEN
    RAISE EXCEPTION USING ERRCODE = 'SLF01', MESSAGE = format('fenced: resource %L has token %s, newer than %s', p_resource, recorded, p_token),
      DETAIL = recorded::text;
  END IF;
  RETURN recorded;
END
$fn$;
