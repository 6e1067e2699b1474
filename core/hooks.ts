/**
 * The kernel's hooks, declared in two frozen objects (process-wide and per-conversation), and
 * the tap-only facades each plugin gets. The hook *type* says how taps run: waterfall to
 * transform, bail to veto or answer, sync/parallel for notifications.
 *
 * Each hook is declared with its kind and what a throw in one of its taps does (`declare`): the
 * kind is recorded in a WeakMap, never read off `constructor.name`, which minifiers rename.
 *
 * Every tap is named after its plugin and wrapped so that a throw is blamed on that plugin and
 * hook, and so that what it schedules (timers, promises) runs in the plugin's blame scope
 * (core/crash-guard.ts). A throw in a transform/bail hook is rethrown as a PluginError for the
 * caller (the run fails; tool-call hooks become an error result; `compaction` a failed
 * compaction); in a notification hook it is reported and the run goes on; in `ready` the plugin
 * is reported failed and the host goes on.
 */
import tapable from 'tapable';
import type {
  CheckpointRecord,
  CompactionAnswer,
  CompactionRequest,
  ConversationDeleted,
  Disposable,
  HistorySnapshot,
  HookTap,
  KernelHookTaps,
  LifecycleEvent,
  Message,
  ProviderEvent,
  ProviderRequest,
  RequestContext,
  RoundRecord,
  RunResult,
  RuntimeErrorInfo,
  SessionHookTaps,
  SessionInfo,
  SystemPart,
  TapOptions,
  ToolBlock,
  ToolCallInfo,
  ToolContext,
  ToolDefinition,
  ToolResult,
} from '../plugin-api.js';
import { asPlugin, runIdOf, settleWithin, type CrashOwner } from './crash-guard.js';
import { PluginError, toErrorInfo } from './errors.js';

const { SyncHook, AsyncSeriesHook, AsyncSeriesBailHook, AsyncSeriesWaterfallHook, AsyncParallelHook } = tapable;

/** How a hook runs its taps. */
export type HookKind = 'sync' | 'series' | 'bail' | 'waterfall' | 'parallel';

/**
 * What a throw in a tap does (the error contract of plugin-api.d.ts):
 * - `fail-run`: rethrown as a PluginError; the run fails with the plugin and hook named;
 * - `tool-result`: rethrown; the tool dispatcher makes it the call's error result (the model can recover);
 * - `compaction`: rethrown; the compaction fails (a `compaction` error event), the run goes on;
 * - `report`: reported (logged and the `failed` hook), the run goes on;
 * - `plugin-failed`: the plugin is reported failed and unloaded, the host goes on (`ready`);
 * - `log`: logged only (a `failed` tap: reporting it would call the same hook again);
 * - `reject`: rethrown as a PluginError to the caller of the runtime method that asked (delete, rename).
 */
export type OnThrow = 'fail-run' | 'tool-result' | 'compaction' | 'report' | 'plugin-failed' | 'log' | 'reject';

export interface HookInfo {
  kind: HookKind;
  onThrow: OnThrow;
  /** Taps are bounded by the plugin timeout (boot and shutdown must not hang on one plugin). */
  bounded?: boolean;
}

const declared = new WeakMap<object, HookInfo>();

function declare<H extends object>(kind: HookKind, onThrow: OnThrow, hook: H, bounded = false): H {
  declared.set(hook, bounded ? { kind, onThrow, bounded } : { kind, onThrow });
  return hook;
}

/** The kind and error policy a hook was declared with (undefined for a hook not made here). */
export function hookInfo(hook: object): HookInfo | undefined {
  return declared.get(hook);
}

export function createKernelHooks() {
  return Object.freeze({
    ready: declare('series', 'plugin-failed', new AsyncSeriesHook<[]>([], 'ready'), true),
    shutdown: declare('series', 'report', new AsyncSeriesHook<[]>([], 'shutdown'), true),
    sessionCreated: declare('sync', 'report', new SyncHook<[SessionInfo]>(['session'], 'sessionCreated')),
    failed: declare('sync', 'log', new SyncHook<[RuntimeErrorInfo]>(['error'], 'failed')),
    conversationDeleted: declare('sync', 'report', new SyncHook<[ConversationDeleted]>(['deleted'], 'conversationDeleted')),
  });
}

export function createSessionHooks() {
  return Object.freeze({
    // persistence
    loadHistory: declare('bail', 'fail-run', new AsyncSeriesBailHook<[SessionInfo], HistorySnapshot | undefined>(['session'], 'loadHistory')),
    saveUserMessage: declare('series', 'fail-run', new AsyncSeriesHook<[Message, SessionInfo]>(['message', 'session'], 'saveUserMessage')),
    // Progress is a crash safety net: the round commit (saveRound) still stores the reply.
    saveProgress: declare('series', 'report', new AsyncSeriesHook<[Message, SessionInfo]>(['message', 'session'], 'saveProgress')),
    saveRound: declare('series', 'fail-run', new AsyncSeriesHook<[RoundRecord]>(['round'], 'saveRound')),
    truncateHistory: declare('series', 'fail-run', new AsyncSeriesHook<[{ conversationId: string; fromMessageId: string }]>(['at'], 'truncateHistory')),
    // A throw rejects the runtime's deleteConversation / renameConversation call.
    deleteConversation: declare('bail', 'reject', new AsyncSeriesBailHook<[{ conversationId: string }], boolean | undefined>(['at'], 'deleteConversation')),
    renameConversation: declare('bail', 'reject', new AsyncSeriesBailHook<[{ conversationId: string; title: string }], boolean | undefined>(['at'], 'renameConversation')),
    saveCheckpoint: declare('series', 'compaction', new AsyncSeriesHook<[CheckpointRecord]>(['record'], 'saveCheckpoint')),
    // request building
    systemPrompt: declare('waterfall', 'fail-run', new AsyncSeriesWaterfallHook<[SystemPart[], RequestContext]>(['parts', 'ctx'], 'systemPrompt')),
    messages: declare('waterfall', 'fail-run', new AsyncSeriesWaterfallHook<[Message[], RequestContext]>(['messages', 'ctx'], 'messages')),
    tools: declare('waterfall', 'fail-run', new AsyncSeriesWaterfallHook<[ToolDefinition[], RequestContext]>(['tools', 'ctx'], 'tools')),
    providerRequest: declare('waterfall', 'fail-run', new AsyncSeriesWaterfallHook<[ProviderRequest, RequestContext]>(['request', 'ctx'], 'providerRequest')),
    compaction: declare('bail', 'compaction', new AsyncSeriesBailHook<[CompactionRequest, RequestContext], CompactionAnswer | undefined>(['request', 'ctx'], 'compaction')),
    // streaming
    providerEvent: declare('sync', 'report', new SyncHook<[ProviderEvent, RequestContext]>(['event', 'ctx'], 'providerEvent')),
    // tool dispatch
    beforeToolCall: declare('bail', 'tool-result', new AsyncSeriesBailHook<[ToolCallInfo], ToolBlock | undefined>(['call'], 'beforeToolCall')),
    executeTool: declare('bail', 'tool-result', new AsyncSeriesBailHook<[ToolCallInfo, ToolContext], ToolResult | undefined>(['call', 'ctx'], 'executeTool')),
    afterToolCall: declare('waterfall', 'tool-result', new AsyncSeriesWaterfallHook<[ToolResult, ToolCallInfo]>(['result', 'call'], 'afterToolCall')),
    // lifecycle
    event: declare('sync', 'report', new SyncHook<[LifecycleEvent]>(['event'], 'event')),
    turnEnd: declare('parallel', 'report', new AsyncParallelHook<[RunResult, SessionInfo]>(['result', 'session'], 'turnEnd')),
  });
}

export type KernelHooks = ReturnType<typeof createKernelHooks>;
export type SessionHooks = ReturnType<typeof createSessionHooks>;

type AnyHook = {
  taps: Array<{ fn: Function }>;
  tap(opts: object, fn: Function): void;
  tapPromise?(opts: object, fn: Function): void;
  _resetCompilation?(): void;
};

export type NotifyErrorReporter = (info: RuntimeErrorInfo) => void;

/** Where a tap's failures go, and the scope its code runs in. */
export interface TapEnv {
  /** A throw in a `report` hook. */
  report: NotifyErrorReporter;
  /** A throw (or timeout) in a `plugin-failed` hook (default: `report`). */
  pluginFailed?: NotifyErrorReporter;
  /** A throw in a `log` hook (default: stderr). */
  log?: (message: string) => void;
  /** Blame the plugin for what its taps schedule (omitted for the kernel's own taps). */
  owner?: CrashOwner;
  /** Bound for the taps of `bounded` hooks (ms; default: unbounded). */
  timeoutMs?: number;
}

/** Tap `fn` on `hook` as `plugin`; returns a Disposable that removes exactly this tap. */
export function tapAs(plugin: string, hookName: string, hook: AnyHook, fn: Function, options: TapOptions = {}, onError: NotifyErrorReporter | TapEnv): Disposable {
  const info = declared.get(hook);
  if (!info) throw new Error(`hook ${hookName} was not declared with a kind (core/hooks.ts declare)`);
  const env: TapEnv = typeof onError === 'function' ? { report: onError } : onError;
  const fail = (err: unknown) => {
    if (err instanceof PluginError && err.plugin === plugin) return err;
    const msg = err instanceof Error ? err.message : String(err);
    return new PluginError(plugin, `plugin "${plugin}" failed in hook ${hookName}: ${msg}`, { hook: hookName, cause: err });
  };
  const swallow = (err: unknown) => {
    const e = fail(err);
    try {
      if (info.onThrow === 'log') (env.log ?? ((m: string) => process.stderr.write(`liveagent: ${m}\n`)))(e.message);
      else if (info.onThrow === 'plugin-failed') (env.pluginFailed ?? env.report)(toErrorInfo(e));
      else env.report(toErrorInfo(e));
    } catch {
      /* a failing reporter must not take the run down */
    }
  };
  const owner = env.owner;
  const call: (args: unknown[]) => unknown = owner
    ? (args) => asPlugin({ plugin, hook: hookName, runId: runIdOf(args), owner }, () => fn(...args))
    : (args) => fn(...args);
  const rethrows = info.onThrow === 'fail-run' || info.onThrow === 'tool-result' || info.onThrow === 'compaction' || info.onThrow === 'reject';
  const sync = info.kind === 'sync';
  let wrapped: Function;
  if (sync) {
    wrapped = rethrows
      ? (...args: unknown[]) => {
          try {
            return call(args);
          } catch (err) {
            throw fail(err);
          }
        }
      : (...args: unknown[]) => {
          try {
            const r = call(args) as { then?: unknown; catch?: (f: (e: unknown) => void) => unknown } | undefined;
            // An async tap on a notification hook: its rejection is reported like a throw.
            if (r && typeof r.then === 'function' && typeof r.catch === 'function') r.catch(swallow);
          } catch (err) {
            swallow(err);
          }
        };
  } else {
    const limit = info.bounded && env.timeoutMs !== undefined ? env.timeoutMs : undefined;
    const run =
      limit === undefined
        ? (args: unknown[]) => call(args)
        : (args: unknown[]) =>
            settleWithin(Promise.resolve().then(() => call(args)), limit, () => new PluginError(plugin, `plugin "${plugin}" did not finish its ${hookName} tap within ${limit} ms`, { hook: hookName }));
    wrapped = rethrows
      ? async (...args: unknown[]) => {
          try {
            return await run(args);
          } catch (err) {
            throw fail(err);
          }
        }
      : async (...args: unknown[]) => {
          try {
            await run(args);
          } catch (err) {
            swallow(err);
          }
        };
  }
  const tapOptions = { name: plugin, stage: options.stage, before: options.before };
  if (sync) hook.tap(tapOptions, wrapped);
  else hook.tapPromise!(tapOptions, wrapped);
  return {
    dispose() {
      const i = hook.taps.findIndex((t) => t.fn === wrapped);
      if (i >= 0) {
        hook.taps.splice(i, 1);
        hook._resetCompilation?.();
      }
    },
  };
}

/**
 * Build the tap-only view of a hook object for one plugin. Taps are also pushed to
 * `subscriptions`. Once `revoked()` says so (the plugin failed or was unloaded), tapping throws.
 */
export function facadeFor<T extends object, F>(
  plugin: string,
  hooks: T,
  subscriptions: Disposable[],
  env: NotifyErrorReporter | TapEnv,
  revoked: () => Error | undefined = () => undefined,
): F {
  const out: Record<string, HookTap<unknown[], unknown>> = {};
  for (const [hookName, hook] of Object.entries(hooks) as Array<[string, AnyHook]>) {
    out[hookName] = {
      tap(fn, options) {
        const gone = revoked();
        if (gone) throw gone;
        return trackDisposable(subscriptions, tapAs(plugin, hookName, hook, fn, options, env));
      },
    };
  }
  return Object.freeze(out) as F;
}

/**
 * Keep `d` in a plugin's subscriptions until it is disposed, by the plugin or at unload.
 * Disposing it early also takes it out of the list, so registrations that come and go (MCP
 * tools across server restarts) never pile up there.
 */
export function trackDisposable(subscriptions: Disposable[], d: Disposable): Disposable {
  let done = false;
  const tracked: Disposable = {
    dispose() {
      if (done) return;
      done = true;
      const i = subscriptions.indexOf(tracked);
      if (i >= 0) subscriptions.splice(i, 1);
      d.dispose();
    },
  };
  subscriptions.push(tracked);
  return tracked;
}

export type { KernelHookTaps, SessionHookTaps };
