/**
 * The hook engine: the compiled configuration, running one hook (command or HTTP) for an event,
 * the observing deliveries (queue.ts) and the two blocking gates (a tool call, a prompt).
 * index.ts wires it to the kernel's hooks; this file knows nothing of tapping.
 */
import { setMaxListeners } from 'node:events';
import fs from 'node:fs';
import type { JsonObject, LifecycleEvent, Logger, Message, PluginContext, ToolBlock, ToolCallInfo } from '../../plugin-api.js';
import { PluginError } from '../../core/errors.js';
import type { HostProcesses } from '../../lib/tool-shared/process-records.js';
import { observerFailure, verdictOf, type HookOutcome, type Verdict } from './decision.js';
import { hookEnv } from './env.js';
import { compileMatcher } from './matcher.js';
import { hookInput, serialize } from './payload.js';
import { ObserverQueues, type QueueItem } from './queue.js';
import { RunDirs } from './run-dirs.js';
import { runCommandHook } from './run-command.js';
import { runHttpHook } from './run-http.js';
import { DEFAULT_OPTIONS, TOOL_EVENTS, hookLabel, parseHooksSection, type HookEntry, type HookOptions } from './settings.js';

export interface CompiledHook {
  index: number;
  entry: HookEntry;
  /** `hook #2 (command: ./guard.sh)`: how results and reports name it. */
  label: string;
  matches(toolName: string): boolean;
  timeoutMs: number;
  /** Identifies the hook within one configuration, for the failure bookkeeping. */
  key: string;
}

export interface Compiled {
  /** Observing hooks by event type (a null-prototype object: the hot path looks up `event.type`). */
  observing: Record<string, CompiledHook[] | undefined>;
  anyObserving: boolean;
  blockingTool: CompiledHook[];
  blockingStart: CompiledHook[];
  options: HookOptions;
  count: number;
}

const EMPTY: Compiled = { observing: Object.create(null), anyObserving: false, blockingTool: [], blockingStart: [], options: DEFAULT_OPTIONS, count: 0 };

/** Where a hook runs: the conversation, the run and its workdir. */
interface HookScope {
  conversationId: string;
  runId: string;
  workdir: string;
  event: string;
  toolName?: string;
}

/** Runs that went through the prompt gate (a run's first user message, or its first request). */
const GATED_KEEP = 1024;

export class HookEngine {
  compiled: Compiled = EMPTY;
  readonly dirs = new RunDirs();
  readonly queues: ObserverQueues<CompiledHook>;
  /** Aborted when the plugin unloads or the host stops: running hooks are stopped. */
  readonly lifetime = new AbortController();
  private readonly inflight = new Set<Promise<unknown>>();
  /** Observing hooks that failed, by key: reported once, counted until they work again. */
  private readonly failing = new Map<string, number>();
  private readonly gated = new Set<string>();
  private generation = 0;
  private lastSection: string | undefined;

  constructor(
    private readonly ctx: Pick<PluginContext, 'settings' | 'reportFailure' | 'runtime'>,
    private readonly logger: Logger,
    private readonly records?: HostProcesses,
  ) {
    // Every running hook listens on it (and stops listening when done): many at once is normal.
    setMaxListeners(0, this.lifetime.signal);
    this.queues = new ObserverQueues<CompiledHook>({
      maxQueue: () => this.compiled.options.maxQueue,
      deliver: (item) => this.deliver(item),
      overflow: (conversationId, dropped) =>
        ctx.reportFailure(
          `observing hooks fell behind in conversation ${conversationId}: ${dropped} event(s) were dropped because ${this.compiled.options.maxQueue} were already waiting (hooks.maxQueue)`,
          { conversationId, dropped, maxQueue: this.compiled.options.maxQueue },
        ),
      onError: (err) => this.logger.error(`delivering an event to the hooks failed: ${(err as Error)?.message ?? String(err)}`),
    });
  }

  /**
   * Read the `hooks` section (again). Returns false when it did not change. Bad entries are
   * reported, one line each, and skipped; the others take effect at once.
   */
  async reload(raw: unknown, force = false): Promise<boolean> {
    const text = JSON.stringify(raw ?? null);
    if (!force && text === this.lastSection) return false;
    this.lastSection = text;
    const gen = ++this.generation;
    const parsed = parseHooksSection(raw);
    const hooks: CompiledHook[] = [];
    for (const { index, entry } of parsed.entries) {
      let matches: (name: string) => boolean;
      try {
        matches = await compileMatcher(entry.matcher);
      } catch (err) {
        parsed.errors.push(`${parsed.prefix}[${index}].matcher: ${(err as Error).message}; this hook is skipped`);
        continue;
      }
      hooks.push({ index, entry, label: hookLabel(index, entry), matches, timeoutMs: entry.timeoutMs ?? parsed.options.defaultTimeoutMs, key: `${gen}:${index}` });
    }
    if (gen !== this.generation) return false; // a newer change won while matchers compiled
    const observing: Compiled['observing'] = Object.create(null);
    for (const h of hooks) if (!h.entry.blocking) (observing[h.entry.event] ??= []).push(h);
    this.compiled = {
      observing,
      anyObserving: hooks.some((h) => !h.entry.blocking),
      blockingTool: hooks.filter((h) => h.entry.blocking && h.entry.event === 'tool_execution_start'),
      blockingStart: hooks.filter((h) => h.entry.blocking && h.entry.event === 'agent_start'),
      options: parsed.options,
      count: hooks.length,
    };
    this.failing.clear();
    for (const e of parsed.errors) this.ctx.reportFailure(`settings: ${e}`);
    return true;
  }

  // ── Observing ──

  /** The `event` tap: only a lookup and an enqueue. */
  observe(event: LifecycleEvent): void {
    const list = this.compiled.observing[event.type];
    if (list === undefined) return;
    if (TOOL_EVENTS.has(event.type)) {
      const name = (event as { toolName: string }).toolName;
      const hit = list.filter((h) => h.matches(name));
      if (hit.length) this.queues.push(event, hit);
      return;
    }
    this.queues.push(event, list);
  }

  private async deliver(item: QueueItem<CompiledHook>): Promise<void> {
    const ev = item.event;
    const workdir = await this.dirs.get(ev.runId);
    const input = hookInput(ev, workdir, item.merged);
    const body = serialize(input);
    const toolName = TOOL_EVENTS.has(ev.type) ? (ev as { toolName: string }).toolName : undefined;
    for (const h of item.hooks) {
      if (this.lifetime.signal.aborted) return;
      const outcome = await this.track(this.execute(h, body, { conversationId: ev.conversationId, runId: ev.runId, workdir, event: ev.type, ...(toolName ? { toolName } : {}) }, this.lifetime.signal));
      this.noteObserver(h, observerFailure(outcome, h.timeoutMs), ev.type);
    }
  }

  private noteObserver(h: CompiledHook, failure: string | undefined, event: string): void {
    const before = this.failing.get(h.key);
    if (!failure) {
      if (before !== undefined) {
        this.failing.delete(h.key);
        this.logger.info(`${h.label} works again (it had failed ${before} time(s))`);
      }
      return;
    }
    if (before === undefined) {
      this.failing.set(h.key, 1);
      this.ctx.reportFailure(`${h.label} on ${event} failed: it ${failure}. Later failures of this hook are counted, not reported, until it works again`, { hook: h.index, event });
    } else this.failing.set(h.key, before + 1);
  }

  // ── Running one hook ──

  private track<T>(p: Promise<T>): Promise<T> {
    this.inflight.add(p);
    void p.finally(() => this.inflight.delete(p)).catch(() => {});
    return p;
  }

  private async execute(h: CompiledHook, body: string, scope: HookScope, signal: AbortSignal): Promise<HookOutcome> {
    const { options } = this.compiled;
    const e = h.entry;
    if (e.type === 'http') {
      return runHttpHook({ url: e.url, method: e.method ?? 'POST', headers: e.headers ?? {}, body, timeoutMs: h.timeoutMs, maxOutputBytes: options.maxOutputBytes, signal });
    }
    if (!isDirectory(scope.workdir)) {
      return { kind: 'command', exitCode: null, signal: null, stdout: '', stderr: '', timedOut: false, aborted: false, survivors: [], pid: null, durationMs: 0, spawnError: `the workdir ${scope.workdir} is not a folder` };
    }
    const env = hookEnv(process.env, this.ctx.settings.get(), {
      LIVEAGENT_HOOK_EVENT: scope.event,
      LIVEAGENT_HOOK_INDEX: String(h.index),
      LIVEAGENT_CONVERSATION_ID: scope.conversationId,
      LIVEAGENT_RUN_ID: scope.runId,
      LIVEAGENT_WORKDIR: scope.workdir,
      ...(scope.toolName ? { LIVEAGENT_TOOL_NAME: scope.toolName } : {}),
    });
    return runCommandHook({ command: e.command, cwd: scope.workdir, env, input: body, timeoutMs: h.timeoutMs, killGraceMs: options.killGraceMs, maxOutputBytes: options.maxOutputBytes, signal, ...(this.records ? { records: this.records } : {}) });
  }

  /** A blocking hook's verdict, with `onFailure` applied: a failure is a deny unless the hook says "allow". */
  private async decide(h: CompiledHook, input: Record<string, unknown>, scope: HookScope, signal: AbortSignal): Promise<Exclude<Verdict, { kind: 'failure' }>> {
    const v = verdictOf(await this.track(this.execute(h, serialize(input), scope, signal)), h.timeoutMs);
    if (v.kind !== 'failure') return v;
    if (h.entry.onFailure === 'allow') {
      this.logger.warn(`${h.label} ${v.reason}; allowed, as its onFailure is "allow"`);
      return { kind: 'allow' };
    }
    return { kind: 'deny', reason: `the hook ${v.reason}, and a failing blocking hook denies (onFailure "block")` };
  }

  /**
   * Aborted when the run ends or the plugin goes. The taps get no AbortSignal of the run
   * (ToolCallInfo, SessionInfo), so its end is the nearest thing: a stopped run ends once its
   * tool call is abandoned, and its hooks are stopped then. `done()` removes the listener.
   */
  private runSignal(conversationId: string, runId: string): { signal: AbortSignal; done(): void } {
    const ctl = new AbortController();
    const stop = () => ctl.abort();
    const handle = this.ctx.runtime.activeRun(conversationId);
    if (handle && handle.runId === runId) void handle.result.then(stop, stop);
    if (this.lifetime.signal.aborted) ctl.abort();
    else this.lifetime.signal.addEventListener('abort', stop, { once: true });
    return { signal: ctl.signal, done: () => this.lifetime.signal.removeEventListener('abort', stop) };
  }

  // ── Blocking: tool calls ──

  /** The `beforeToolCall` tap: every tool, MCP tools included, passes here. */
  async gateTool(info: ToolCallInfo): Promise<ToolBlock | undefined> {
    this.dirs.learn(info.runId, info.workdir);
    const hooks = this.compiled.blockingTool.filter((h) => h.matches(info.name));
    if (!hooks.length) return undefined;
    const run = this.runSignal(info.conversationId, info.runId);
    try {
      const scope: HookScope = { conversationId: info.conversationId, runId: info.runId, workdir: info.workdir, event: 'tool_execution_start', toolName: info.name };
      let args: JsonObject = info.input;
      let changed = false;
      for (const h of hooks) {
        const input = { type: 'tool_execution_start', conversationId: info.conversationId, runId: info.runId, ts: Date.now(), toolCallId: info.id, toolName: info.name, args, round: info.round, mode: info.mode, workdir: info.workdir };
        const v = await this.decide(h, input, scope, run.signal);
        if (v.kind === 'deny') return { block: true, reason: `${h.label} denied ${info.name}: ${v.reason}` };
        if (v.updatedInput) {
          const checked = this.checkInput(info.name, v.updatedInput, info.input);
          if (!checked.ok) return { block: true, reason: `${h.label} returned an updatedInput that ${info.name} refuses (${checked.error}); the call was not run` };
          args = checked.value;
          changed = true;
        }
      }
      if (changed && !replaceInPlace(info.input, args)) return { block: true, reason: `hooks could not change the arguments of ${info.name} (they are read-only); the call was not run` };
      return undefined;
    } finally {
      run.done();
    }
  }

  /** updatedInput checked against the tool's own schema, keeping the host's stamps (`__…` keys). */
  private checkInput(toolName: string, updated: JsonObject, original: JsonObject): { ok: true; value: JsonObject } | { ok: false; error: string } {
    const tool = this.ctx.runtime.tools().find((t) => t.name === toolName);
    let value: JsonObject = updated;
    if (tool) {
      const r = tool.parameters.safeParse(updated);
      if (!r.success) {
        const i = r.error.issues[0];
        return { ok: false, error: i ? `${i.path.length ? i.path.join('.') : '(arguments)'}: ${i.message}` : 'invalid arguments' };
      }
      value = r.data as JsonObject;
    }
    for (const k of Object.keys(original)) if (k.startsWith('__') && !(k in value)) value = { ...value, [k]: original[k]! };
    return { ok: true, value };
  }

  // ── Blocking: the prompt ──

  /** True the first time a run asks (each run is gated once). */
  private firstGate(runId: string): boolean {
    if (this.gated.has(runId)) return false;
    this.gated.add(runId);
    if (this.gated.size > GATED_KEEP) this.gated.delete(this.gated.values().next().value!);
    return true;
  }

  forgetRun(runId: string): void {
    this.gated.delete(runId);
  }

  /**
   * Run the blocking agent_start hooks for a run's prompt; a deny throws (the run ends with the
   * error, and the prompt is never stored: the tap runs before the history store's).
   */
  async gatePrompt(p: { conversationId: string; runId: string; seq?: number; mode: string; provider: string; model: string; workdir: string; userMessage?: Message; hook: string }): Promise<void> {
    this.dirs.learn(p.runId, p.workdir);
    const hooks = this.compiled.blockingStart;
    if (!hooks.length || !this.firstGate(p.runId)) return;
    const run = this.runSignal(p.conversationId, p.runId);
    const scope: HookScope = { conversationId: p.conversationId, runId: p.runId, workdir: p.workdir, event: 'agent_start' };
    const input = {
      type: 'agent_start',
      conversationId: p.conversationId,
      runId: p.runId,
      ...(p.seq !== undefined ? { seq: p.seq } : {}),
      ts: Date.now(),
      mode: p.mode,
      provider: p.provider,
      model: p.model,
      ...(p.userMessage ? { userMessage: p.userMessage } : {}),
      workdir: p.workdir,
    };
    try {
      for (const h of hooks) {
        const v = await this.decide(h, input, scope, run.signal);
        if (v.kind === 'deny') {
          throw new PluginError('hooks', `The prompt was blocked by ${h.label}: ${v.reason}`, { hook: p.hook, details: { hookIndex: h.index, reason: v.reason, blocked: true } });
        }
      }
    } finally {
      run.done();
    }
  }

  // ── Stopping ──

  /** Let queued observing hooks finish (bounded), then stop everything still running. */
  async shutdown(): Promise<void> {
    await this.queues.whenIdle(this.compiled.options.shutdownDrainMs);
    this.close();
    await Promise.race([Promise.allSettled([...this.inflight]), new Promise((r) => setTimeout(r, this.compiled.options.killGraceMs + 2000).unref())]);
  }

  close(): void {
    this.queues.close();
    this.lifetime.abort();
  }

  stats() {
    return { ...this.queues.snapshot(), hooks: this.compiled.count, failingHooks: this.failing.size, running: this.inflight.size };
  }
}

function isDirectory(p: string): boolean {
  try {
    return fs.statSync(p).isDirectory();
  } catch {
    return false;
  }
}

/**
 * The kernel hands `execute` the very object `ToolCallInfo.input` is (core/tool-dispatch.ts),
 * so replacing its keys is how a before-tap changes the arguments: the API has no field for it.
 */
function replaceInPlace(target: JsonObject, value: JsonObject): boolean {
  if (Object.isFrozen(target) || Object.isSealed(target)) return false;
  for (const k of Object.keys(target)) delete target[k];
  Object.assign(target, value);
  return true;
}
