/**
 * The host survives what plugins throw where no `try` can reach: a rejected promise nobody
 * awaits, a throw from a timer or an event emitter. Plugin code runs inside a blame scope (an
 * AsyncLocalStorage store naming the plugin, the hook and the run): around `apply`, around every
 * tap and around every tool's `execute`. Timers, promises and sockets made there inherit it, and
 * Node hands it back to the process-level 'uncaughtException' / 'unhandledRejection' handlers
 * installed here, so the kernel that owns the plugin can name it, fail the run it was tapping
 * for, and keep going. An error no scope explains is logged as such; the process keeps running.
 *
 * Kernel-side and host-agnostic: hosts install the handlers for the whole process
 * (hosts/cli/main.ts), and every kernel holds them while it is alive as well.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Disposable } from '../plugin-api.js';

export type CrashOrigin = 'uncaughtException' | 'unhandledRejection';

/** Whoever answers for the plugins of one kernel. */
export interface CrashOwner {
  /** A plugin's code failed outside any `try`. Must not throw. */
  crashed(blame: Blame, err: unknown, origin: CrashOrigin): void;
  /** An error no plugin can be blamed for. Must not throw. */
  stray(err: unknown, origin: CrashOrigin): void;
}

/** Who is to blame for code running now. */
export interface Blame {
  plugin: string;
  /** `apply`, a hook name, or `tool <name>`. */
  hook: string;
  /** The run the code was called for, when it was called for one. */
  runId?: string;
  owner: CrashOwner;
}

const store = new AsyncLocalStorage<Blame>();

/** Run `fn` as plugin code: what it schedules is blamed on `blame`. */
export function asPlugin<R>(blame: Blame, fn: () => R): R {
  return store.run(blame, fn);
}

/** Run `fn` as kernel code, outside any plugin's scope (runs a plugin starts are not its code). */
export function asKernel<R>(fn: () => R): R {
  return store.getStore() === undefined ? fn() : store.exit(fn);
}

/** The blame scope code is running in, if any. */
export function currentBlame(): Blame | undefined {
  return store.getStore();
}

/**
 * The run an invocation is for, read off its arguments: RequestContext, ToolCallInfo, a
 * lifecycle event and RoundRecord carry `runId`; SessionInfo carries `run.runId`.
 */
export function runIdOf(args: unknown[]): string | undefined {
  for (let i = 0; i < args.length && i < 3; i++) {
    const a = args[i] as { runId?: unknown; run?: { runId?: unknown } } | null;
    if (!a || typeof a !== 'object') continue;
    if (typeof a.runId === 'string') return a.runId;
    if (a.run && typeof a.run.runId === 'string') return a.run.runId;
  }
  return undefined;
}

const tools = new WeakMap<object, { plugin: string; owner: CrashOwner }>();

/** Remember who registered a tool object, so that what its `execute` schedules is blamed on it. */
export function ownTool(tool: object, plugin: string, owner: CrashOwner): void {
  tools.set(tool, { plugin, owner });
}

/** Run a tool's `execute` in the scope of the plugin that registered it (as is, for unknown tools). */
export function asTool<R>(tool: object, name: string, runId: string, fn: () => R): R {
  const who = tools.get(tool);
  return who ? store.run({ plugin: who.plugin, hook: `tool ${name}`, runId, owner: who.owner }, fn) : fn();
}

/** One line for an error of unknown shape: its message and where it was thrown. */
export function describeCrash(err: unknown): string {
  if (!(err instanceof Error)) return `${typeof err === 'string' ? err : safeString(err)} (not an Error, so no stack)`;
  const frame = err.stack?.split('\n').find((l) => /^\s+at /.test(l))?.trim();
  return `${err.message || err.name}${frame ? ` (${frame})` : ''}`.replace(/\s*\n\s*/g, ' ');
}

function safeString(v: unknown): string {
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}

// ── Process-level handlers ──────────────────────────────────────────────────────────────────

const owners: CrashOwner[] = [];
let installs = 0;

/** Used when no kernel is alive: the error still gets one clear line. */
const fallback: CrashOwner = {
  crashed(blame, err, origin) {
    process.stderr.write(`liveagent: plugin "${blame.plugin}" (${blame.hook}): ${kindOf(origin)}: ${describeCrash(err)}; the host keeps running\n`);
  },
  stray(err, origin) {
    process.stderr.write(`liveagent: ${kindOf(origin)} that no plugin can be blamed for: ${describeCrash(err)}; the host keeps running\n`);
  },
};

export function kindOf(origin: CrashOrigin): string {
  return origin === 'unhandledRejection' ? 'unhandled promise rejection' : 'uncaught exception';
}

function handle(err: unknown, origin: CrashOrigin): void {
  // A throw from here would end the process at once (exit 7): nothing gets out.
  try {
    const blame = store.getStore();
    if (blame) blame.owner.crashed(blame, err, origin);
    else (owners.at(-1) ?? fallback).stray(err, origin);
  } catch {
    try {
      process.stderr.write(`liveagent: ${kindOf(origin)}: ${describeCrash(err)}\n`);
    } catch {
      /* nowhere left to say it */
    }
  }
}

const onException = (err: unknown) => handle(err, 'uncaughtException');
const onRejection = (reason: unknown) => handle(reason, 'unhandledRejection');

/**
 * Catch uncaught exceptions and unhandled rejections for as long as the result is not
 * disposed (counted: nested installs keep the handlers until the last one is disposed).
 */
export function installCrashGuard(): Disposable {
  if (installs++ === 0) {
    process.on('uncaughtException', onException);
    process.on('unhandledRejection', onRejection);
  }
  let done = false;
  return {
    dispose() {
      if (done) return;
      done = true;
      if (--installs === 0) {
        process.removeListener('uncaughtException', onException);
        process.removeListener('unhandledRejection', onRejection);
      }
    },
  };
}

/** Register a kernel; the newest one alive reports errors no plugin can be blamed for. */
export function registerCrashOwner(owner: CrashOwner): Disposable {
  owners.push(owner);
  return {
    dispose() {
      const i = owners.indexOf(owner);
      if (i >= 0) owners.splice(i, 1);
    },
  };
}

/** For tests: route an error as the process handlers would, from the current async context. */
export const handleCrash = handle;

/**
 * `work`, or `onTimeout()` thrown if it has not settled within `ms`. The timer keeps the process
 * alive meanwhile: a promise that never settles would otherwise end the process with exit 13 and
 * nothing said. A late rejection of `work` is swallowed (it has been reported as the timeout).
 */
export function settleWithin<T>(work: Promise<T>, ms: number, onTimeout: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(onTimeout()), ms);
  });
  work.catch(() => {});
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}
