/**
 * debug-log: an append-only JSONL debug log per conversation, `$LIVEAGENT_HOME/debug/<id>.jsonl`
 * (format: docs/debug-log.md), for runs in `agent-dev` mode, or every run with
 * `debugLog.enabled`. Optionally OpenTelemetry spans (`debugLog.otel`, otel.ts).
 *
 * What it taps, and why there:
 * - `providerRequest` at the last possible stage, tapped at `ready` by a plugin enforced `post`:
 *   every other plugin's taps (made at apply, at the same or a lower stage) run before it, so it
 *   sees the request as it goes to the provider. It only keeps a reference (recorder.ts).
 * - `providerEvent` only while a followed run is going: the stream's hot path pays nothing
 *   otherwise.
 * - `event` for the lifecycle (one map lookup for runs that are not followed).
 * - `afterToolCall` first and last, to record a result another plugin changed.
 * - `shutdown` to flush. Writes are buffered and appended off the hot path (writer.ts); a write
 *   error is reported once and turns logging off for that file, never failing a run.
 *
 * Settings: the top-level `debugLog` section (settings.ts, docs/settings.md).
 */
import type { Disposable, LifecycleEvent, RequestContext } from '../../plugin-api.js';
import { definePlugin } from '../../core/define-plugin.js';
import { collectOld, debugDir, debugFile, fileStem } from './files.js';
import { loadOtelApi, RunSpans, type OtelApi } from './otel.js';
import { newRunState, orphanRecord, Recorder, type RunState } from './recorder.js';
import { debugLogSettings, DebugLogSettingsSchema } from './settings.js';
import { JsonlWriter, type LogRecord } from './writer.js';

export { DebugLogSettingsSchema } from './settings.js';
export { serializeRecord, redactText, redactValue } from './redact.js';

/** Service key: `ctx.service<DebugLogService>(DEBUG_LOG_SERVICE)`. */
export const DEBUG_LOG_SERVICE = 'debugLog';

export interface DebugLogService {
  /** The live file of a conversation (whether or not it exists yet). */
  fileFor(conversationId: string): string;
  /** Resolves once every record queued so far is on disk (or its file gave up). */
  flush(): Promise<void>;
  /** The start-up collection by age: the number of files it deleted. */
  readonly collected: Promise<number>;
}

const VERSION = '0.1.0';
const LAST = Number.MAX_SAFE_INTEGER;
const FIRST = -Number.MAX_SAFE_INTEGER;
/** Bounds on what is remembered per id for the life of the host. */
const MAX_REMEMBERED = 10_000;

/** Events that never get a record outside a followed run (they belong to a stream). */
const STREAM_ONLY = new Set(['message_update', 'tool_execution_update']);

export default definePlugin({
  name: 'debug-log',
  version: VERSION,
  enforce: 'post',
  settingsKey: 'debugLog',
  // The recorder writes each provider's HTTP body (`wire_request`), an experimental event.
  experimental: ['wire_request'],
  settingsSchema: DebugLogSettingsSchema,
  apply(ctx) {
    const boot = ctx.config;
    const current = () => debugLogSettings(ctx.settings.get(), boot);
    const home = ctx.paths.home;

    // ── Files ──
    const writers = new Map<string, JsonlWriter>();
    const disabledFiles = new Set<string>();
    const warnedIds = new Set<string>();
    const remember = (set: Set<string>, v: string) => {
      if (set.size >= MAX_REMEMBERED) set.delete(set.values().next().value!);
      set.add(v);
    };
    const writerFor = (conversationId: string): JsonlWriter | undefined => {
      const known = writers.get(conversationId);
      if (known) return known.disabled ? undefined : known;
      const file = debugFile(home, conversationId);
      if (disabledFiles.has(file)) return undefined;
      if (!fileStem(conversationId).safe && !warnedIds.has(conversationId)) {
        remember(warnedIds, conversationId);
        ctx.logger.warn(`conversation id ${JSON.stringify(conversationId.slice(0, 80))} is not safe as a file name; its debug log is ${file}`);
      }
      const s = current();
      const writer = new JsonlWriter(file, {
        maxFileBytes: s.maxFileBytes,
        maxFiles: s.maxFiles,
        maxQueue: s.bufferRecords,
        onError: (err) => {
          remember(disabledFiles, file);
          const code = (err as NodeJS.ErrnoException).code;
          ctx.reportFailure(`cannot write the debug log ${file} (${err.message}); debug logging for this conversation is off until the host restarts`, { file, ...(code ? { code } : {}) });
        },
      });
      writers.set(conversationId, writer);
      return writer;
    };
    /** Conversations with a followed run that logs: their writer stays while it runs. */
    const live = new Map<string, string>();
    // An idle writer is let go once its queue is on disk, so a long-lived host holds none per conversation.
    const release = (conversationId: string) => {
      const w = writers.get(conversationId);
      if (!w) return;
      void w.flush().then(() => {
        if (!live.has(conversationId) && writers.get(conversationId) === w && w.pending === 0) writers.delete(conversationId);
      });
    };
    const recorder = new Recorder({ push: (conversationId: string, record: LogRecord) => writerFor(conversationId)?.push(record) });

    // Nothing here may fail a run: a bug in the recorder is logged once and the run goes on.
    let complained = false;
    const guard = (what: string, fn: () => void) => {
      try {
        fn();
      } catch (err) {
        if (complained) return;
        complained = true;
        ctx.logger.error(`debug log: ${what} failed (further failures are not logged): ${(err as Error)?.message ?? String(err)}`);
      }
    };

    // ── OpenTelemetry, imported only when asked for ──
    let otel: OtelApi | null | undefined;
    let otelLoading: Promise<void> | undefined;
    const ensureOtel = (): Promise<void> =>
      (otelLoading ??= loadOtelApi().then((api) => {
        otel = api ?? null;
        if (!api) ctx.logger.warn('debugLog.otel is on, but @opentelemetry/api cannot be imported: no spans are exported');
      }));

    // ── Runs ──
    /** Followed runs by id; null: a run seen and not followed (one lookup per event, no settings read). */
    const runs = new Map<string, RunState | null>();
    let followed = 0;
    let providerTap: Disposable | undefined;
    const follow = () => {
      if (followed++ > 0) return;
      providerTap = ctx.sessionHooks.providerEvent.tap((ev, rctx) => {
        const s = runs.get(rctx.runId);
        if (s) guard('recording a provider event', () => recorder.providerEvent(s, ev));
      });
    };
    const unfollow = () => {
      if (--followed > 0) return;
      followed = 0;
      providerTap?.dispose();
      providerTap = undefined;
    };

    const startRun = (ev: Extract<LifecycleEvent, { type: 'agent_start' }>): RunState | null => {
      const cfg = current();
      const log = cfg.enabled || ev.mode === 'agent-dev';
      if (cfg.otel && otel === undefined) void ensureOtel(); // spans from the next run on
      const api = cfg.otel ? otel : undefined;
      if (!log && !api) return null;
      const s = newRunState(ev, log, cfg.rawEvents);
      if (api) {
        try {
          s.spans = new RunSpans(api, { conversationId: ev.conversationId, runId: ev.runId, mode: ev.mode, provider: ev.provider, model: ev.model }, ev.ts, VERSION);
        } catch (err) {
          ctx.logger.warn(`debug log: cannot start OpenTelemetry spans: ${(err as Error)?.message ?? String(err)}`);
        }
      }
      if (log) live.set(ev.conversationId, ev.runId);
      follow();
      return s;
    };
    const endRun = (s: RunState) => {
      runs.delete(s.runId);
      unfollow();
      if (live.get(s.conversationId) === s.runId) live.delete(s.conversationId);
      if (s.log) release(s.conversationId);
    };

    ctx.sessionHooks.event.tap((ev) => {
      const known = runs.get(ev.runId);
      if (known === null) {
        if (ev.type === 'agent_end') runs.delete(ev.runId);
        return;
      }
      guard('recording an event', () => {
        let s = known;
        if (s === undefined) {
          if (ev.type !== 'agent_start') {
            // Not a run's (a manual compaction), or a run from before this plugin: logged with `enabled`.
            if (!STREAM_ONLY.has(ev.type) && current().enabled) {
              writerFor(ev.conversationId)?.push(orphanRecord(ev));
              release(ev.conversationId);
            }
            return;
          }
          const started = startRun(ev);
          runs.set(ev.runId, started);
          if (!started) return;
          s = started;
        }
        recorder.event(s, ev);
        if (ev.type === 'agent_end') endRun(s);
      });
    });

    ctx.sessionHooks.afterToolCall.tap(
      (result, call) => {
        const s = runs.get(call.runId);
        if (s) guard('recording a tool result', () => recorder.toolResultIn(s, result, call));
        return result;
      },
      { stage: FIRST },
    );

    ctx.hooks.ready.tap(async () => {
      // Tapped now, after every plugin's apply: at the same stage, a later tap runs later.
      ctx.sessionHooks.providerRequest.tap(
        (request, rctx: RequestContext) => {
          const s = runs.get(rctx.runId);
          if (s) guard('recording a provider request', () => recorder.request(s, request, rctx));
          return request;
        },
        { stage: LAST },
      );
      ctx.sessionHooks.afterToolCall.tap(
        (result, call) => {
          const s = runs.get(call.runId);
          if (s) guard('recording a tool result', () => recorder.toolResultOut(s, result, call));
          return result;
        },
        { stage: LAST },
      );
      if (current().otel) await ensureOtel();
    });
    ctx.subscriptions.push(ctx.settings.onChange((settings) => void (debugLogSettings(settings, boot).otel && ensureOtel())));
    ctx.hooks.shutdown.tap(async () => {
      await Promise.all([...writers.values()].map((w) => w.flush()));
    });

    // ── Start-up collection by age, in the background ──
    const days = current().retentionDays;
    const collected = collectOld(debugDir(home), days).catch((err: unknown) => {
      ctx.logger.warn(`debug log: collecting files older than ${days} days in ${debugDir(home)} failed: ${(err as Error)?.message ?? String(err)}`);
      return 0;
    });

    const service: DebugLogService = {
      fileFor: (conversationId) => debugFile(home, conversationId),
      flush: async () => {
        await Promise.all([...writers.values()].map((w) => w.flush()));
      },
      collected,
    };
    ctx.provide(DEBUG_LOG_SERVICE, service);
  },
});
