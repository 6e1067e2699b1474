/**
 * Opens the history database: one better-sqlite3 connection in WAL mode, shared by the hot-path
 * prepared statements and by knex (migrations and the service's queries).
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
  knex: Knex;
}

export interface OpenOptions {
  /** How long a write waits for another process's lock (SQLite busy timeout). */
  busyTimeoutMs: number;
}

export async function openDatabase(file: string, options: OpenOptions): Promise<HistoryDatabase> {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  // Imported here, not at module top: knex costs ~100 ms at start-up and only this plugin needs it.
  const { default: Database } = await import('better-sqlite3');
  const { default: createKnex } = await import('knex');
  const db = new Database(file, { timeout: options.busyTimeoutMs });
  try {
    db.pragma('journal_mode = WAL');
    // WAL + NORMAL keeps every committed transaction through a process crash (kill -9); only
    // power loss can drop the last commits. FULL would sync every commit (~8x slower).
    db.pragma('synchronous = NORMAL');
    db.pragma('foreign_keys = ON');
    const knex = createKnex({ client: 'better-sqlite3', useNullAsDefault: true, connectionPool: singleConnectionPool(db) });
    await knex.migrate.latest({ migrationSource, tableName: 'knex_migrations' });
    return { file, db, knex };
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
  await h.knex.destroy();
  if (h.db.open) h.db.close();
}
