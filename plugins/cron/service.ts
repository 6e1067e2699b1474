/**
 * The `cron` service: what hosts and other plugins use. `start()` makes this host run the
 * scheduler (the server host calls it after boot; the chat CLI never does); everything else
 * manages tasks and works in every host. Other plugins `import type { CronService }` and get it
 * with `ctx.service<CronService>(CRON_SERVICE)`.
 */
import type { Disposable } from '../../plugin-api.js';
import type { CronChange } from './scheduler.js';
import type { CronTaskView } from './tasks.js';
import type { CreatedBy, CronRun, CronTask } from './task-spec.js';

export type { CronChange } from './scheduler.js';
export type { CronTaskView } from './tasks.js';
export type { CronRun, CronTask, CronAction, TaskInput, TaskPatch, RunStatus } from './task-spec.js';

/** The key the service is provided under. */
export const CRON_SERVICE = 'cron';

export interface CronService {
  /**
   * Run the scheduler in this host: take the lease when it is free (else stand by and take it
   * over once it lapses), fail the runs a crashed host left running, catch up missed fire times,
   * then fire tasks until shutdown. Idempotent. Off when `cron.schedulerEnabled` is false.
   */
  start(): Promise<void>;
  /** True while this host holds the scheduler lease. */
  isScheduling(): boolean;
  /** Every task, with next fire times and the latest execution. */
  listTasks(): Promise<CronTaskView[]>;
  /** Validate and store a task (see TaskInput); refused with a CronTaskError naming the problem. */
  addTask(input: unknown, createdBy: CreatedBy): Promise<CronTaskView>;
  /** Change a task by id (or unique name). */
  updateTask(idOrName: string, patch: unknown): Promise<CronTaskView>;
  /** Remove a task and its runs; resolves to what was removed. Refused (not_found) when unknown. */
  removeTask(idOrName: string): Promise<CronTask>;
  /** A task's runs, newest first. */
  runs(idOrName: string, limit?: number): Promise<{ task: CronTask; runs: CronRun[] }>;
  /** Check a schedule: its next fire times, or a CronTaskError with croner's reason. */
  preview(schedule: string, timezone?: string): Promise<{ schedule: string; timezone: string; next: number[] }>;
  /** Task changes (from any process) and run starts and ends (in this host). */
  onChange(listener: (change: CronChange) => void): Disposable;
}
