/**
 * The team tables (leases, events, commands) and the connections that reach them: a small knex
 * pool of its own (the history's pool stays sized for the history), and one dedicated `pg` client
 * for LISTEN, which is per session and so cannot live on a pooled connection.
 *
 * The tables are created with IF NOT EXISTS under a transaction-scoped advisory lock, so several
 * processes starting together on a fresh database queue instead of racing on the catalog.
 */
import type { Knex } from 'knex';
import { openPgPool } from '../../lib/database/pg.js';

export { loadPg, type PgClient } from '../../lib/database/pg.js';

/** Any constant; the same in every process ('LAt1'). */
const SCHEMA_LOCK_KEY = 0x4c_41_74_31;

const SCHEMA = [
  `CREATE TABLE IF NOT EXISTS team_leases (
     conversation_id text PRIMARY KEY,
     owner text NOT NULL,
     expires_at timestamptz NOT NULL
   )`,
  `CREATE TABLE IF NOT EXISTS team_events (
     conversation_id text NOT NULL,
     seq bigint NOT NULL,
     type text NOT NULL,
     origin text NOT NULL,
     ts bigint NOT NULL,
     event text NOT NULL,
     PRIMARY KEY (conversation_id, seq)
   )`,
  'CREATE INDEX IF NOT EXISTS team_events_ts ON team_events (ts)',
  `CREATE TABLE IF NOT EXISTS team_commands (
     id bigserial PRIMARY KEY,
     owner text NOT NULL,
     sender text NOT NULL,
     state text NOT NULL DEFAULT 'pending',
     payload text NOT NULL,
     reply text,
     created_at timestamptz NOT NULL DEFAULT now()
   )`,
  'CREATE INDEX IF NOT EXISTS team_commands_owner ON team_commands (owner, state)',
];

export function openTeamDatabase(url: string, options: { poolMax: number; acquireTimeoutMs: number }): Promise<Knex> {
  return openPgPool(url, { ...options, schema: SCHEMA, lockKey: SCHEMA_LOCK_KEY });
}
