/**
 * Opens the history database on PostgreSQL: a knex pool over `pg` (both imported here, on first
 * use, so a host without a database URL never loads either), then the schema brought up to date.
 *
 * Several processes may open one database at once (N `serve` processes, CLIs). knex's migrator
 * creates its own tables outside any lock and refuses, instead of waiting, when another process
 * holds its lock; so migrations run under a transaction-scoped advisory lock held on a second
 * connection of the pool: the processes queue on it, and each one checks again once it has it.
 */
import type { Knex } from 'knex';
import { loadPg, numericBigints } from '../../lib/database/pg.js';
import { migrationSource } from './schema.js';

export interface OpenOptions {
  /** Connections in the pool (the hot path holds one per write; browsing queries share the rest). */
  poolMax: number;
  /** How long getting a connection (connecting, or waiting for a free one) may take. */
  acquireTimeoutMs: number;
  /** How long opening waits for another process migrating the schema. */
  migrationLockTimeoutMs: number;
}

/** Any constant works; it only has to be the same in every process (and unlikely to clash with an application's). */
const MIGRATION_LOCK_KEY = 0x4c_41_68_31; // 'LAh1'

export async function openDatabase(url: string, options: OpenOptions): Promise<Knex> {
  const [{ default: createKnex }, pg] = await Promise.all([import('knex'), loadPg()]);
  const knex = createKnex({
    client: 'pg',
    connection: {
      connectionString: url,
      // Timestamps, seqs and counts are bigint: as numbers (all stay far below 2^53), like SQLite's.
      types: numericBigints(pg),
    },
    // Two at least: migrations hold the advisory lock on one connection and run on another.
    pool: { min: 0, max: Math.max(2, options.poolMax) },
    acquireConnectionTimeout: options.acquireTimeoutMs,
  });
  try {
    const names = (await migrationSource.getMigrations([])).map((m) => migrationSource.getMigrationName(m));
    // The usual case (a current database) takes no lock.
    if (!(await migrationsApplied(knex, names))) {
      await knex.transaction(async (trx) => {
        await trx.raw(`SET LOCAL lock_timeout = ${Math.max(1, Math.floor(options.migrationLockTimeoutMs))}`);
        try {
          await trx.raw('SELECT pg_advisory_xact_lock(?)', [MIGRATION_LOCK_KEY]);
        } catch (err) {
          if ((err as { code?: string }).code === '55P03') {
            throw new Error(`another process has been migrating the history database for over ${options.migrationLockTimeoutMs} ms (history.migrationLockTimeoutMs)`);
          }
          throw err;
        }
        if (!(await migrationsApplied(knex, names))) await knex.migrate.latest({ migrationSource, tableName: 'knex_migrations' });
      });
    }
    return knex;
  } catch (err) {
    await knex.destroy().catch(() => {});
    throw err;
  }
}

async function migrationsApplied(knex: Knex, names: string[]): Promise<boolean> {
  const table = (await knex.raw("SELECT to_regclass('knex_migrations') IS NOT NULL AS present")).rows[0] as { present: boolean };
  if (!table.present) return false;
  const done = new Set(((await knex('knex_migrations').select('name')) as Array<{ name: string }>).map((r) => r.name));
  return names.every((n) => done.has(n));
}
