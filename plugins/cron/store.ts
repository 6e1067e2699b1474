/**
 * The cron store: what the tasks, the scheduler, the service and the CLI need from the database,
 * implemented twice: the embedded SQLite file under the home (store-sqlite.ts, the default) and
 * PostgreSQL (store-postgres.ts, when a PostgreSQL URL is configured: every process of a team
 * server shares the tasks, and the lease makes one of them run them). The interface is async
 * because PostgreSQL is; the SQLite store stays synchronous inside.
 *
 * Both keep the same guarantees: every multi-statement change is one transaction, a fire is
 * claimed only while the lease is ours and the task unchanged (so no fire runs twice, whatever
 * the clocks), and `othersChanged` tells the scheduler another process committed something.
 */
import type { CreatedBy, CronAction, CronRun, CronTask, RunStatus, TaskPatch } from './task-spec.js';

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

export interface RunFinish {
  status: 'done' | 'failed';
  finishedAt: number;
  output?: string | null;
  error?: string | null;
  conversationId?: string | null;
}

export type LeaseResult = 'acquired' | 'renewed' | 'busy';

export const LEASE_NAME = 'scheduler';

export const TOO_MANY_TASKS = (maxTasks: number) => `there are already ${maxTasks} tasks (cron.maxTasks); remove one first`;

export const INTERRUPTED = 'interrupted: the host running it stopped before it finished';

export interface CronStore {
  readonly backend: 'sqlite' | 'postgres';
  /** Where the tasks live (a file, or the URL without its password), for logs. */
  readonly location: string;
  close(): Promise<void>;
  /** True when another process committed a change since the previous call (false on the first). */
  othersChanged(): Promise<boolean>;
  listTasks(): Promise<CronTask[]>;
  getTask(id: string): Promise<CronTask | undefined>;
  /** A task by id, else by name when exactly one task has it. */
  findTask(idOrName: string): Promise<CronTask | undefined>;
  /** Refused (throws TOO_MANY_TASKS) when the store already holds `maxTasks`. */
  addTask(t: NewTask, now: number, maxTasks: number): Promise<CronTask>;
  /**
   * Change a task. A new schedule, time zone or re-enabling starts counting fire times from now
   * (what passed under the old schedule, or while it was off, is not "missed").
   */
  updateTask(id: string, patch: TaskPatch, now: number): Promise<CronTask | undefined>;
  /** Remove a task and its runs. */
  removeTask(id: string): Promise<boolean>;
  /** A task's runs, newest first. */
  runs(taskId: string, limit?: number): Promise<CronRun[]>;
  getRun(id: number): Promise<CronRun | undefined>;
  /** The latest execution (running, done or failed) of every task that has one. */
  lastRuns(): Promise<Map<string, CronRun>>;
  lease(): Promise<{ holder: string; expiresAt: number } | undefined>;
  /**
   * Take or renew the scheduler lease. `acquired` when it was free, expired or someone else's
   * that lapsed (the caller then fails the runs the previous holder left `running`); `renewed`
   * when it was already ours; `busy` when another holder's lease is still valid.
   */
  takeLease(holder: string, now: number, leaseMs: number): Promise<LeaseResult>;
  /** Give the lease up (at shutdown), so another host can take over at once. */
  releaseLease(holder: string): Promise<void>;
  /** Runs left `running` or `pending` by another holder (a crashed host) become failed: never lost, never left running. */
  failInterrupted(holder: string, now: number): Promise<number>;
  /** Record one fire (see {@link FireClaim}); undefined when the lease is no longer ours or the task changed meanwhile. */
  claim(c: FireClaim): Promise<{ runId?: number; task: CronTask } | undefined>;
  /** Turn a task off (a one-shot whose time passed, an exhausted task). */
  disableTask(id: string, now: number): Promise<void>;
  finishRun(id: number, f: RunFinish): Promise<CronRun | undefined>;
  setRunConversation(id: number, conversationId: string): Promise<void>;
}

/** A tasks row as both databases return it (SQLite has no boolean: `enabled` is 0 or 1 there). */
export interface TaskRow {
  id: string;
  name: string;
  schedule: string;
  timezone: string;
  action: string;
  enabled: number | boolean;
  max_executions: number | null;
  executions: number;
  overlap: string;
  missed: string;
  created_by: string;
  created_at: number;
  updated_at: number;
  last_check_at: number;
}

export interface RunRow {
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

export const toTask = (r: TaskRow): CronTask => ({
  id: r.id,
  name: r.name,
  schedule: r.schedule,
  timezone: r.timezone,
  action: JSON.parse(r.action) as CronAction,
  enabled: r.enabled === 1 || r.enabled === true,
  maxExecutions: r.max_executions,
  executions: r.executions,
  overlap: r.overlap === 'allow' ? 'allow' : 'skip',
  missed: r.missed === 'once' ? 'once' : 'skip',
  createdBy: r.created_by as CreatedBy,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  lastCheckAt: r.last_check_at,
});

export const toRun = (r: RunRow): CronRun => ({
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

/** The row values of a task after `patch` (the rules of {@link CronStore.updateTask}, shared by both stores). */
export function patched(cur: CronTask, patch: TaskPatch, now: number): { next: CronTask; executions: number; lastCheckAt: number } {
  const next = { ...cur, ...Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined)) } as CronTask;
  const restart = next.schedule !== cur.schedule || next.timezone !== cur.timezone || (next.enabled && !cur.enabled);
  // Re-enabling a task that used up its executions gives it a fresh count.
  const executions = next.enabled && !cur.enabled && cur.maxExecutions !== null && cur.executions >= cur.maxExecutions && patch.maxExecutions === undefined ? 0 : cur.executions;
  return { next, executions, lastCheckAt: restart ? now : cur.lastCheckAt };
}

/** The runs a claim inserts, in order: the missed fire times, then the run or skipped fire. */
export function claimRows(c: FireClaim): Array<{ status: RunStatus; scheduledAt: number; startedAt: number | null; finishedAt: number | null; output: string | null; isRun: boolean }> {
  const rows: ReturnType<typeof claimRows> = c.missed.map((m) => ({ status: 'missed', scheduledAt: m.scheduledAt, startedAt: null, finishedAt: c.now, output: m.output, isRun: false }));
  if (c.run) {
    const running = c.run.status === 'running';
    rows.push({ status: c.run.status, scheduledAt: c.run.scheduledAt, startedAt: running ? c.now : null, finishedAt: running ? null : c.now, output: c.run.output ?? null, isRun: running });
  }
  return rows;
}
