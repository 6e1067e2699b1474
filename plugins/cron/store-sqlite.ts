/**
 * The cron database without PostgreSQL: `$LIVEAGENT_HOME/cron.db` (its own file: the history
 * store offers no way for another plugin to own tables in its database). One better-sqlite3
 * connection in WAL mode with a busy timeout, shared by every process on the home: the CLI
 * writes tasks directly, `serve` runs them. Every multi-statement write is one BEGIN IMMEDIATE
 * transaction, so two processes never interleave half a change; `PRAGMA data_version` tells a
 * process that another one committed something. Synchronous inside; the async methods only
 * satisfy the interface the PostgreSQL store shares.
 */
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type BetterSqlite3 from 'better-sqlite3';
import type { CronRun, CronTask, TaskPatch } from './task-spec.js';
import {
  claimRows,
  INTERRUPTED,
  LEASE_NAME,
  patched,
  toRun,
  toTask,
  TOO_MANY_TASKS,
  type CronStore,
  type FireClaim,
  type LeaseResult,
  type NewTask,
  type RunFinish,
  type RunRow,
  type TaskRow,
} from './store.js';

const SCHEMA_VERSION = 1;
const SCHEMA = `
CREATE TABLE IF NOT EXISTS tasks (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  schedule TEXT NOT NULL,
  timezone TEXT NOT NULL,
  action TEXT NOT NULL,
  enabled INTEGER NOT NULL,
  max_executions INTEGER,
  executions INTEGER NOT NULL DEFAULT 0,
  overlap TEXT NOT NULL,
  missed TEXT NOT NULL,
  created_by TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  last_check_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  task_id TEXT NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
  status TEXT NOT NULL,
  scheduled_at INTEGER,
  started_at INTEGER,
  finished_at INTEGER,
  conversation_id TEXT,
  output TEXT,
  error TEXT,
  holder TEXT
);
CREATE INDEX IF NOT EXISTS runs_by_task ON runs (task_id, id);
CREATE INDEX IF NOT EXISTS runs_by_status ON runs (status);
CREATE TABLE IF NOT EXISTS lease (
  name TEXT PRIMARY KEY,
  holder TEXT NOT NULL,
  expires_at INTEGER NOT NULL
);
`;

export class SqliteCronStore implements CronStore {
  readonly backend = 'sqlite' as const;
  private readonly stmts;
  private lastVersion = -1;

  private constructor(
    readonly db: BetterSqlite3.Database,
    readonly location: string,
  ) {
    this.stmts = {
      tasks: db.prepare<[], TaskRow>('SELECT * FROM tasks ORDER BY created_at, id'),
      task: db.prepare<[string], TaskRow>('SELECT * FROM tasks WHERE id = ?'),
      byName: db.prepare<[string], TaskRow>('SELECT * FROM tasks WHERE name = ?'),
      count: db.prepare<[], { n: number }>('SELECT COUNT(*) AS n FROM tasks'),
      runs: db.prepare<[string, number], RunRow>('SELECT * FROM runs WHERE task_id = ? ORDER BY id DESC LIMIT ?'),
      run: db.prepare<[number], RunRow>('SELECT * FROM runs WHERE id = ?'),
      lastRuns: db.prepare<[], RunRow>("SELECT r.* FROM runs r JOIN (SELECT task_id, MAX(id) AS id FROM runs WHERE status IN ('running', 'done', 'failed') GROUP BY task_id) m ON r.id = m.id"),
      lease: db.prepare<[string], { holder: string; expires_at: number }>('SELECT holder, expires_at FROM lease WHERE name = ?'),
      insertRun: db.prepare(
        'INSERT INTO runs (task_id, status, scheduled_at, started_at, finished_at, conversation_id, output, error, holder) VALUES (@taskId, @status, @scheduledAt, @startedAt, @finishedAt, NULL, @output, NULL, @holder)',
      ),
      prune: db.prepare("DELETE FROM runs WHERE task_id = ? AND status NOT IN ('running', 'pending') AND id <= (SELECT id FROM runs WHERE task_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?)"),
    };
  }

  static async open(file: string, busyTimeoutMs: number): Promise<SqliteCronStore> {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const { default: Database } = await import('better-sqlite3');
    const db = new Database(file, { timeout: busyTimeoutMs });
    try {
      db.pragma(`busy_timeout = ${Math.max(0, Math.floor(busyTimeoutMs))}`);
      if (db.pragma('journal_mode', { simple: true }) !== 'wal') db.pragma('journal_mode = WAL');
      db.pragma('synchronous = NORMAL');
      db.pragma('foreign_keys = ON');
      if (db.pragma('user_version', { simple: true }) !== SCHEMA_VERSION) {
        // IF NOT EXISTS under the write lock: processes opening a fresh file together are safe.
        db.transaction(() => {
          db.exec(SCHEMA);
          db.pragma(`user_version = ${SCHEMA_VERSION}`);
        }).immediate();
      }
      return new SqliteCronStore(db, file);
    } catch (err) {
      db.close();
      throw err;
    }
  }

  async close(): Promise<void> {
    if (this.db.open) this.db.close();
  }

  async othersChanged(): Promise<boolean> {
    // data_version changes when another connection commits, never for this connection's own writes.
    const version = this.db.pragma('data_version', { simple: true }) as number;
    const changed = this.lastVersion !== -1 && version !== this.lastVersion;
    this.lastVersion = version;
    return changed;
  }

  async listTasks(): Promise<CronTask[]> {
    return this.stmts.tasks.all().map(toTask);
  }

  async getTask(id: string): Promise<CronTask | undefined> {
    return this.task(id);
  }

  private task(id: string): CronTask | undefined {
    const row = this.stmts.task.get(id);
    return row ? toTask(row) : undefined;
  }

  async findTask(idOrName: string): Promise<CronTask | undefined> {
    const byId = this.stmts.task.get(idOrName);
    if (byId) return toTask(byId);
    const rows = this.stmts.byName.all(idOrName);
    return rows.length === 1 ? toTask(rows[0]!) : undefined;
  }

  async addTask(t: NewTask, now: number, maxTasks: number): Promise<CronTask> {
    const id = `t_${randomBytes(6).toString('hex')}`;
    return this.db
      .transaction(() => {
        if (this.stmts.count.get()!.n >= maxTasks) throw new Error(TOO_MANY_TASKS(maxTasks));
        this.db
          .prepare(
            'INSERT INTO tasks (id, name, schedule, timezone, action, enabled, max_executions, executions, overlap, missed, created_by, created_at, updated_at, last_check_at) VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?)',
          )
          .run(id, t.name, t.schedule, t.timezone, JSON.stringify(t.action), t.enabled ? 1 : 0, t.maxExecutions, t.overlap, t.missed, t.createdBy, now, now, now);
        return this.task(id)!;
      })
      .immediate();
  }

  async updateTask(id: string, patch: TaskPatch, now: number): Promise<CronTask | undefined> {
    return this.db
      .transaction(() => {
        const cur = this.task(id);
        if (!cur) return undefined;
        const { next, executions, lastCheckAt } = patched(cur, patch, now);
        this.db
          .prepare('UPDATE tasks SET name = ?, schedule = ?, timezone = ?, action = ?, enabled = ?, max_executions = ?, executions = ?, overlap = ?, missed = ?, updated_at = ?, last_check_at = ? WHERE id = ?')
          .run(next.name, next.schedule, next.timezone, JSON.stringify(next.action), next.enabled ? 1 : 0, next.maxExecutions, executions, next.overlap, next.missed, now, lastCheckAt, id);
        return this.task(id);
      })
      .immediate();
  }

  async removeTask(id: string): Promise<boolean> {
    return this.db.prepare('DELETE FROM tasks WHERE id = ?').run(id).changes > 0;
  }

  async runs(taskId: string, limit = 50): Promise<CronRun[]> {
    return this.stmts.runs.all(taskId, limit).map(toRun);
  }

  async getRun(id: number): Promise<CronRun | undefined> {
    const row = this.stmts.run.get(id);
    return row ? toRun(row) : undefined;
  }

  async lastRuns(): Promise<Map<string, CronRun>> {
    return new Map(this.stmts.lastRuns.all().map((r) => [r.task_id, toRun(r)]));
  }

  async lease(): Promise<{ holder: string; expiresAt: number } | undefined> {
    return this.leaseRow();
  }

  private leaseRow(): { holder: string; expiresAt: number } | undefined {
    const row = this.stmts.lease.get(LEASE_NAME);
    return row ? { holder: row.holder, expiresAt: row.expires_at } : undefined;
  }

  async takeLease(holder: string, now: number, leaseMs: number): Promise<LeaseResult> {
    return this.db
      .transaction((): LeaseResult => {
        const cur = this.leaseRow();
        if (cur && cur.holder !== holder && cur.expiresAt > now) return 'busy';
        this.db.prepare('INSERT INTO lease (name, holder, expires_at) VALUES (?, ?, ?) ON CONFLICT(name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at').run(LEASE_NAME, holder, now + leaseMs);
        return cur?.holder === holder && cur.expiresAt > now ? 'renewed' : 'acquired';
      })
      .immediate();
  }

  async releaseLease(holder: string): Promise<void> {
    this.db.prepare('DELETE FROM lease WHERE name = ? AND holder = ?').run(LEASE_NAME, holder);
  }

  async failInterrupted(holder: string, now: number): Promise<number> {
    return this.db
      .prepare("UPDATE runs SET status = 'failed', finished_at = ?, error = COALESCE(error, ?) WHERE status IN ('running', 'pending') AND (holder IS NULL OR holder != ?)")
      .run(now, INTERRUPTED, holder).changes;
  }

  async claim(c: FireClaim): Promise<{ runId?: number; task: CronTask } | undefined> {
    return this.db
      .transaction(() => {
        const lease = this.leaseRow();
        if (!lease || lease.holder !== c.holder || lease.expiresAt <= c.now) return undefined;
        const task = this.task(c.taskId);
        if (!task || !task.enabled || task.lastCheckAt !== c.expectLastCheckAt) return undefined;
        let runId: number | undefined;
        for (const r of claimRows(c)) {
          const info = this.stmts.insertRun.run({ taskId: c.taskId, status: r.status, scheduledAt: r.scheduledAt, startedAt: r.startedAt, finishedAt: r.finishedAt, output: r.output, holder: c.holder });
          if (r.isRun) runId = Number(info.lastInsertRowid);
        }
        const executions = task.executions + (c.run?.status === 'running' ? 1 : 0);
        this.db.prepare('UPDATE tasks SET last_check_at = ?, executions = ?, enabled = ? WHERE id = ?').run(c.now, executions, c.disable ? 0 : 1, c.taskId);
        this.stmts.prune.run(c.taskId, c.taskId, c.runsKept);
        return { ...(runId !== undefined ? { runId } : {}), task: this.task(c.taskId)! };
      })
      .immediate();
  }

  async disableTask(id: string, now: number): Promise<void> {
    this.db.prepare('UPDATE tasks SET enabled = 0, updated_at = ? WHERE id = ?').run(now, id);
  }

  async finishRun(id: number, f: RunFinish): Promise<CronRun | undefined> {
    this.db
      .prepare('UPDATE runs SET status = ?, finished_at = ?, output = ?, error = ?, conversation_id = COALESCE(?, conversation_id) WHERE id = ?')
      .run(f.status, f.finishedAt, f.output ?? null, f.error ?? null, f.conversationId ?? null, id);
    return this.getRun(id);
  }

  async setRunConversation(id: number, conversationId: string): Promise<void> {
    this.db.prepare('UPDATE runs SET conversation_id = ? WHERE id = ?').run(conversationId, id);
  }
}
