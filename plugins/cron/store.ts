/**
 * The cron database: `$LIVEAGENT_HOME/cron.db` (its own file: the history store offers no way
 * for another plugin to own tables in its database). One better-sqlite3 connection in WAL mode
 * with a busy timeout, shared by every process on the home: the CLI writes tasks directly,
 * `serve` runs them. Every multi-statement write is one BEGIN IMMEDIATE transaction, so two
 * processes never interleave half a change; `PRAGMA data_version` tells a process that another
 * one committed something.
 */
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type BetterSqlite3 from 'better-sqlite3';
import type { CreatedBy, CronAction, CronRun, CronTask, RunStatus, TaskPatch } from './task-spec.js';

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

interface TaskRow {
  id: string;
  name: string;
  schedule: string;
  timezone: string;
  action: string;
  enabled: number;
  max_executions: number | null;
  executions: number;
  overlap: string;
  missed: string;
  created_by: string;
  created_at: number;
  updated_at: number;
  last_check_at: number;
}

interface RunRow {
  id: number;
  task_id: string;
  status: string;
  scheduled_at: number | null;
  started_at: number | null;
  finished_at: number | null;
  conversation_id: string | null;
  output: string | null;
  error: string | null;
  holder: string | null;
}

const toTask = (r: TaskRow): CronTask => ({
  id: r.id,
  name: r.name,
  schedule: r.schedule,
  timezone: r.timezone,
  action: JSON.parse(r.action) as CronAction,
  enabled: r.enabled === 1,
  maxExecutions: r.max_executions,
  executions: r.executions,
  overlap: r.overlap === 'allow' ? 'allow' : 'skip',
  missed: r.missed === 'once' ? 'once' : 'skip',
  createdBy: r.created_by as CreatedBy,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  lastCheckAt: r.last_check_at,
});

const toRun = (r: RunRow): CronRun => ({
  id: r.id,
  taskId: r.task_id,
  status: r.status as RunStatus,
  scheduledAt: r.scheduled_at,
  startedAt: r.started_at,
  finishedAt: r.finished_at,
  conversationId: r.conversation_id,
  output: r.output,
  error: r.error,
  holder: r.holder,
});

/** A task as the store writes it (validated and normalized by the caller). */
export interface NewTask {
  name: string;
  schedule: string;
  timezone: string;
  action: CronAction;
  enabled: boolean;
  maxExecutions: number | null;
  overlap: 'skip' | 'allow';
  missed: 'skip' | 'once';
  createdBy: CreatedBy;
}

/** What one fire decided, written in one transaction by {@link CronStore.claim}. */
export interface FireClaim {
  taskId: string;
  holder: string;
  now: number;
  /** The task's lastCheckAt the decision was made from: a task changed meanwhile is not claimed. */
  expectLastCheckAt: number;
  missed: Array<{ scheduledAt: number; output: string }>;
  /** The run to start (`running`), or a fire recorded `skipped`. */
  run?: { scheduledAt: number; status: 'running' | 'skipped'; output?: string };
  /** Turn the task off (its last execution, or a one-shot that has fired). */
  disable: boolean;
  runsKept: number;
}

export const LEASE_NAME = 'scheduler';

export class CronStore {
  private readonly stmts;

  private constructor(readonly db: BetterSqlite3.Database, readonly file: string) {
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

  static async open(file: string, busyTimeoutMs: number): Promise<CronStore> {
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
      return new CronStore(db, file);
    } catch (err) {
      db.close();
      throw err;
    }
  }

  close(): void {
    if (this.db.open) this.db.close();
  }

  /** Changes when another connection commits (never for this connection's own writes). */
  dataVersion(): number {
    return this.db.pragma('data_version', { simple: true }) as number;
  }

  listTasks(): CronTask[] {
    return this.stmts.tasks.all().map(toTask);
  }

  getTask(id: string): CronTask | undefined {
    const row = this.stmts.task.get(id);
    return row ? toTask(row) : undefined;
  }

  /** A task by id, else by name when exactly one task has it. */
  findTask(idOrName: string): CronTask | undefined {
    const byId = this.stmts.task.get(idOrName);
    if (byId) return toTask(byId);
    const rows = this.stmts.byName.all(idOrName);
    return rows.length === 1 ? toTask(rows[0]!) : undefined;
  }

  addTask(t: NewTask, now: number, maxTasks: number): CronTask {
    const id = `t_${randomBytes(6).toString('hex')}`;
    return this.db
      .transaction(() => {
        if (this.stmts.count.get()!.n >= maxTasks) throw new Error(`there are already ${maxTasks} tasks (cron.maxTasks); remove one first`);
        this.db
          .prepare(
            'INSERT INTO tasks (id, name, schedule, timezone, action, enabled, max_executions, executions, overlap, missed, created_by, created_at, updated_at, last_check_at) VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?)',
          )
          .run(id, t.name, t.schedule, t.timezone, JSON.stringify(t.action), t.enabled ? 1 : 0, t.maxExecutions, t.overlap, t.missed, t.createdBy, now, now, now);
        return this.getTask(id)!;
      })
      .immediate();
  }

  /**
   * Change a task. A new schedule, time zone or re-enabling starts counting fire times from now
   * (what passed under the old schedule, or while it was off, is not "missed").
   */
  updateTask(id: string, patch: TaskPatch, now: number): CronTask | undefined {
    return this.db
      .transaction(() => {
        const cur = this.getTask(id);
        if (!cur) return undefined;
        const next = { ...cur, ...Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined)) } as CronTask;
        const restart = next.schedule !== cur.schedule || next.timezone !== cur.timezone || (next.enabled && !cur.enabled);
        // Re-enabling a task that used up its executions gives it a fresh count.
        const executions = next.enabled && !cur.enabled && cur.maxExecutions !== null && cur.executions >= cur.maxExecutions && patch.maxExecutions === undefined ? 0 : cur.executions;
        this.db
          .prepare('UPDATE tasks SET name = ?, schedule = ?, timezone = ?, action = ?, enabled = ?, max_executions = ?, executions = ?, overlap = ?, missed = ?, updated_at = ?, last_check_at = ? WHERE id = ?')
          .run(next.name, next.schedule, next.timezone, JSON.stringify(next.action), next.enabled ? 1 : 0, next.maxExecutions, executions, next.overlap, next.missed, now, restart ? now : cur.lastCheckAt, id);
        return this.getTask(id);
      })
      .immediate();
  }

  removeTask(id: string): boolean {
    return this.db.prepare('DELETE FROM tasks WHERE id = ?').run(id).changes > 0;
  }

  runs(taskId: string, limit = 50): CronRun[] {
    return this.stmts.runs.all(taskId, limit).map(toRun);
  }

  getRun(id: number): CronRun | undefined {
    const row = this.stmts.run.get(id);
    return row ? toRun(row) : undefined;
  }

  /** The latest execution (running, done or failed) of every task that has one. */
  lastRuns(): Map<string, CronRun> {
    return new Map(this.stmts.lastRuns.all().map((r) => [r.task_id, toRun(r)]));
  }

  lease(): { holder: string; expiresAt: number } | undefined {
    const row = this.stmts.lease.get(LEASE_NAME);
    return row ? { holder: row.holder, expiresAt: row.expires_at } : undefined;
  }

  /**
   * Take or renew the scheduler lease. `acquired` when it was free, expired or someone else's
   * that lapsed (the caller then fails the runs the previous holder left `running`); `renewed`
   * when it was already ours; `busy` when another holder's lease is still valid.
   */
  takeLease(holder: string, now: number, leaseMs: number): 'acquired' | 'renewed' | 'busy' {
    return this.db
      .transaction(() => {
        const cur = this.lease();
        if (cur && cur.holder !== holder && cur.expiresAt > now) return 'busy' as const;
        this.db.prepare('INSERT INTO lease (name, holder, expires_at) VALUES (?, ?, ?) ON CONFLICT(name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at').run(LEASE_NAME, holder, now + leaseMs);
        return cur?.holder === holder && cur.expiresAt > now ? ('renewed' as const) : ('acquired' as const);
      })
      .immediate();
  }

  /** Give the lease up (at shutdown), so another host can take over at once. */
  releaseLease(holder: string): void {
    this.db.prepare('DELETE FROM lease WHERE name = ? AND holder = ?').run(LEASE_NAME, holder);
  }

  /** Runs left `running` or `pending` by another holder (a crashed host) become failed: never lost, never left running. */
  failInterrupted(holder: string, now: number): number {
    return this.db
      .prepare(
        "UPDATE runs SET status = 'failed', finished_at = ?, error = COALESCE(error, 'interrupted: the host running it stopped before it finished') WHERE status IN ('running', 'pending') AND (holder IS NULL OR holder != ?)",
      )
      .run(now, holder).changes;
  }

  /** Record one fire (see {@link FireClaim}); undefined when the lease is no longer ours or the task changed meanwhile. */
  claim(c: FireClaim): { runId?: number; task: CronTask } | undefined {
    return this.db
      .transaction(() => {
        const lease = this.lease();
        if (!lease || lease.holder !== c.holder || lease.expiresAt <= c.now) return undefined;
        const task = this.getTask(c.taskId);
        if (!task || !task.enabled || task.lastCheckAt !== c.expectLastCheckAt) return undefined;
        for (const m of c.missed) this.stmts.insertRun.run({ taskId: c.taskId, status: 'missed', scheduledAt: m.scheduledAt, startedAt: null, finishedAt: c.now, output: m.output, holder: c.holder });
        let runId: number | undefined;
        if (c.run) {
          const running = c.run.status === 'running';
          const info = this.stmts.insertRun.run({
            taskId: c.taskId,
            status: c.run.status,
            scheduledAt: c.run.scheduledAt,
            startedAt: running ? c.now : null,
            finishedAt: running ? null : c.now,
            output: c.run.output ?? null,
            holder: c.holder,
          });
          if (running) runId = Number(info.lastInsertRowid);
        }
        const executions = task.executions + (c.run?.status === 'running' ? 1 : 0);
        this.db.prepare('UPDATE tasks SET last_check_at = ?, executions = ?, enabled = ? WHERE id = ?').run(c.now, executions, c.disable ? 0 : 1, c.taskId);
        this.stmts.prune.run(c.taskId, c.taskId, c.runsKept);
        return { ...(runId !== undefined ? { runId } : {}), task: this.getTask(c.taskId)! };
      })
      .immediate();
  }

  /** Turn a task off (a one-shot whose time passed, an exhausted task). */
  disableTask(id: string, now: number): void {
    this.db.prepare('UPDATE tasks SET enabled = 0, updated_at = ? WHERE id = ?').run(now, id);
  }

  finishRun(id: number, f: { status: 'done' | 'failed'; finishedAt: number; output?: string | null; error?: string | null; conversationId?: string | null }): CronRun | undefined {
    this.db
      .prepare('UPDATE runs SET status = ?, finished_at = ?, output = ?, error = ?, conversation_id = COALESCE(?, conversation_id) WHERE id = ?')
      .run(f.status, f.finishedAt, f.output ?? null, f.error ?? null, f.conversationId ?? null, id);
    return this.getRun(id);
  }

  setRunConversation(id: number, conversationId: string): void {
    this.db.prepare('UPDATE runs SET conversation_id = ? WHERE id = ?').run(conversationId, id);
  }
}
