-- Tables of one surelock schema. `@schema` is the schema's quoted name, filled in at install.
-- Expiry is data: a row whose expires_at is not after the database's clock_timestamp() is dead,
-- whether or not it has been deleted yet; every function deletes the dead rows of the names it
-- touches before it reads them.

-- One row per installed schema: the version of the functions below (a hash of this folder).
CREATE TABLE IF NOT EXISTS @schema.meta (
  id integer PRIMARY KEY CHECK (id = 1),
  version text NOT NULL
);

-- One row per lock name, never deleted: its fencing counter must only grow. Every function that
-- changes a name's holds or tickets first takes this row FOR UPDATE, so each name's changes are
-- serialized by the database, and several names are always taken in sorted order.
CREATE TABLE IF NOT EXISTS @schema.locks (
  name text PRIMARY KEY,
  counter bigint NOT NULL DEFAULT 0,
  seq bigint NOT NULL DEFAULT 0,
  lim integer
);

-- One row per (name, hold): a lease. `entries` lists the ids of its entries (a re-entrant hold
-- has several; the hold ends with its last). A multi-name hold has one row per name, one hold id.
CREATE TABLE IF NOT EXISTS @schema.holds (
  name text NOT NULL,
  hold text NOT NULL,
  owner text NOT NULL,
  mode "char" NOT NULL,
  permits integer NOT NULL,
  token bigint NOT NULL,
  entries text[] NOT NULL,
  expires_at timestamptz NOT NULL,
  value text,
  PRIMARY KEY (name, hold)
);

-- The waiting room: one ticket per (name, waiting hold), ordered by seq (taken from the name's
-- locks.seq when the ticket is first made, kept while it is refreshed).
CREATE TABLE IF NOT EXISTS @schema.tickets (
  name text NOT NULL,
  ticket text NOT NULL,
  mode "char" NOT NULL,
  permits integer NOT NULL,
  seq bigint NOT NULL,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (name, ticket)
);
CREATE INDEX IF NOT EXISTS tickets_by_seq ON @schema.tickets (name, seq);

-- The highest fencing token recorded per resource by guard checks in users' transactions.
CREATE TABLE IF NOT EXISTS @schema.fences (
  resource text PRIMARY KEY,
  token bigint NOT NULL,
  recorded_at timestamptz NOT NULL
);

-- Latches: the count they were made with, what is left, the ids counted so far.
CREATE TABLE IF NOT EXISTS @schema.latches (
  name text PRIMARY KEY,
  count integer NOT NULL,
  remaining integer NOT NULL,
  ids text[] NOT NULL,
  expires_at timestamptz NOT NULL
);
