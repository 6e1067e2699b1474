/**
 * Task management over the store, shared by the cron service (the tool, the gateway) and the
 * CLI (which works on the database directly, with or without a running `serve`). Input is
 * validated here, once, for every way in: a bad expression or time zone is refused with
 * croner's reason; a valid one is answered with its next fire times.
 */
import path from 'node:path';
import { checkTimeZone, hostTimeZone, loadCroner, parseSchedule, ScheduleError, type Schedule } from './schedule.js';
import type { CronSettings } from './settings.js';
import { CronStore } from './store.js';
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

/** Open the database of a home (croner loaded too). */
export async function openCronStore(home: string, settings: CronSettings): Promise<CronStore> {
  await loadCroner();
  return CronStore.open(path.resolve(home, settings.file), settings.busyTimeoutMs);
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

  add(input: unknown, createdBy: CreatedBy, now = Date.now()): CronTaskView {
    const r = TaskInputSchema.safeParse(input);
    if (!r.success) throw new CronTaskError('bad_request', issueText(r.error));
    const t = r.data;
    const s = this.checked(t.schedule, t.timezone ?? hostTimeZone(), now);
    let task: CronTask;
    try {
      task = this.store.addTask(
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

  update(idOrName: string, patch: unknown, now = Date.now()): CronTaskView {
    const cur = this.find(idOrName);
    const r = TaskPatchSchema.safeParse(patch);
    if (!r.success) throw new CronTaskError('bad_request', issueText(r.error));
    const p = r.data;
    if (p.schedule !== undefined || p.timezone !== undefined) {
      const s = this.checked(p.schedule ?? cur.schedule, p.timezone ?? cur.timezone, now);
      p.schedule = s.expr;
      p.timezone = s.timezone;
    }
    const updated = this.store.updateTask(cur.id, p, now);
    if (!updated) throw new CronTaskError('not_found', `unknown task "${idOrName}"`);
    return this.view(updated, undefined, now);
  }

  remove(idOrName: string): CronTask {
    const cur = this.find(idOrName);
    this.store.removeTask(cur.id);
    return cur;
  }

  find(idOrName: string): CronTask {
    const t = this.store.findTask(idOrName);
    if (!t) throw new CronTaskError('not_found', `unknown task "${idOrName}" (see: liveagent cron list)`);
    return t;
  }

  list(now = Date.now()): CronTaskView[] {
    const last = this.store.lastRuns();
    return this.store.listTasks().map((t) => this.view(t, last, now));
  }

  runs(idOrName: string, limit = 50): { task: CronTask; runs: CronRun[] } {
    const task = this.find(idOrName);
    return { task, runs: this.store.runs(task.id, Math.max(1, Math.min(limit, 1000))) };
  }

  view(task: CronTask, lastRuns?: Map<string, CronRun>, now = Date.now()): CronTaskView {
    let next: number[] = [];
    try {
      next = this.schedule(task).nextN(PREVIEW_COUNT, Math.max(now, task.lastCheckAt));
    } catch {
      /* a schedule this Node cannot read any more (time-zone data) shows no fire times */
    }
    const exhausted = task.maxExecutions !== null && task.executions >= task.maxExecutions;
    const lastRun = lastRuns ? (lastRuns.get(task.id) ?? null) : (this.store.runs(task.id, 1)[0] ?? null);
    return { ...task, nextFireAt: task.enabled && !exhausted ? (next[0] ?? null) : null, nextFireTimes: next, lastRun };
  }
}
