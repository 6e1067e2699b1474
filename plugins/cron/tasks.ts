/**
 * Task management over the store, shared by the cron service (the tool, the gateway) and the
 * CLI (which works on the database directly, with or without a running `serve`). Input is
 * validated here, once, for every way in: a bad expression or time zone is refused with
 * croner's reason; a valid one is answered with its next fire times.
 *
 * The store is the SQLite file under the home, or PostgreSQL when a PostgreSQL URL is
 * configured (lib/database/url.ts); the PostgreSQL code (and knex, pg) loads only then.
 */
import path from 'node:path';
import { checkTimeZone, hostTimeZone, loadCroner, parseSchedule, ScheduleError, type Schedule } from './schedule.js';
import type { CronSettings } from './settings.js';
import type { CronStore } from './store.js';
import { SqliteCronStore } from './store-sqlite.js';
import { defaultName, issueText, TaskInputSchema, TaskPatchSchema, type CreatedBy, type CronRun, type CronTask } from './task-spec.js';

/** A refused request; `code` is what the gateway replies with. */
export class CronTaskError extends Error {
  constructor(
    readonly code: 'bad_request' | 'not_found' | 'conflict',
    message: string,
  ) {
    super(message);
  }
}

/** A task as lists show it: with its next fire times and its latest execution. */
export interface CronTaskView extends CronTask {
  /** Next fire time (epoch ms); null when the task is off or will not fire again. */
  nextFireAt: number | null;
  /** The next few fire times (epoch ms), also for a disabled task (what it would do). */
  nextFireTimes: number[];
  lastRun: CronRun | null;
}

export const PREVIEW_COUNT = 3;

/**
 * Open the cron database (croner loaded too): PostgreSQL at `postgresUrl` when one is given (see
 * configuredPostgresUrl), else the home's SQLite file `cron.file`.
 */
export async function openCronStore(home: string, settings: CronSettings, postgresUrl?: string): Promise<CronStore> {
  await loadCroner();
  if (postgresUrl) {
    const { PostgresCronStore } = await import('./store-postgres.js');
    return PostgresCronStore.open(postgresUrl, { poolMax: settings.poolMax, acquireTimeoutMs: Math.max(1, settings.busyTimeoutMs) });
  }
  return SqliteCronStore.open(path.resolve(home, settings.file), settings.busyTimeoutMs);
}

export class CronTasks {
  private readonly parsed = new Map<string, Schedule>();

  constructor(
    readonly store: CronStore,
    private readonly settings: () => CronSettings,
  ) {}

  /** The parsed schedule of a task (cached by expression and zone). Throws a ScheduleError. */
  schedule(task: Pick<CronTask, 'schedule' | 'timezone'>): Schedule {
    const key = `${task.timezone}\n${task.schedule}`;
    let s = this.parsed.get(key);
    if (!s) {
      s = parseSchedule(task.schedule, task.timezone);
      if (this.parsed.size > 1000) this.parsed.clear();
      this.parsed.set(key, s);
    }
    return s;
  }

  /** Check a schedule and say when it fires next; refused with the reason when invalid. */
  preview(schedule: string, timezone?: string, now = Date.now()): { schedule: string; timezone: string; next: number[] } {
    const s = this.checked(schedule, timezone ?? hostTimeZone(), now);
    return { schedule: s.expr, timezone: s.timezone, next: s.nextN(PREVIEW_COUNT, now) };
  }

  private checked(schedule: string, timezone: string, now: number): Schedule {
    let s: Schedule;
    try {
      checkTimeZone(timezone);
      s = this.schedule({ schedule, timezone });
    } catch (err) {
      throw new CronTaskError('bad_request', err instanceof ScheduleError ? err.message : String((err as Error).message));
    }
    if (s.next(now) === undefined) throw new CronTaskError('bad_request', s.oneShot ? `the time ${schedule} is in the past` : `the schedule "${schedule}" never fires`);
    return s;
  }

  async add(input: unknown, createdBy: CreatedBy, now = Date.now()): Promise<CronTaskView> {
    const r = TaskInputSchema.safeParse(input);
    if (!r.success) throw new CronTaskError('bad_request', issueText(r.error));
    const t = r.data;
    const s = this.checked(t.schedule, t.timezone ?? hostTimeZone(), now);
    let task: CronTask;
    try {
      task = await this.store.addTask(
        {
          name: t.name ?? defaultName(t.action),
          schedule: s.expr,
          timezone: s.timezone,
          action: t.action,
          enabled: t.enabled ?? true,
          maxExecutions: s.oneShot ? 1 : (t.maxExecutions ?? null),
          overlap: t.overlap ?? 'skip',
          missed: t.missed ?? 'skip',
          createdBy,
        },
        now,
        this.settings().maxTasks,
      );
    } catch (err) {
      throw new CronTaskError('conflict', (err as Error).message);
    }
    return this.view(task, undefined, now);
  }

  async update(idOrName: string, patch: unknown, now = Date.now()): Promise<CronTaskView> {
    const cur = await this.find(idOrName);
    const r = TaskPatchSchema.safeParse(patch);
    if (!r.success) throw new CronTaskError('bad_request', issueText(r.error));
    const p = r.data;
    if (p.schedule !== undefined || p.timezone !== undefined) {
      const s = this.checked(p.schedule ?? cur.schedule, p.timezone ?? cur.timezone, now);
      p.schedule = s.expr;
      p.timezone = s.timezone;
    }
    const updated = await this.store.updateTask(cur.id, p, now);
    if (!updated) throw new CronTaskError('not_found', `unknown task "${idOrName}"`);
    return this.view(updated, undefined, now);
  }

  async remove(idOrName: string): Promise<CronTask> {
    const cur = await this.find(idOrName);
    await this.store.removeTask(cur.id);
    return cur;
  }

  async find(idOrName: string): Promise<CronTask> {
    const t = await this.store.findTask(idOrName);
    if (!t) throw new CronTaskError('not_found', `unknown task "${idOrName}" (see: liveagent cron list)`);
    return t;
  }

  async list(now = Date.now()): Promise<CronTaskView[]> {
    const [last, tasks] = await Promise.all([this.store.lastRuns(), this.store.listTasks()]);
    return Promise.all(tasks.map((t) => this.view(t, last, now)));
  }

  async runs(idOrName: string, limit = 50): Promise<{ task: CronTask; runs: CronRun[] }> {
    const task = await this.find(idOrName);
    return { task, runs: await this.store.runs(task.id, Math.max(1, Math.min(limit, 1000))) };
  }

  async view(task: CronTask, lastRuns?: Map<string, CronRun>, now = Date.now()): Promise<CronTaskView> {
    let next: number[] = [];
    try {
      next = this.schedule(task).nextN(PREVIEW_COUNT, Math.max(now, task.lastCheckAt));
    } catch {
      /* a schedule this Node cannot read any more (time-zone data) shows no fire times */
    }
    const exhausted = task.maxExecutions !== null && task.executions >= task.maxExecutions;
    const lastRun = lastRuns ? (lastRuns.get(task.id) ?? null) : ((await this.store.runs(task.id, 1))[0] ?? null);
    return { ...task, nextFireAt: task.enabled && !exhausted ? (next[0] ?? null) : null, nextFireTimes: next, lastRun };
  }
}
