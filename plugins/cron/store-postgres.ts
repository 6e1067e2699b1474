/**
 * The cron store on PostgreSQL (a team server: several `serve` processes, possibly on different
 * machines, on one database). Tables `cron_tasks`, `cron_runs`, `cron_lease` and `cron_meta`,
 * created under an advisory lock by the first process; a knex pool of its own (lib/database/pg).
 *
 * Safety is that of the SQLite store, by row locks instead of a database-wide write lock: every
 * multi-statement change is one transaction; takeLease and claim lock the lease row
 * (SELECT … FOR UPDATE), so a claim and a takeover never interleave, and claim locks the task row
 * and checks it is unchanged, so a fire is recorded once at most, whichever process looks.
 *
 * "Another process committed something" (SQLite's data_version) is a change counter in
 * `cron_meta`, bumped by every change to tasks or runs as the last statement of its transaction
 * (so it is the last row lock taken: no lock cycles). The row lock also orders the counter
 * values by commit; a process remembers the values its own commits got, and any other value
 * between two looks is another process's change.
 */
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { openPgPool } from '../../lib/database/pg.js';
import { redactUrl } from '../../lib/database/url.js';
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

/** Any constant, the same in every process ('LAc1'). */
const SCHEMA_LOCK_KEY = 0x4c_41_63_31;

export const POSTGRES_SCHEMA = [
  `CREATE TABLE IF NOT EXISTS cron_tasks (
     id text PRIMARY KEY,
     name text NOT NULL,
     schedule text NOT NULL,
     timezone text NOT NULL,
     action text NOT NULL,
     enabled boolean NOT NULL,
     max_executions integer,
     executions integer NOT NULL DEFAULT 0,
     overlap text NOT NULL,
     missed text NOT NULL,
     created_by text NOT NULL,
     created_at bigint NOT NULL,
     updated_at bigint NOT NULL,
     last_check_at bigint NOT NULL
   )`,
  `CREATE TABLE IF NOT EXISTS cron_runs (
     id bigserial PRIMARY KEY,
     task_id text NOT NULL REFERENCES cron_tasks(id) ON DELETE CASCADE,
     status text NOT NULL,
     scheduled_at bigint,
     started_at bigint,
     finished_at bigint,
     conversation_id text,
     output text,
     error text,
     holder text
   )`,
  'CREATE INDEX IF NOT EXISTS cron_runs_by_task ON cron_runs (task_id, id)',
  'CREATE INDEX IF NOT EXISTS cron_runs_by_status ON cron_runs (status)',
  `CREATE TABLE IF NOT EXISTS cron_lease (
     name text PRIMARY KEY,
     holder text NOT NULL,
     expires_at bigint NOT NULL
   )`,
  `CREATE TABLE IF NOT EXISTS cron_meta (
     id integer PRIMARY KEY,
     version bigint NOT NULL
   )`,
  'INSERT INTO cron_meta (id, version) VALUES (1, 0) ON CONFLICT (id) DO NOTHING',
];

type Db = Knex | Knex.Transaction;

async function rows<T>(db: Db, sql: string, bindings: readonly unknown[] = []): Promise<T[]> {
  const r = (await db.raw(sql, bindings as Knex.RawBinding[])) as { rows: T[] };
  return r.rows;
}

const TASK_COLUMNS = 'id, name, schedule, timezone, action, enabled, max_executions, executions, overlap, missed, created_by, created_at, updated_at, last_check_at';
const RUN_INSERT = 'INSERT INTO cron_runs (task_id, status, scheduled_at, started_at, finished_at, output, holder) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id';

export interface PostgresStoreOptions {
  poolMax: number;
  acquireTimeoutMs: number;
}

export class PostgresCronStore implements CronStore {
  readonly backend = 'postgres' as const;
  /** Counter values of this process's own commits not yet looked past. */
  private readonly own = new Set<number>();
  private seen = -1;

  private constructor(
    readonly knex: Knex,
    readonly location: string,
  ) {}

  static async open(url: string, options: PostgresStoreOptions): Promise<PostgresCronStore> {
    const knex = await openPgPool(url, { ...options, schema: POSTGRES_SCHEMA, lockKey: SCHEMA_LOCK_KEY });
    return new PostgresCronStore(knex, redactUrl(url));
  }

  async close(): Promise<void> {
    await this.knex.destroy();
  }

  /**
   * A transaction that changes tasks or runs: the counter is bumped last (or first, to queue
   * writers: see addTask), unless `changed` says the transaction changed nothing, and remembered
   * as ours once committed.
   */
  private async change<T>(fn: (trx: Knex.Transaction) => Promise<T>, opts: { bumpFirst?: boolean; changed?: (result: T) => boolean } = {}): Promise<T> {
    let version: number | undefined;
    const bump = async (trx: Knex.Transaction) => {
      version = (await rows<{ version: number }>(trx, 'UPDATE cron_meta SET version = version + 1 WHERE id = 1 RETURNING version', []))[0]?.version;
    };
    const result = await this.knex.transaction(async (trx) => {
      if (opts.bumpFirst) await bump(trx);
      const out = await fn(trx);
      if (!opts.bumpFirst && (opts.changed?.(out) ?? true)) await bump(trx);
      return out;
    });
    // Before the first look (a process that never looks: the CLI, a chat) nothing needs remembering.
    if (version !== undefined && this.seen !== -1 && version > this.seen) this.own.add(version);
    return result;
  }

  async othersChanged(): Promise<boolean> {
    const version = (await rows<{ version: number }>(this.knex, 'SELECT version FROM cron_meta WHERE id = 1'))[0]?.version ?? 0;
    const before = this.seen;
    this.seen = version;
    if (before === -1 || version === before) {
      for (const v of this.own) if (v <= version) this.own.delete(v);
      return false;
    }
    let ours = 0;
    for (const v of this.own) {
      if (v > before && v <= version) ours++;
      if (v <= version) this.own.delete(v);
    }
    return ours < version - before;
  }

  async listTasks(): Promise<CronTask[]> {
    return (await rows<TaskRow>(this.knex, `SELECT ${TASK_COLUMNS} FROM cron_tasks ORDER BY created_at, id`)).map(toTask);
  }

  async getTask(id: string): Promise<CronTask | undefined> {
    return this.task(this.knex, id);
  }

  private async task(db: Db, id: string, lock = false): Promise<CronTask | undefined> {
    const row = (await rows<TaskRow>(db, `SELECT ${TASK_COLUMNS} FROM cron_tasks WHERE id = ?${lock ? ' FOR UPDATE' : ''}`, [id]))[0];
    return row ? toTask(row) : undefined;
  }

  async findTask(idOrName: string): Promise<CronTask | undefined> {
    const byId = await this.task(this.knex, idOrName);
    if (byId) return byId;
    const named = await rows<TaskRow>(this.knex, `SELECT ${TASK_COLUMNS} FROM cron_tasks WHERE name = ? LIMIT 2`, [idOrName]);
    return named.length === 1 ? toTask(named[0]!) : undefined;
  }

  async addTask(t: NewTask, now: number, maxTasks: number): Promise<CronTask> {
    const id = `t_${randomBytes(6).toString('hex')}`;
    // The counter row is locked first: adds queue, so the count check holds across processes.
    return this.change(
      async (trx) => {
        const n = (await rows<{ n: number }>(trx, 'SELECT COUNT(*)::int AS n FROM cron_tasks'))[0]!.n;
        if (n >= maxTasks) throw new Error(TOO_MANY_TASKS(maxTasks));
        const row = (
          await rows<TaskRow>(
            trx,
            `INSERT INTO cron_tasks (${TASK_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?) RETURNING ${TASK_COLUMNS}`,
            [id, t.name, t.schedule, t.timezone, JSON.stringify(t.action), t.enabled, t.maxExecutions, t.overlap, t.missed, t.createdBy, now, now, now],
          )
        )[0]!;
        return toTask(row);
      },
      { bumpFirst: true },
    );
  }

  async updateTask(id: string, patch: TaskPatch, now: number): Promise<CronTask | undefined> {
    return this.change(async (trx) => {
      const cur = await this.task(trx, id, true);
      if (!cur) return undefined;
      const { next, executions, lastCheckAt } = patched(cur, patch, now);
      const row = (
        await rows<TaskRow>(
          trx,
          `UPDATE cron_tasks SET name = ?, schedule = ?, timezone = ?, action = ?, enabled = ?, max_executions = ?, executions = ?, overlap = ?, missed = ?, updated_at = ?, last_check_at = ? WHERE id = ? RETURNING ${TASK_COLUMNS}`,
          [next.name, next.schedule, next.timezone, JSON.stringify(next.action), next.enabled, next.maxExecutions, executions, next.overlap, next.missed, now, lastCheckAt, id],
        )
      )[0];
      return row ? toTask(row) : undefined;
    }, { changed: Boolean });
  }

  async removeTask(id: string): Promise<boolean> {
    return this.change(async (trx) => (await rows<{ id: string }>(trx, 'DELETE FROM cron_tasks WHERE id = ? RETURNING id', [id])).length > 0, { changed: Boolean });
  }

  async runs(taskId: string, limit = 50): Promise<CronRun[]> {
    return (await rows<RunRow>(this.knex, 'SELECT * FROM cron_runs WHERE task_id = ? ORDER BY id DESC LIMIT ?', [taskId, limit])).map(toRun);
  }

  async getRun(id: number): Promise<CronRun | undefined> {
    const row = (await rows<RunRow>(this.knex, 'SELECT * FROM cron_runs WHERE id = ?', [id]))[0];
    return row ? toRun(row) : undefined;
  }

  async lastRuns(): Promise<Map<string, CronRun>> {
    const latest = await rows<RunRow>(this.knex, "SELECT DISTINCT ON (task_id) * FROM cron_runs WHERE status IN ('running', 'done', 'failed') ORDER BY task_id, id DESC");
    return new Map(latest.map((r) => [r.task_id, toRun(r)]));
  }

  async lease(): Promise<{ holder: string; expiresAt: number } | undefined> {
    return this.leaseRow(this.knex);
  }

  private async leaseRow(db: Db, lock = false): Promise<{ holder: string; expiresAt: number } | undefined> {
    const row = (await rows<{ holder: string; expires_at: number }>(db, `SELECT holder, expires_at FROM cron_lease WHERE name = ?${lock ? ' FOR UPDATE' : ''}`, [LEASE_NAME]))[0];
    return row ? { holder: row.holder, expiresAt: row.expires_at } : undefined;
  }

  async takeLease(holder: string, now: number, leaseMs: number): Promise<LeaseResult> {
    return this.knex.transaction(async (trx): Promise<LeaseResult> => {
      let cur = await this.leaseRow(trx, true);
      if (!cur) {
        // No row to lock yet: the insert decides (one of two processes starting together wins).
        const inserted = await rows(trx, 'INSERT INTO cron_lease (name, holder, expires_at) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING RETURNING name', [LEASE_NAME, holder, now + leaseMs]);
        if (inserted.length) return 'acquired';
        cur = await this.leaseRow(trx, true);
        if (!cur) throw new Error('the cron lease row vanished while it was being taken');
      }
      if (cur.holder !== holder && cur.expiresAt > now) return 'busy';
      await trx.raw('UPDATE cron_lease SET holder = ?, expires_at = ? WHERE name = ?', [holder, now + leaseMs, LEASE_NAME]);
      return cur.holder === holder && cur.expiresAt > now ? 'renewed' : 'acquired';
    });
  }

  async releaseLease(holder: string): Promise<void> {
    await this.knex.raw('DELETE FROM cron_lease WHERE name = ? AND holder = ?', [LEASE_NAME, holder]);
  }

  async failInterrupted(holder: string, now: number): Promise<number> {
    return this.change(async (trx) => {
      const failed = await rows(
        trx,
        "UPDATE cron_runs SET status = 'failed', finished_at = ?, error = COALESCE(error, ?) WHERE status IN ('running', 'pending') AND (holder IS NULL OR holder <> ?) RETURNING id",
        [now, INTERRUPTED, holder],
      );
      return failed.length;
    }, { changed: (n) => n > 0 });
  }

  async claim(c: FireClaim): Promise<{ runId?: number; task: CronTask } | undefined> {
    return this.change(async (trx) => {
      // Lease first, then the task: the order takeLease and every claim lock them in.
      const lease = await this.leaseRow(trx, true);
      if (!lease || lease.holder !== c.holder || lease.expiresAt <= c.now) return undefined;
      const task = await this.task(trx, c.taskId, true);
      if (!task || !task.enabled || task.lastCheckAt !== c.expectLastCheckAt) return undefined;
      let runId: number | undefined;
      for (const r of claimRows(c)) {
        const id = (await rows<{ id: number }>(trx, RUN_INSERT, [c.taskId, r.status, r.scheduledAt, r.startedAt, r.finishedAt, r.output, c.holder]))[0]!.id;
        if (r.isRun) runId = id;
      }
      const executions = task.executions + (c.run?.status === 'running' ? 1 : 0);
      const row = (await rows<TaskRow>(trx, `UPDATE cron_tasks SET last_check_at = ?, executions = ?, enabled = ? WHERE id = ? RETURNING ${TASK_COLUMNS}`, [c.now, executions, !c.disable, c.taskId]))[0]!;
      await trx.raw(
        "DELETE FROM cron_runs WHERE task_id = ? AND status NOT IN ('running', 'pending') AND id <= (SELECT id FROM cron_runs WHERE task_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?)",
        [c.taskId, c.taskId, c.runsKept],
      );
      return { ...(runId !== undefined ? { runId } : {}), task: toTask(row) };
    }, { changed: Boolean });
  }

  async disableTask(id: string, now: number): Promise<void> {
    await this.change((trx) => trx.raw('UPDATE cron_tasks SET enabled = false, updated_at = ? WHERE id = ?', [now, id]));
  }

  async finishRun(id: number, f: RunFinish): Promise<CronRun | undefined> {
    const row = await this.change(
      async (trx) =>
        (
          await rows<RunRow>(trx, 'UPDATE cron_runs SET status = ?, finished_at = ?, output = ?, error = ?, conversation_id = COALESCE(?, conversation_id) WHERE id = ? RETURNING *', [
            f.status,
            f.finishedAt,
            f.output ?? null,
            f.error ?? null,
            f.conversationId ?? null,
            id,
          ])
        )[0],
    );
    return row ? toRun(row) : undefined;
  }

  async setRunConversation(id: number, conversationId: string): Promise<void> {
    await this.change((trx) => trx.raw('UPDATE cron_runs SET conversation_id = ? WHERE id = ?', [conversationId, id]));
  }
}
