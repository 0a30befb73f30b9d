/**
 * Bounded calls on a pool: every call gets a client and an answer within its deadline, or fails
 * with a typed error naming the cause. A client whose call ran out of time or lost its connection is
 * ended, not given back (its connection may still be running the statement).
 */
import { ConnectionError, SchemaError, ScriptError } from "../errors.js";
import type { PgPool, PgPoolClient, PgQueryable, PgResult } from "./types.js";

/** SQLSTATEs that mean the server or the connection failed, not the statement. */
const CONNECTION_STATES = /^(08...|57P0[1-4]|53300|53400|58...)$/;
/** SQLSTATEs that mean the schema or one of its objects is missing. */
export const MISSING_STATES = new Set(["3F000", "42P01", "42883"]);

export function sqlState(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/** The typed error for a failed call: `what` names the call, `schema` the store's schema. */
export function classify(error: unknown, what: string, schema: string): Error {
  if (error instanceof ConnectionError || error instanceof SchemaError || error instanceof ScriptError) return error;
  const state = sqlState(error);
  const message = error instanceof Error ? error.message : String(error);
  if (state === undefined || CONNECTION_STATES.test(state)) {
    return new ConnectionError(`PostgreSQL ${what} failed: ${message}`, { cause: error });
  }
  if (state === "42501") return new SchemaError(schema, `${what}: missing privilege (${message})`, { cause: error });
  if (MISSING_STATES.has(state)) return new SchemaError(schema, `${what}: not installed (${message})`, { cause: error });
  return new ScriptError(`PostgreSQL ${what} failed (SQLSTATE ${state}): ${message}`, { cause: error });
}

/** Whether a failed call may have run on the server without us hearing of it. */
export function unanswered(error: unknown): boolean {
  return error instanceof ConnectionError;
}

function race<T>(work: Promise<T>, ms: number, onLate: () => void, late: () => Error): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let done = false;
    const timer = setTimeout(() => {
      if (done) return;
      done = true;
      onLate();
      reject(late());
    }, Math.max(0, ms));
    work.then(
      (v) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        resolve(v);
      },
      (e: unknown) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        reject(e instanceof Error ? e : new Error(String(e)));
      },
    );
  });
}

// A checked-out client whose connection breaks emits "error" (an unhandled one would end the
// process); the failed query already tells us, so while we hold a client its errors are ignored.
const ignore = (): void => {};

/** A client of `pool` within `deadline` (a `performance.now()` time); give it back with `giveBack`. */
export async function checkout(pool: PgPool, deadline: number, what: string, schema: string): Promise<PgPoolClient> {
  const pending = pool.connect();
  try {
    const client = await race(
      pending,
      deadline - performance.now(),
      () => void pending.then((c) => c.release(true), () => {}),
      () => new ConnectionError(`PostgreSQL ${what}: no connection from the pool within the call's bound`),
    );
    client.on("error", ignore);
    return client;
  } catch (e) {
    throw classify(e, `${what} (connect)`, schema);
  }
}

/** Gives a client back to its pool; `destroy` ends its connection instead (it failed, or may still be running our statement). */
export function giveBack(client: PgPoolClient, destroy = false): void {
  try {
    client.release(destroy);
  } catch {
    // Given back already (a timeout ended it first).
  }
  // Kept a while longer: the ended connection may still report its error.
  if (!destroy) client.removeListener("error", ignore);
}

/** One statement on `client` within `deadline`; a late or broken client is ended when `owned`. */
export async function run(client: PgQueryable, text: string, values: unknown[], deadline: number, what: string, schema: string, owned?: PgPoolClient, name?: string): Promise<PgResult> {
  try {
    return await race(
      client.query(name === undefined ? { text, values } : { name, text, values }),
      deadline - performance.now(),
      () => {
        if (owned) giveBack(owned, true);
      },
      () => new ConnectionError(`PostgreSQL ${what}: no answer within the call's bound`),
    );
  } catch (e) {
    const typed = classify(e, what, schema);
    if (typed instanceof ConnectionError && owned !== undefined) giveBack(owned, true);
    throw typed;
  }
}

/**
 * One statement on a client of its own, given back afterwards (ended when it failed with its
 * connection). `name`: a prepared statement's, so each connection parses and plans it once.
 */
export async function once(pool: PgPool, text: string, values: unknown[], deadline: number, what: string, schema: string, name?: string): Promise<PgResult> {
  const client = await checkout(pool, deadline, what, schema);
  let broken = false;
  try {
    return await run(client, text, values, deadline, what, schema, client, name);
  } catch (e) {
    broken = e instanceof ConnectionError;
    throw e;
  } finally {
    if (!broken) giveBack(client);
  }
}
