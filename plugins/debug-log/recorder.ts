/**
 * The debug log's core: what each run records, as one JSON line per record, in the order things
 * happened. One `RunState` per run that is logged (agent-dev, or `debugLog.enabled`) or traced
 * (`debugLog.otel`); other runs cost one map lookup per event.
 *
 * - The provider request is the one handed to the provider: the providerRequest tap (last of
 *   all taps) only keeps it, and it is recorded when the round starts (`turn_start`) or when
 *   its first provider event arrives (the retry after a context overflow is built inside the
 *   round). A request built and then replaced (rebuilt after a pre-send compaction) was never
 *   sent and is not recorded.
 * - Streamed deltas are coalesced per block: the deltas of a block are kept (as an array, joined
 *   once) and the block's `block_end` record says how many there were. Only when the streamed
 *   text differs from the final block is it written too (`streamed`). A block the stream never
 *   ended (stop, error) is written as one partial delta record. `rawEvents` writes every event.
 */
import type { JsonObject, LifecycleEvent, ProviderEvent, ProviderRequest, RequestContext, ToolCallInfo, ToolResult } from '../../plugin-api.js';
import type { RunSpans } from './otel.js';
import type { LogRecord } from './writer.js';

export interface RunState {
  runId: string;
  conversationId: string;
  mode: string;
  provider: string;
  model: string;
  startedAt: number;
  /** Write JSONL records for this run. */
  log: boolean;
  /** One record per provider event and message_update. */
  raw: boolean;
  round: number;
  /** Requests sent in the current round (a context-overflow retry sends a second one). */
  requestSeq: number;
  requestId?: string;
  /** Attempt of the current request (a retry before output sends it again). */
  attempt: number;
  pending?: { request: ProviderRequest; round: number };
  blocks: Map<number, Coalesced>;
  spans?: RunSpans;
  traceId?: string;
  responseId?: string;
  errorCode?: string;
  /** afterToolCall input, as JSON, by tool call id: to see whether a tap changed the result. */
  toolResultsIn: Map<string, string>;
}

interface Coalesced {
  type: 'text_delta' | 'thinking_delta' | 'tool_input_delta';
  parts: string[];
}

export interface RecorderSink {
  /** Queue a record for the conversation's file. */
  push(conversationId: string, record: LogRecord): void;
}

export function newRunState(ev: Extract<LifecycleEvent, { type: 'agent_start' }>, log: boolean, raw: boolean): RunState {
  return {
    runId: ev.runId,
    conversationId: ev.conversationId,
    mode: ev.mode,
    provider: ev.provider,
    model: ev.model,
    startedAt: ev.ts,
    log,
    raw,
    round: 0,
    requestSeq: 0,
    attempt: 1,
    blocks: new Map(),
    toolResultsIn: new Map(),
  };
}

function head(s: RunState, kind: string, round = s.round): LogRecord {
  const r: LogRecord = { ts: Date.now(), kind, conversationId: s.conversationId, runId: s.runId, round };
  if (s.requestId) r.requestId = s.requestId;
  if (s.traceId) r.traceId = s.traceId;
  return r;
}

/** A record for an event no logged run owns (a manual compaction, with `debugLog.enabled`). */
export function orphanRecord(ev: LifecycleEvent): LogRecord {
  const payload = (ev as { payload?: JsonObject }).payload;
  const round = typeof payload?.round === 'number' ? payload.round : 0;
  const { conversationId, runId, seq, ts: _ts, type, ...rest } = ev as LifecycleEvent & Record<string, unknown>;
  return { ts: Date.now(), kind: type === 'custom' ? 'custom' : type, conversationId, runId, round, seq, ...rest };
}

export class Recorder {
  constructor(private readonly sink: RecorderSink) {}

  private push(s: RunState, record: LogRecord): void {
    if (s.log) this.sink.push(s.conversationId, record);
  }

  /** The providerRequest tap: keep the final request until it is known to be sent. */
  request(s: RunState, request: ProviderRequest, ctx: RequestContext): void {
    s.pending = { request, round: ctx.round };
  }

  private sendPending(s: RunState): void {
    const p = s.pending;
    if (!p) return;
    s.pending = undefined;
    s.requestSeq++;
    s.requestId = `${s.runId}.${p.round}.${s.requestSeq}`;
    s.attempt = 1;
    s.spans?.roundRequest(p.request.maxOutputTokens);
    if (!s.log) return;
    this.push(s, { ...head(s, 'provider_request', p.round), provider: s.provider, model: p.request.model, request: p.request });
  }

  /** The providerEvent tap: on the stream's path, so deltas only append to an array. */
  providerEvent(s: RunState, ev: ProviderEvent): void {
    if (s.pending) this.sendPending(s);
    if (ev.type === 'done' && ev.responseId) s.responseId = ev.responseId;
    else if (ev.type === 'error') s.errorCode = ev.error.code;
    if (!s.log) return;
    if (s.raw) {
      this.push(s, { ...head(s, 'provider_event'), attempt: s.attempt, event: { ...ev } });
      return;
    }
    switch (ev.type) {
      case 'text_delta':
      case 'thinking_delta':
        this.coalesce(s, ev.index, ev.type, ev.text);
        return;
      case 'tool_input_delta':
        this.coalesce(s, ev.index, ev.type, ev.json);
        return;
      case 'block_end': {
        const acc = s.blocks.get(ev.index);
        s.blocks.delete(ev.index);
        const record: LogRecord = { ...head(s, 'provider_event'), attempt: s.attempt, event: { ...ev }, deltas: acc?.parts.length ?? 0 };
        if (acc && acc.type !== 'tool_input_delta') {
          const streamed = acc.parts.join('');
          const final = ev.block.type === 'text' ? ev.block.text : ev.block.type === 'thinking' ? ev.block.thinking : undefined;
          if (final !== streamed) record.streamed = streamed;
        }
        this.push(s, record);
        return;
      }
      case 'wire_request':
        // What the provider put on the wire (its own conversion included), redacted on write.
        this.push(s, { ...head(s, 'wire_request'), attempt: s.attempt, api: ev.api, body: ev.body });
        return;
      case 'done':
      case 'error':
        this.flushBlocks(s);
        break;
    }
    this.push(s, { ...head(s, 'provider_event'), attempt: s.attempt, event: { ...ev } });
  }

  private coalesce(s: RunState, index: number, type: Coalesced['type'], text: string): void {
    let acc = s.blocks.get(index);
    if (!acc) s.blocks.set(index, (acc = { type, parts: [] }));
    acc.parts.push(text);
  }

  /** Blocks the stream never ended, each as one partial delta record. */
  private flushBlocks(s: RunState): void {
    if (s.blocks.size === 0) return;
    for (const [index, acc] of s.blocks) {
      const joined = acc.parts.join('');
      const event = acc.type === 'tool_input_delta' ? { type: acc.type, index, json: joined } : { type: acc.type, index, text: joined };
      this.push(s, { ...head(s, 'provider_event'), attempt: s.attempt, event, deltas: acc.parts.length, partial: true });
    }
    s.blocks.clear();
  }

  /**
   * afterToolCall, first of all taps: what the call gave before any afterToolCall tap, and what
   * an earlier hook decided (the kernel's result of a blocked call, or of a tap that threw).
   */
  toolResultIn(s: RunState, result: ToolResult, call: ToolCallInfo): void {
    if (!s.log) return;
    s.toolResultsIn.set(call.id, safeJson(result));
    const d = result.details;
    if (d?.blocked === true) this.push(s, { ...head(s, 'hook'), hook: 'beforeToolCall', outcome: 'blocked', toolCallId: call.id, toolName: call.name, reason: textOf(result) });
    else if (typeof d?.hook === 'string' && d.hook && typeof d.plugin === 'string') this.hookFailed(s, d.hook, d.plugin, call.id, call.name, textOf(result));
  }

  private hookFailed(s: RunState, hook: string, plugin: string, toolCallId: string, toolName: string, message: string): void {
    this.push(s, { ...head(s, 'hook'), hook, outcome: 'failed', plugin, toolCallId, toolName, message });
  }

  /** afterToolCall, last of all taps: a result some tap changed gets a `hook` record. */
  toolResultOut(s: RunState, result: ToolResult, call: ToolCallInfo): void {
    const before = s.toolResultsIn.get(call.id);
    if (before === undefined) return;
    s.toolResultsIn.delete(call.id);
    if (safeJson(result) === before) return;
    this.push(s, { ...head(s, 'hook'), hook: 'afterToolCall', outcome: 'changed', toolCallId: call.id, toolName: call.name, before: parseOr(before) });
  }

  /** A lifecycle event of a run this recorder follows. */
  event(s: RunState, ev: LifecycleEvent): void {
    switch (ev.type) {
      case 'agent_start':
        s.spans && (s.traceId = s.spans.traceId);
        this.push(s, { ...head(s, 'agent_start'), seq: ev.seq, mode: ev.mode, provider: ev.provider, model: ev.model, ...(ev.userMessage ? { userMessage: ev.userMessage } : {}) });
        return;
      case 'turn_start':
        s.round = ev.round;
        s.requestSeq = 0;
        s.requestId = undefined;
        s.responseId = undefined;
        s.errorCode = undefined;
        s.spans?.roundStart(ev.round, ev.ts, s.pending?.request.maxOutputTokens);
        this.push(s, { ...head(s, 'turn_start'), seq: ev.seq });
        this.sendPending(s);
        return;
      case 'message_start':
        this.push(s, { ...head(s, 'message_start'), seq: ev.seq, messageId: ev.messageId });
        return;
      case 'message_update':
        if (s.raw) this.push(s, { ...head(s, 'message_update'), seq: ev.seq, messageId: ev.messageId, delta: ev.delta });
        return;
      case 'message_end': {
        this.sendPending(s);
        this.flushBlocks(s);
        const m = ev.message;
        s.spans?.roundEnd(ev.ts, {
          ...(m.stopReason ? { stopReason: m.stopReason } : {}),
          ...(m.usage ? { usage: m.usage } : {}),
          ...(m.model ? { responseModel: m.model } : {}),
          ...(s.responseId ? { responseId: s.responseId } : {}),
          ...(m.stopReason === 'error' ? { errorType: s.errorCode ?? 'error', ...(m.errorMessage ? { errorMessage: m.errorMessage } : {}) } : {}),
        });
        const record: LogRecord = { ...head(s, 'message_end'), seq: ev.seq, messageId: m.id, stopReason: m.stopReason, blocks: m.content.map((b) => b.type) };
        if (m.usage) record.usage = m.usage;
        if (m.errorMessage) record.errorMessage = m.errorMessage;
        if (m.meta) record.meta = m.meta;
        this.push(s, record);
        return;
      }
      case 'tool_execution_start':
        s.spans?.toolStart(ev.toolCallId, ev.toolName, s.round, ev.ts);
        this.push(s, { ...head(s, 'tool_call'), seq: ev.seq, toolCallId: ev.toolCallId, toolName: ev.toolName, args: ev.args });
        return;
      case 'tool_execution_update':
        if (s.raw) this.push(s, { ...head(s, 'tool_progress'), seq: ev.seq, toolCallId: ev.toolCallId, toolName: ev.toolName, partial: ev.partial });
        return;
      case 'tool_execution_end': {
        const r = ev.result;
        const text = textOf(r);
        s.spans?.toolEnd(ev.toolCallId, ev.ts, r.isError, text);
        this.push(s, { ...head(s, 'tool_result'), seq: ev.seq, toolCallId: ev.toolCallId, toolName: ev.toolName, isError: r.isError, durationMs: ev.durationMs, result: r });
        // An afterToolCall tap that threw is seen only here (the others were seen on the way in).
        const d = r.details;
        if (d?.hook === 'afterToolCall' && typeof d.plugin === 'string') this.hookFailed(s, d.hook, d.plugin, ev.toolCallId, ev.toolName, text);
        s.toolResultsIn.delete(ev.toolCallId);
        return;
      }
      case 'turn_end':
        this.push(s, { ...head(s, 'turn_end'), seq: ev.seq, ...(ev.usage ? { usage: ev.usage } : {}), toolResults: ev.toolResults?.content.length ?? 0 });
        return;
      case 'agent_end':
        s.pending = undefined;
        this.flushBlocks(s);
        s.spans?.end(ev.ts, ev.status, ev.usage, ev.error);
        this.push(s, {
          ...head(s, 'agent_end'),
          seq: ev.seq,
          status: ev.status,
          usage: ev.usage,
          durationMs: ev.ts - s.startedAt,
          ...(ev.error ? { error: ev.error } : {}),
          ...(ev.editedFiles ? { editedFiles: ev.editedFiles } : {}),
        });
        return;
      case 'error':
        this.push(s, { ...head(s, 'error'), seq: ev.seq, error: ev.error });
        return;
      case 'custom':
        this.push(s, { ...head(s, 'custom'), seq: ev.seq, name: ev.name, payload: ev.payload });
        return;
      default: {
        // compaction, context, notice, ask_user_question(_settled), and types added later.
        const payload = (ev as { payload?: JsonObject }).payload;
        if (ev.type === 'notice' && payload?.kind === 'retry') s.attempt = (typeof payload.attempt === 'number' ? payload.attempt : s.attempt) + 1;
        const round = typeof payload?.round === 'number' ? payload.round : s.round;
        const { conversationId: _c, runId: _r, seq, ts: _t, type, ...rest } = ev as LifecycleEvent & Record<string, unknown>;
        this.push(s, { ...head(s, type, round), seq, ...rest });
      }
    }
  }
}

function textOf(r: { content: Array<{ type: string; text?: string }> }): string {
  return Array.isArray(r.content) ? r.content.map((c) => (c.type === 'text' ? (c.text ?? '') : '')).join('') : '';
}

function safeJson(v: unknown): string {
  try {
    return JSON.stringify(v) ?? '';
  } catch {
    return '';
  }
}

function parseOr(s: string): unknown {
  try {
    return JSON.parse(s);
  } catch {
    return s;
  }
}
