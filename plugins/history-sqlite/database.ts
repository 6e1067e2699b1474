/**
 * Opens the history database: one better-sqlite3 connection in WAL mode, shared by the hot-path
 * prepared statements and by knex (migrations and the service's browsing queries), which is
 * imported only when one of those needs it.
 *
 * One connection, not two: a second connection writing while knex held a transaction open
 * across an await would wait on SQLite's busy timeout, and since better-sqlite3 blocks the
 * thread, the transaction it waits for could never finish. With one connection every
 * better-sqlite3 call (and every single knex statement) runs whole on the event loop; the rule
 * that follows is that multi-statement writes use better-sqlite3 transactions, never knex ones.
 */
import fs from 'node:fs';
import path from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import type { Knex } from 'knex';
import { migrationSource } from './schema.js';

export interface HistoryDatabase {
  file: string;
  db: BetterSqlite3.Database;
  /**
   * knex over the same connection, created on first use: a process that only runs turns (the
   * CLI) never imports it (~100 ms), since the hot path is better-sqlite3 statements.
   */
  knex(): Promise<Knex>;
  /** The knex instance if one was made (for closing). */
  readonly knexIfLoaded: Knex | undefined;
}

export interface OpenOptions {
  /** How long a write waits for another process's lock (SQLite busy timeout). */
  busyTimeoutMs: number;
}

/** Every in-code migration already recorded in knex's table (read without knex). */
function migrationsApplied(db: BetterSqlite3.Database, names: string[]): boolean {
  const table = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'knex_migrations'").get();
  if (!table) return false;
  const done = new Set((db.prepare('SELECT name FROM knex_migrations').all() as Array<{ name: string }>).map((r) => r.name));
  return names.every((n) => done.has(n));
}

export async function openDatabase(file: string, options: OpenOptions): Promise<HistoryDatabase> {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const { default: Database } = await import('better-sqlite3');
  const db = new Database(file, { timeout: options.busyTimeoutMs });
  let knex: Promise<Knex> | undefined;
  let loaded: Knex | undefined;
  const makeKnex = () =>
    (knex ??= import('knex').then(({ default: createKnex }) => {
      loaded = createKnex({ client: 'better-sqlite3', useNullAsDefault: true, connectionPool: singleConnectionPool(db) });
      return loaded;
    }));
  try {
    db.pragma('journal_mode = WAL');
    // WAL + NORMAL keeps every committed transaction through a process crash (kill -9); only
    // power loss can drop the last commits. FULL would sync every commit (~8x slower).
    db.pragma('synchronous = NORMAL');
    db.pragma('foreign_keys = ON');
    const names = (await migrationSource.getMigrations([])).map((m) => migrationSource.getMigrationName(m));
    if (!migrationsApplied(db, names)) await (await makeKnex()).migrate.latest({ migrationSource, tableName: 'knex_migrations' });
    return {
      file,
      db,
      knex: makeKnex,
      get knexIfLoaded() {
        return loaded;
      },
    };
  } catch (err) {
    db.close();
    throw err;
  }
}

/** A tarn-shaped pool that always lends the same connection (knex's own SQLite pool has max 1 too). */
function singleConnectionPool(db: BetterSqlite3.Database) {
  const pool = {
    acquire: () => ({ promise: Promise.resolve(db) }),
    release: () => true,
    // The connection is ours: closeDatabase closes it after knex lets go.
    destroy: async () => {},
    numFree: () => 1,
    numUsed: () => 0,
    numPendingAcquires: () => 0,
  };
  return pool;
}

export async function closeDatabase(h: HistoryDatabase): Promise<void> {
  await h.knexIfLoaded?.destroy();
  if (h.db.open) h.db.close();
}
