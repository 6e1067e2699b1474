/**
 * The scheduler: runs in one host per database (`liveagent serve`: per home with the SQLite
 * file, per team server with PostgreSQL), never in `liveagent chat`.
 *
 * Exclusivity: a lease row in the database (holder id + expiry), renewed every `leaseRenewMs`;
 * a host whose lease lapsed (crashed, frozen) is replaced by the next one to look. Every fire is
 * claimed in one transaction that checks the lease is still ours and the task unchanged, so two
 * hosts never both run a fire, and a CLI editing a task at that moment is never overwritten.
 *
 * Time: each task remembers up to when its fire times were handled (`lastCheckAt`). A wake-up
 * (a timer at the next fire time, or the poll) handles every fire time since: the newest one
 * runs when it is on time (within `lateToleranceMs`), earlier ones are recorded `missed`. Fire
 * times found late (the host was down or asleep) follow the task's missed-run policy: `once`
 * runs once now and records the rest missed; `skip` records them all missed. A fire while the
 * previous run still goes is recorded `skipped` (overlap `skip`). One failing task never stops
 * the others: each is checked and run on its own, its failures logged.
 *
 * One look at a time: a wake-up while a look is under way (the store is async) asks for another
 * right after it, never a second one alongside.
 */
import type { Logger, RuntimeApi } from '../../plugin-api.js';
import type { HostProcesses } from '../../lib/tool-shared/process-records.js';
import { executeTask } from './executors.js';
import type { CronSettings } from './settings.js';
import type { CronTasks } from './tasks.js';
import type { CronRun, CronTask } from './task-spec.js';

export type CronChange = { kind: 'tasks' } | { kind: 'run'; run: CronRun };

export interface SchedulerDeps {
  tasks: CronTasks;
  settings: () => CronSettings;
  holder: string;
  runtime: RuntimeApi;
  home: string;
  records?: HostProcesses;
  logger: Logger;
  emit(change: CronChange): void;
}

const fmt = (t: number) => new Date(t).toISOString();

export class Scheduler {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private holding = false;
  private lastRenew = 0;
  /** The look under way, and whether another was asked for meanwhile. */
  private looking: Promise<void> | undefined;
  private again = false;
  private readonly abort = new AbortController();
  /** Runs in progress, by task. */
  private readonly active = new Map<string, Set<Promise<void>>>();
  /** Tasks whose schedule failed to parse, logged once each. */
  private readonly broken = new Set<string>();

  constructor(private readonly d: SchedulerDeps) {}

  get isHolder(): boolean {
    return this.holding;
  }

  start(): void {
    this.wake();
  }

  /** Look again now (after this process changed a task). */
  poke(): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.wake(), 0);
    this.timer.unref();
  }

  /** Stop firing, stop the runs in progress (they are recorded failed) and give the lease up. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    clearTimeout(this.timer);
    this.abort.abort();
    await this.looking;
    await Promise.allSettled([...this.active.values()].flatMap((s) => [...s]));
    if (this.holding) {
      try {
        await this.d.tasks.store.releaseLease(this.d.holder);
      } catch (err) {
        this.d.logger.warn(`could not release the scheduler lease: ${(err as Error).message}`);
      }
    }
    this.holding = false;
  }

  private wake(): void {
    if (this.stopped) return;
    if (this.looking) {
      this.again = true;
      return;
    }
    clearTimeout(this.timer);
    this.looking = this.look().finally(() => {
      this.looking = undefined;
      if (this.again && !this.stopped) {
        this.again = false;
        this.poke();
      }
    });
  }

  private async look(): Promise<void> {
    const s = this.d.settings();
    let next = Date.now() + s.pollIntervalMs;
    try {
      next = Math.min(next, await this.tick(Date.now(), s));
    } catch (err) {
      // The database was busy past its timeout, unreachable, or closed: try again at the next poll.
      this.d.logger.warn(`cron scheduler: ${(err as Error).message}`);
    }
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.wake(), Math.max(1, next - Date.now()));
    this.timer.unref();
  }

  /** One look; returns when to look next (epoch ms). */
  private async tick(now: number, s: CronSettings): Promise<number> {
    const store = this.d.tasks.store;
    if (await store.othersChanged()) this.d.emit({ kind: 'tasks' });
    await this.lease(now, s);
    if (!this.holding) return now + s.pollIntervalMs;
    let wakeAt = this.lastRenew + s.leaseRenewMs;
    for (const task of await store.listTasks()) {
      if (!task.enabled) continue;
      if (this.stopped) break;
      try {
        const at = await this.check(task, now, s);
        if (at !== undefined) wakeAt = Math.min(wakeAt, at);
      } catch (err) {
        this.d.logger.error(`cron task ${task.id} (${task.name}): ${(err as Error).message}`);
      }
    }
    return wakeAt;
  }

  private async lease(now: number, s: CronSettings): Promise<void> {
    if (this.holding && now - this.lastRenew < s.leaseRenewMs) return;
    const store = this.d.tasks.store;
    const r = await store.takeLease(this.d.holder, now, s.leaseMs);
    if (r === 'busy') {
      if (this.holding) this.d.logger.warn('cron: another host took the scheduler lease; this one stops firing tasks');
      this.holding = false;
      return;
    }
    if (r === 'acquired') {
      const failed = await store.failInterrupted(this.d.holder, now);
      this.d.logger.info(`cron: this host runs the scheduled tasks${failed ? ` (${failed} interrupted run${failed === 1 ? '' : 's'} recorded failed)` : ''}`);
      if (failed) this.d.emit({ kind: 'tasks' });
    }
    this.holding = true;
    this.lastRenew = now;
  }

  /** Handle a task's due fire times; returns its next fire time. */
  private async check(task: CronTask, now: number, s: CronSettings): Promise<number | undefined> {
    const store = this.d.tasks.store;
    let schedule;
    try {
      schedule = this.d.tasks.schedule(task);
      this.broken.delete(task.id);
    } catch (err) {
      if (!this.broken.has(task.id)) this.d.logger.error(`cron task ${task.id} has a schedule that no longer parses: ${(err as Error).message}`);
      this.broken.add(task.id);
      return undefined;
    }
    const exhausted = task.maxExecutions !== null && task.executions >= task.maxExecutions;
    const due = schedule.between(task.lastCheckAt, now, s.missedRecordLimit + 1);
    if (due.count === 0 || exhausted) {
      const next = schedule.next(Math.max(now, task.lastCheckAt));
      // Nothing will ever fire again (a one-shot whose time was handled, or no executions left).
      if (next === undefined || exhausted) {
        await store.disableTask(task.id, now);
        this.d.emit({ kind: 'tasks' });
        return undefined;
      }
      return next;
    }
    const latest = due.times.at(-1)!;
    const late = now - latest > s.lateToleranceMs;
    const runAt = !late || task.missed === 'once' ? latest : undefined;
    const missedTimes = due.times.filter((t) => t !== runAt).slice(-s.missedRecordLimit);
    const missedTotal = due.count - (runAt !== undefined ? 1 : 0);
    const why = (t: number) => (now - t > s.lateToleranceMs ? 'missed: no scheduler was running at that time' : 'missed: a later fire time came before this one was handled');
    const missed = missedTimes.map((t) => ({ scheduledAt: t, output: why(t) }));
    const unlisted = missedTotal - missed.length;
    if (unlisted > 0 && missed.length) missed[0]!.output += `; ${due.capped ? 'more than ' : ''}${unlisted} earlier missed fire time${unlisted === 1 ? '' : 's'} since ${fmt(task.lastCheckAt)} not listed`;
    const busy = (this.active.get(task.id)?.size ?? 0) > 0;
    let run: { scheduledAt: number; status: 'running' | 'skipped'; output?: string } | undefined;
    if (runAt !== undefined) {
      run = busy && task.overlap === 'skip' ? { scheduledAt: runAt, status: 'skipped', output: 'skipped: the previous run is still in progress' } : { scheduledAt: runAt, status: 'running', ...(late ? { output: `catch-up run for ${fmt(runAt)} (missed while no scheduler ran)` } : {}) };
    }
    const executions = task.executions + (run?.status === 'running' ? 1 : 0);
    const disable = schedule.oneShot || (task.maxExecutions !== null && executions >= task.maxExecutions);
    const claimed = await store.claim({ taskId: task.id, holder: this.d.holder, now, expectLastCheckAt: task.lastCheckAt, missed, ...(run ? { run } : {}), disable, runsKept: s.runsKept });
    if (!claimed) return undefined; // the lease lapsed or the task changed meanwhile: the next look re-reads it
    this.d.emit({ kind: 'tasks' });
    if (claimed.runId !== undefined) this.launch(claimed.task, claimed.runId, s);
    return disable ? undefined : schedule.next(now);
  }

  private launch(task: CronTask, runId: number, s: CronSettings): void {
    const store = this.d.tasks.store;
    const p = (async () => {
      const started = await store.getRun(runId).catch(() => undefined);
      if (started) this.d.emit({ kind: 'run', run: started });
      const outcome = await executeTask(task, {
        runtime: this.d.runtime,
        settings: s,
        home: this.d.home,
        ...(this.d.records ? { records: this.d.records } : {}),
        signal: this.abort.signal,
        logger: this.d.logger,
        onConversation: (id) => {
          store.setRunConversation(runId, id).catch(() => {
            /* recorded again when the run ends */
          });
        },
      });
      if (outcome.status === 'failed') this.d.logger.warn(`cron task ${task.id} (${task.name}) failed: ${outcome.error ?? 'unknown error'}`);
      const run = await store.finishRun(runId, {
        status: outcome.status,
        finishedAt: Date.now(),
        output: outcome.output,
        error: outcome.error ?? null,
        conversationId: outcome.conversationId ?? null,
      });
      if (run) this.d.emit({ kind: 'run', run });
    })().catch((err) => this.d.logger.error(`cron task ${task.id}: recording its run failed: ${(err as Error).message}`));
    let set = this.active.get(task.id);
    if (!set) this.active.set(task.id, (set = new Set()));
    set.add(p);
    void p.finally(() => {
      set.delete(p);
      if (!set.size) this.active.delete(task.id);
      if (!this.stopped) this.poke();
    });
  }
}
