/**
 * After-turn work: the `turnEnd` taps (titles, memory extraction, user hooks, a store's
 * bookkeeping) run once the run is over — its session free for the next message, `agent_end`
 * emitted, `result` settling — instead of inside it, so a slow title request never answers the
 * user's next message with "already has a run in progress".
 *
 * Bounded three ways, each a setting so tests run in seconds:
 * - each tap call may take `runtime.afterTurnTimeoutMs` (default 60 s); past it, it is reported
 *   (naming the plugin) and no longer waited for;
 * - each plugin has at most `runtime.afterTurnConcurrency` calls in flight (default 4); more
 *   wait in a bounded queue. Per plugin, not overall: a plugin stuck on a slow model must not
 *   hold back another plugin's quick bookkeeping (the history store's last seq);
 * - `kernel.shutdown()` waits for what is in flight or queued (its `shutdown` tap, made here,
 *   runs before any plugin's, so a store is still open), at most `afterTurnTimeoutMs` in all.
 *
 * Taps start in the tick the run finishes, before its result reaches a caller: a quick tap
 * (the store's last seq) is then always done before a follow-up run can load the history.
 * A throw is reported by the tap's own wrapper (core/hooks.ts), named after its plugin; never fatal.
 */
import type { Logger, RunResult, RuntimeErrorInfo, SessionInfo, Settings } from '../plugin-api.js';
import { PluginError } from './errors.js';
import type { KernelHooks, SessionHooks } from './hooks.js';

export const DEFAULT_AFTER_TURN_TIMEOUT_MS = 60_000;
export const DEFAULT_AFTER_TURN_CONCURRENCY = 4;
/** Calls waiting per plugin; beyond it the oldest waiting call is dropped (and reported). */
export const MAX_QUEUED_PER_PLUGIN = 256;

/** A tapable tap, as the hook keeps it (`fn` is the kernel's wrapper around the plugin's function). */
interface TapRecord {
  name: string;
  type?: string;
  fn: (...args: unknown[]) => unknown;
}

interface Job {
  tap: TapRecord;
  result: RunResult;
  info: SessionInfo;
}

interface Lane {
  running: number;
  queue: Job[];
}

export interface AfterTurnDeps {
  sessionHooks: SessionHooks;
  kernelHooks: KernelHooks;
  settings(): Settings;
  logger: Logger;
}

export class AfterTurn {
  private readonly lanes = new Map<string, Lane>();
  /** Calls running or queued, for drain. */
  private pending = 0;
  private idle: Array<() => void> = [];
  private closed = false;

  constructor(private readonly deps: AfterTurnDeps) {
    // Before every plugin's shutdown tap: what a turnEnd tap writes must find its store open.
    deps.kernelHooks.shutdown.tapPromise({ name: 'kernel', stage: -1000 }, () => this.drain());
  }

  /** Calls running or waiting (observability, tests). */
  get size(): number {
    return this.pending;
  }

  /** Run every `turnEnd` tap for a finished run, in the background. */
  schedule(result: RunResult, info: SessionInfo): void {
    if (this.closed) return;
    const taps = [...(this.deps.sessionHooks.turnEnd.taps as unknown as TapRecord[])];
    if (taps.length === 0) return;
    const { concurrency } = this.limits();
    for (const tap of taps) {
      const job: Job = { tap, result, info };
      const lane = this.laneOf(tap.name);
      this.pending++;
      if (lane.running < concurrency) {
        this.start(job, lane);
        continue;
      }
      lane.queue.push(job);
      if (lane.queue.length > MAX_QUEUED_PER_PLUGIN) {
        const dropped = lane.queue.shift()!;
        this.settled();
        this.report(dropped.tap.name, `plugin "${dropped.tap.name}" has more than ${MAX_QUEUED_PER_PLUGIN} turnEnd calls waiting; the oldest (conversation "${dropped.result.conversationId}") was dropped`);
      }
    }
  }

  /**
   * Wait for every call in flight or queued, at most `afterTurnTimeoutMs`; then stop accepting
   * work. What is still running at the deadline is reported and abandoned.
   */
  async drain(): Promise<void> {
    if (this.pending > 0) {
      const { timeoutMs } = this.limits();
      let timer: NodeJS.Timeout | undefined;
      const done = new Promise<boolean>((resolve) => this.idle.push(() => resolve(true)));
      const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs)));
      const finished = await Promise.race([done, late]);
      clearTimeout(timer);
      if (!finished) {
        const names = [...this.lanes].filter(([, l]) => l.running > 0 || l.queue.length > 0).map(([n]) => n);
        for (const name of names) this.report(name, `plugin "${name}" still had turnEnd work after ${timeoutMs} ms at shutdown (runtime.afterTurnTimeoutMs); it was abandoned`);
        for (const lane of this.lanes.values()) lane.queue.length = 0;
      }
    }
    this.closed = true;
  }

  private start(job: Job, lane: Lane): void {
    // Its plugin was unloaded while the call waited: nothing to run.
    if (!(this.deps.sessionHooks.turnEnd.taps as unknown as TapRecord[]).includes(job.tap)) {
      this.settled();
      const next = lane.queue.shift();
      if (next) this.start(next, lane);
      return;
    }
    lane.running++;
    const { timeoutMs } = this.limits();
    const name = job.tap.name;
    let timer: NodeJS.Timeout | undefined;
    let over = false;
    const finish = () => {
      if (over) return;
      over = true;
      clearTimeout(timer);
      lane.running--;
      this.settled();
      const next = lane.queue.shift();
      if (next) this.start(next, lane);
    };
    timer = setTimeout(() => {
      this.report(name, `plugin "${name}" did not finish its turnEnd tap within ${timeoutMs} ms (runtime.afterTurnTimeoutMs); it is no longer waited for`);
      finish();
    }, timeoutMs);
    // Never keeps a process alive by itself: shutdown's drain is what waits.
    timer.unref();
    this.call(job).then(finish, (err: unknown) => {
      // The kernel's wrapper reports a plugin's throw itself; this is for taps made without it.
      this.report(name, `plugin "${name}" failed in hook turnEnd: ${(err as Error)?.message ?? String(err)}`);
      finish();
    });
  }

  private call({ tap, result, info }: Job): Promise<unknown> {
    try {
      if (tap.type === 'async') return new Promise((resolve, reject) => tap.fn(result, info, (err?: unknown) => (err ? reject(err) : resolve(undefined))));
      return Promise.resolve(tap.fn(result, info));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  private settled(): void {
    this.pending--;
    if (this.pending === 0) for (const wake of this.idle.splice(0)) wake();
  }

  private laneOf(name: string): Lane {
    let lane = this.lanes.get(name);
    if (!lane) {
      lane = { running: 0, queue: [] };
      this.lanes.set(name, lane);
    }
    return lane;
  }

  private limits(): { timeoutMs: number; concurrency: number } {
    const r = (this.deps.settings().runtime ?? {}) as Record<string, unknown>;
    const positive = (v: unknown, fallback: number) => (typeof v === 'number' && Number.isFinite(v) && v >= 1 ? Math.floor(v) : fallback);
    return { timeoutMs: positive(r.afterTurnTimeoutMs, DEFAULT_AFTER_TURN_TIMEOUT_MS), concurrency: positive(r.afterTurnConcurrency, DEFAULT_AFTER_TURN_CONCURRENCY) };
  }

  private report(plugin: string, message: string): void {
    const info: RuntimeErrorInfo = new PluginError(plugin, message, { hook: 'turnEnd' }).toInfo();
    try {
      this.deps.logger.error(info.message);
      if (this.deps.kernelHooks.failed.isUsed()) this.deps.kernelHooks.failed.call(info);
    } catch {
      /* a failing reporter must not stop the rest */
    }
  }
}
