/**
 * The kernel's hooks, declared in two frozen objects (process-wide and per-conversation), and
 * the tap-only facades each plugin gets. The hook *type* says how taps run: waterfall to
 * transform, bail to veto or answer, sync/parallel for notifications.
 *
 * Every tap is named after its plugin and wrapped so that a throw is blamed on that plugin and
 * hook: in a transform/bail hook it fails the run (PluginError); in a notification hook it is
 * reported through `onNotifyError` and the run goes on.
 */
import tapable from 'tapable';
import type {
  CheckpointRecord,
  CompactionAnswer,
  CompactionRequest,
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
import { PluginError, toErrorInfo } from './errors.js';

const { SyncHook, AsyncSeriesHook, AsyncSeriesBailHook, AsyncSeriesWaterfallHook, AsyncParallelHook } = tapable;

export function createKernelHooks() {
  return Object.freeze({
    ready: new AsyncSeriesHook<[]>([], 'ready'),
    shutdown: new AsyncSeriesHook<[]>([], 'shutdown'),
    sessionCreated: new SyncHook<[SessionInfo]>(['session'], 'sessionCreated'),
    failed: new SyncHook<[RuntimeErrorInfo]>(['error'], 'failed'),
  });
}

export function createSessionHooks() {
  return Object.freeze({
    // persistence
    loadHistory: new AsyncSeriesBailHook<[SessionInfo], HistorySnapshot | undefined>(['session'], 'loadHistory'),
    saveUserMessage: new AsyncSeriesHook<[Message, SessionInfo]>(['message', 'session'], 'saveUserMessage'),
    saveProgress: new AsyncSeriesHook<[Message, SessionInfo]>(['message', 'session'], 'saveProgress'),
    saveRound: new AsyncSeriesHook<[RoundRecord]>(['round'], 'saveRound'),
    truncateHistory: new AsyncSeriesHook<[{ conversationId: string; fromMessageId: string }]>(['at'], 'truncateHistory'),
    saveCheckpoint: new AsyncSeriesHook<[CheckpointRecord]>(['record'], 'saveCheckpoint'),
    // request building
    systemPrompt: new AsyncSeriesWaterfallHook<[SystemPart[], RequestContext]>(['parts', 'ctx'], 'systemPrompt'),
    messages: new AsyncSeriesWaterfallHook<[Message[], RequestContext]>(['messages', 'ctx'], 'messages'),
    tools: new AsyncSeriesWaterfallHook<[ToolDefinition[], RequestContext]>(['tools', 'ctx'], 'tools'),
    providerRequest: new AsyncSeriesWaterfallHook<[ProviderRequest, RequestContext]>(['request', 'ctx'], 'providerRequest'),
    compaction: new AsyncSeriesBailHook<[CompactionRequest, RequestContext], CompactionAnswer | undefined>(['request', 'ctx'], 'compaction'),
    // streaming
    providerEvent: new SyncHook<[ProviderEvent, RequestContext]>(['event', 'ctx'], 'providerEvent'),
    // tool dispatch
    beforeToolCall: new AsyncSeriesBailHook<[ToolCallInfo], ToolBlock | undefined>(['call'], 'beforeToolCall'),
    executeTool: new AsyncSeriesBailHook<[ToolCallInfo, ToolContext], ToolResult | undefined>(['call', 'ctx'], 'executeTool'),
    afterToolCall: new AsyncSeriesWaterfallHook<[ToolResult, ToolCallInfo]>(['result', 'call'], 'afterToolCall'),
    // lifecycle
    event: new SyncHook<[LifecycleEvent]>(['event'], 'event'),
    turnEnd: new AsyncParallelHook<[RunResult, SessionInfo]>(['result', 'session'], 'turnEnd'),
  });
}

export type KernelHooks = ReturnType<typeof createKernelHooks>;
export type SessionHooks = ReturnType<typeof createSessionHooks>;

/** Hooks whose taps only observe: a throw there is reported, never fatal. */
const NOTIFICATION_HOOKS = new Set(['sessionCreated', 'failed', 'providerEvent', 'event', 'turnEnd', 'shutdown']);

type AnyHook = {
  name?: string;
  taps: Array<{ fn: Function }>;
  tap(opts: object, fn: Function): void;
  tapPromise?(opts: object, fn: Function): void;
  _resetCompilation?(): void;
};

export type NotifyErrorReporter = (info: RuntimeErrorInfo) => void;

function isSync(hook: AnyHook): boolean {
  return typeof hook.tapPromise !== 'function' || hook.constructor.name === 'SyncHook';
}

/** Tap `fn` on `hook` as `plugin`; returns a Disposable that removes exactly this tap. */
export function tapAs(plugin: string, hookName: string, hook: AnyHook, fn: Function, options: TapOptions = {}, onNotifyError: NotifyErrorReporter): Disposable {
  const notify = NOTIFICATION_HOOKS.has(hookName);
  const fail = (err: unknown) => {
    if (err instanceof PluginError && err.plugin === plugin) return err;
    const msg = err instanceof Error ? err.message : String(err);
    return new PluginError(plugin, `plugin "${plugin}" failed in hook ${hookName}: ${msg}`, { hook: hookName, cause: err });
  };
  const report = (err: unknown) => {
    const info = toErrorInfo(fail(err));
    try {
      onNotifyError(info);
    } catch {
      /* a failing reporter must not take the run down */
    }
  };
  let wrapped: Function;
  const sync = isSync(hook);
  if (sync) {
    wrapped = notify
      ? (...args: unknown[]) => {
          try {
            fn(...args);
          } catch (err) {
            report(err);
          }
        }
      : (...args: unknown[]) => {
          try {
            return fn(...args);
          } catch (err) {
            throw fail(err);
          }
        };
  } else {
    wrapped = notify
      ? async (...args: unknown[]) => {
          try {
            await fn(...args);
          } catch (err) {
            report(err);
          }
        }
      : async (...args: unknown[]) => {
          try {
            return await fn(...args);
          } catch (err) {
            throw fail(err);
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

/** Build the tap-only view of a hook object for one plugin. Taps are also pushed to `subscriptions`. */
export function facadeFor<T extends object, F>(
  plugin: string,
  hooks: T,
  subscriptions: Disposable[],
  onNotifyError: NotifyErrorReporter,
): F {
  const out: Record<string, HookTap<unknown[], unknown>> = {};
  for (const [hookName, hook] of Object.entries(hooks) as Array<[string, AnyHook]>) {
    out[hookName] = {
      tap(fn, options) {
        return trackDisposable(subscriptions, tapAs(plugin, hookName, hook, fn, options, onNotifyError));
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
