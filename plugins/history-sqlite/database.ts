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
 *
 * Several processes share one database (`serve` and any number of CLIs). Writes wait for each
 * other through the busy timeout (store.ts takes the write lock up front); the first opening of
 * a fresh file (switching it to WAL, creating the schema) and pending migrations run under a
 * lock of their own, so processes started together never race knex's migrator (which creates its
 * tables outside any transaction and refuses, instead of waiting, when another holds its lock).
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
  /** How long an opening waits for another process that is migrating the schema. */
  migrationLockTimeoutMs: number;
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
    db.pragma(`busy_timeout = ${Math.max(0, Math.floor(options.busyTimeoutMs))}`);
    // WAL + NORMAL keeps every committed transaction through a process crash (kill -9); only
    // power loss can drop the last commits. FULL would sync every commit (~8x slower).
    db.pragma('synchronous = NORMAL');
    db.pragma('foreign_keys = ON');
    const names = (await migrationSource.getMigrations([])).map((m) => migrationSource.getMigrationName(m));
    const isWal = () => db.pragma('journal_mode', { simple: true }) === 'wal';
    // The usual case (an existing, current database) takes no lock at all.
    if (!isWal() || !migrationsApplied(db, names)) {
      await underMigrationLock(file, options.migrationLockTimeoutMs, async () => {
        // Checked again: the process that held the lock before us may have done it all.
        if (!isWal()) db.pragma('journal_mode = WAL');
        if (!migrationsApplied(db, names)) await (await makeKnex()).migrate.latest({ migrationSource, tableName: 'knex_migrations' });
      });
    }
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

/**
 * Run `fn` holding an exclusive lock on `<file>-migrate-lock`, a tiny SQLite file used only as a
 * cross-process mutex. Its lock is the operating system's (like the database's own), so a
 * process killed while holding it releases it: nothing stale is left to detect. Not the
 * database's own write lock: knex migrates on our one connection, which would then wait for
 * itself. Waiting blocks this process (SQLite's busy handler), which has nothing else to do
 * before its history is open.
 */
async function underMigrationLock(file: string, timeoutMs: number, fn: () => Promise<void>): Promise<void> {
  const { default: Database } = await import('better-sqlite3');
  const lockFile = `${file}-migrate-lock`;
  const lock = new Database(lockFile, { timeout: timeoutMs });
  try {
    try {
      lock.exec('BEGIN EXCLUSIVE');
    } catch (err) {
      if ((err as { code?: string }).code?.startsWith('SQLITE_BUSY')) {
        throw new Error(`another process has been migrating the history database ${file} for over ${timeoutMs} ms (pluginSettings["history-sqlite"].migrationLockTimeoutMs)`);
      }
      throw err;
    }
    try {
      await fn();
    } finally {
      lock.exec('COMMIT');
    }
  } finally {
    lock.close();
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
