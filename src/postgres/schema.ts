/**
 * The store's schema: created on first use (or by `migrate`) in a schema the user names, with no
 * extension. A store reads the installed version once; when it differs from the one it was built
 * with, it installs its tables (IF NOT EXISTS) and functions (CREATE OR REPLACE) in one transaction,
 * serialized with other installers by a transaction-scoped advisory lock.
 */
import { SchemaError } from "../errors.js";
import { classify, MISSING_STATES, run, sqlState } from "./calls.js";
import { SQL_FILES, SQL_VERSION } from "./sql.generated.js";
import type { PgPoolClient } from "./types.js";

/** A schema name: lower-case letters, digits and `_`, starting with a letter or `_`, at most 40 characters. */
export const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,39}$/;

/** The quoted schema, and the notification channel's name as a string literal. */
export function names(schema: string): { quoted: string; channel: string; literal: string } {
  const channel = `surelock_${schema}`;
  return { quoted: `"${schema}"`, channel, literal: `'${channel}'` };
}

/** The install script for `schema`. */
export function installText(schema: string): string {
  const n = names(schema);
  return SQL_FILES.map((f) => f.text.replaceAll("@schema", n.quoted).replaceAll("@channel", n.literal)).join(";\n");
}

/** The installed version, or null when the schema or its meta table is missing. */
export async function installedVersion(client: PgPoolClient, schema: string, deadline: number): Promise<string | null> {
  try {
    const r = await run(client, `SELECT version FROM ${names(schema).quoted}.meta WHERE id = 1`, [], deadline, "schema check", schema, client);
    return (r.rows[0]?.version as string | undefined) ?? null;
  } catch (e) {
    const state = sqlState((e as Error).cause);
    if (state !== undefined && MISSING_STATES.has(state)) return null;
    throw e;
  }
}

/**
 * Installs the schema's tables and functions (the version this build has), in one transaction.
 * Errors: SchemaError when a privilege is missing (CREATE on the database or the schema).
 */
export async function install(client: PgPoolClient, schema: string, deadline: number): Promise<void> {
  const q = names(schema).quoted;
  await run(client, "BEGIN", [], deadline, "schema install", schema, client);
  try {
    // Two first users at once: the second waits here, then finds the tables and functions made.
    await run(client, "SELECT pg_advisory_xact_lock(hashtext($1))", [`surelock install ${schema}`], deadline, "schema install", schema, client);
    await run(client, `CREATE SCHEMA IF NOT EXISTS ${q}`, [], deadline, "schema install", schema, client);
    // With no parameters, a text of several statements goes by the simple query protocol.
    await run(client, installText(schema), [], deadline, "schema install", schema, client);
    await run(
      client,
      `INSERT INTO ${q}.meta (id, version) VALUES (1, $1) ON CONFLICT (id) DO UPDATE SET version = excluded.version`,
      [SQL_VERSION], deadline, "schema install", schema, client,
    );
    await run(client, "COMMIT", [], deadline, "schema install", schema, client);
  } catch (e) {
    await client.query({ text: "ROLLBACK" }).catch(() => {});
    const typed = classify(e, "schema install", schema);
    if (typed instanceof SchemaError) throw new SchemaError(schema, `cannot be created or updated: ${typed.message}`, { cause: typed.cause ?? e });
    throw typed;
  }
}

export { SQL_VERSION };
