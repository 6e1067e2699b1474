/**
 * The team tables (leases, events, commands) and the connections that reach them: a small knex
 * pool of its own (the history's pool stays sized for the history), and one dedicated `pg` client
 * for LISTEN, which is per session and so cannot live on a pooled connection.
 *
 * The tables are created with IF NOT EXISTS under a transaction-scoped advisory lock, so several
 * processes starting together on a fresh database queue instead of racing on the catalog.
 */
import type { Knex } from 'knex';

/** Any constant; the same in every process ('LAt1'). */
const SCHEMA_LOCK_KEY = 0x4c_41_74_31;
const INT8_OID = 20;

interface PgTypes {
  getTypeParser(oid: number, format?: string): (value: string) => unknown;
}

/** The parts of a `pg` Client used here (no @types/pg in the project). */
export interface PgClient {
  connect(): Promise<void>;
  query(sql: string, values?: unknown[]): Promise<{ rows: unknown[] }>;
  end(): Promise<void>;
  on(event: 'notification', fn: (n: { channel: string; payload?: string }) => void): void;
  on(event: 'error', fn: (err: Error) => void): void;
  on(event: 'end', fn: () => void): void;
}

interface PgModule {
  types: PgTypes;
  Client: new (config: { connectionString: string; connectionTimeoutMillis?: number }) => PgClient;
}

/** `pg` by a computed name, so the type checker and bundlers leave it to run time (knex loads the same module). */
export async function loadPg(): Promise<PgModule> {
  const name = 'pg';
  const mod = (await import(name)) as { default?: PgModule } & Partial<PgModule>;
  return (mod.default ?? (mod as PgModule));
}

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

export async function openTeamDatabase(url: string, options: { poolMax: number; acquireTimeoutMs: number }): Promise<Knex> {
  const [{ default: createKnex }, pg] = await Promise.all([import('knex'), loadPg()]);
  const knex = createKnex({
    client: 'pg',
    connection: {
      connectionString: url,
      // Seqs and timestamps are bigint: as numbers (far below 2^53).
      types: { getTypeParser: (oid: number, format?: string) => (oid === INT8_OID ? Number : pg.types.getTypeParser(oid, format)) },
    },
    pool: { min: 0, max: Math.max(2, options.poolMax) },
    acquireConnectionTimeout: options.acquireTimeoutMs,
  });
  try {
    await knex.transaction(async (trx) => {
      await trx.raw('SELECT pg_advisory_xact_lock(?)', [SCHEMA_LOCK_KEY]);
      for (const sql of SCHEMA) await trx.raw(sql);
    });
    return knex;
  } catch (err) {
    await knex.destroy().catch(() => {});
    throw err;
  }
}
