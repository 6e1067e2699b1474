/**
 * hooks: the user's hooks (shell commands and HTTP requests) on the run's lifecycle events
 * (docs/hooks.md). Settings: the top-level `hooks` section (settings.ts), read again whenever
 * settings change.
 *
 * - Observing hooks: the `event` tap only enqueues (queue.ts); a worker per conversation runs
 *   the hooks in order, off the run's path. The tap exists only while some observing hook is
 *   configured: with none, the kernel does not even call it.
 * - Blocking hooks on `tool_execution_start` tap `beforeToolCall` (every tool, MCP tools
 *   included, passes there) before the default stage. The permissions plugin taps earlier
 *   (-1000), so a call it refuses never reaches a user hook; its `executeTool` check comes after
 *   ours and sees arguments a hook replaced. A hook's "allow" only lets the next tap decide.
 * - Blocking hooks on `agent_start` tap `saveUserMessage` before the history store: a denied
 *   prompt ends the run with the error and is never stored or sent. A run without a new prompt
 *   (a resend) is gated at its first request (`messages`, round 1) instead.
 *
 * Trust: hooks come only from the user's settings.json (the settings store has no per-project
 * file), so there is no project hook to approve; see docs/hooks.md.
 */
import type { Disposable, Plugin, PluginContext } from '../../plugin-api.js';
import { definePlugin } from '../../core/define-plugin.js';
import { acquireHostProcesses, releaseHostProcesses } from '../../lib/tool-shared/process-records.js';
import { HookEngine } from './engine.js';
import { HooksSectionSchema, parseHooksSection } from './settings.js';

/** The service other plugins and tests can ask for (`ctx.service('hooks')`). */
export const HOOKS_SERVICE = 'hooks';

export interface HooksService {
  /** Queue and failure counters. */
  stats(): ReturnType<HookEngine['stats']>;
  /** Resolves once no observing hook waits or runs (or after `ms`); true when idle. */
  whenIdle(ms?: number): Promise<boolean>;
  /** Read the settings again now (they are also read on every change). */
  reload(): Promise<void>;
  /**
   * What is wrong with a `hooks` section, one line per problem (empty: it is fine). For a
   * host that wants to refuse a bad save up front, as the gateway does for `mcpServers`.
   */
  validate(section: unknown): string[];
}

/** Before the default stage (0), after the permissions plugin's (-1000). */
const BEFORE_TOOL_STAGE = -10;
/** Before the history store and every other saveUserMessage / messages tap. */
const PROMPT_STAGE = -1000;

function wire(ctx: PluginContext, engine: HookEngine): () => void {
  const taps = new Map<string, Disposable>();
  const want = (name: string, on: boolean, tap: () => Disposable) => {
    const had = taps.get(name);
    if (on && !had) taps.set(name, tap());
    if (!on && had) {
      had.dispose();
      taps.delete(name);
    }
  };
  const h = ctx.sessionHooks;
  return () => {
    const c = engine.compiled;
    const tracksRuns = c.anyObserving || c.blockingStart.length > 0;
    want('event', c.anyObserving, () => h.event.tap((ev) => engine.observe(ev)));
    want('beforeToolCall', c.blockingTool.length > 0, () => h.beforeToolCall.tap((info) => engine.gateTool(info), { stage: BEFORE_TOOL_STAGE }));
    want('saveUserMessage', tracksRuns, () =>
      h.saveUserMessage.tap(
        async (message, session) => {
          const run = session.run;
          if (!run || message.meta?.synthetic) return;
          await engine.gatePrompt({ conversationId: session.conversationId, runId: run.runId, seq: session.lastSeq, mode: run.mode, provider: run.provider, model: run.model, workdir: run.workdir, userMessage: message, hook: 'saveUserMessage' });
        },
        { stage: PROMPT_STAGE },
      ),
    );
    want('messages', tracksRuns, () =>
      h.messages.tap(
        async (messages, rctx) => {
          if (rctx.round === 1) await engine.gatePrompt({ conversationId: rctx.conversationId, runId: rctx.runId, mode: rctx.mode, provider: rctx.provider.id, model: rctx.model, workdir: rctx.workdir, hook: 'messages' });
          return messages;
        },
        { stage: PROMPT_STAGE },
      ),
    );
    want('turnEnd', tracksRuns, () =>
      h.turnEnd.tap((result, session) => {
        if (session.run) engine.dirs.learn(result.runId, session.run.workdir);
        engine.forgetRun(result.runId);
      }),
    );
  };
}

const plugin: Plugin = definePlugin({
  name: 'hooks',
  version: '0.1.0',
  settingsKey: 'hooks',
  settingsSchema: HooksSectionSchema,
  async apply(ctx) {
    // The record Bash uses too: a host killed mid-hook has the hook's tree stopped at the next start.
    const records = acquireHostProcesses(ctx.paths.home, { warn: (m) => ctx.logger.warn(m) });
    ctx.subscriptions.push({ dispose: () => releaseHostProcesses(records) });
    const engine = new HookEngine(ctx, ctx.logger, records);
    ctx.subscriptions.push({ dispose: () => engine.close() });
    const sync = wire(ctx, engine);
    const reload = async (force = false) => {
      if (await engine.reload(ctx.settings.get().hooks, force)) sync();
    };
    await reload();
    ctx.subscriptions.push(
      ctx.settings.onChange(() => {
        reload().catch((err) => ctx.reportFailure(`reloading the hooks failed: ${(err as Error)?.message ?? String(err)}`));
      }),
    );
    ctx.hooks.shutdown.tap(() => engine.shutdown());
    const service: HooksService = {
      stats: () => engine.stats(),
      whenIdle: (ms = 30_000) => engine.queues.whenIdle(ms),
      reload: () => reload(true),
      validate: (section) => parseHooksSection(section).errors,
    };
    ctx.provide(HOOKS_SERVICE, service);
  },
});

export default plugin;
