/**
 * PostgreSQL connections for the plugins that keep shared state there (history, team fan-out,
 * central settings, cron): `pg` loaded on first use, a small knex pool whose bigints read as
 * numbers, and tables created under a transaction-scoped advisory lock, so several processes
 * starting together on a fresh database queue instead of racing on the catalog.
 */
import type { Knex } from 'knex';

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

export interface PgModule {
  types: PgTypes;
  Client: new (config: { connectionString: string; connectionTimeoutMillis?: number }) => PgClient;
}

/** `pg` by a computed name, so the type checker and bundlers leave it to run time (knex loads the same module). */
export async function loadPg(): Promise<PgModule> {
  const name = 'pg';
  const mod = (await import(name)) as { default?: PgModule } & Partial<PgModule>;
  return mod.default ?? (mod as PgModule);
}

/** Type parsers for a knex `pg` connection: int8 as a number (seqs, timestamps and counts stay far below 2^53). */
export function numericBigints(pg: PgModule): { getTypeParser(oid: number, format?: string): (value: string) => unknown } {
  return { getTypeParser: (oid: number, format?: string) => (oid === INT8_OID ? Number : pg.types.getTypeParser(oid, format)) };
}

export interface PoolOptions {
  poolMax: number;
  acquireTimeoutMs: number;
  /** Statements (CREATE … IF NOT EXISTS) run once under the advisory lock `lockKey`. */
  schema: readonly string[];
  /** Any constant, the same in every process, distinct per plugin. */
  lockKey: number;
}

/** A knex pool on `url` with `schema` applied; destroyed again when the schema cannot be applied. */
export async function openPgPool(url: string, options: PoolOptions): Promise<Knex> {
  const [{ default: createKnex }, pg] = await Promise.all([import('knex'), loadPg()]);
  const knex = createKnex({
    client: 'pg',
    connection: { connectionString: url, types: numericBigints(pg) },
    pool: { min: 0, max: Math.max(2, options.poolMax) },
    acquireConnectionTimeout: options.acquireTimeoutMs,
  });
  try {
    if (options.schema.length > 0) {
      await knex.transaction(async (trx) => {
        await trx.raw('SELECT pg_advisory_xact_lock(?)', [options.lockKey]);
        for (const sql of options.schema) await trx.raw(sql);
      });
    }
    return knex;
  } catch (err) {
    await knex.destroy().catch(() => {});
    throw err;
  }
}
