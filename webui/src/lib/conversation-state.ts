/**
 * The client-side state of one conversation and how lifecycle events change it. The live
 * assistant message is rebuilt from message_start / message_update (deltas by block index) /
 * message_end, tool runtimes from tool_execution_*, and finished rounds move into `messages` at
 * turn_end, so the transcript looks the same whether it was streamed or loaded from history.
 */
import type {
  ContentBlock,
  EditedFile,
  ExecutionMode,
  JsonObject,
  LifecycleEvent,
  Message,
  RuntimeErrorInfo,
  ToolProgress,
  ToolResultBlock,
} from '../../../plugin-api.js';
import { MessageFold } from '../../../core/message-fold.js';
import { checkpointOfEndPayload, type CheckpointView, type ContextView, type QueuedItem, type ServerMessage } from '../../../lib/gateway-protocol/protocol.js';
import { applyAskEvent, type AskRecord } from './ask-user-question.js';

export interface ToolRuntime {
  status: 'running' | 'ok' | 'error';
  startedAt?: number;
  durationMs?: number;
  progress?: ToolProgress;
  result?: ToolResultBlock;
}

export interface RunInfo {
  runId: string;
  mode?: ExecutionMode;
  provider?: string;
  model?: string;
  startedAt: number;
}

/**
 * A checkpoint as the client keeps it. A live one whose first kept message is not here (the
 * kernel's "continue" turn is stored but not announced) stays after the message that was last
 * when it came, until a snapshot says better.
 */
export type LiveCheckpoint = CheckpointView & { afterMessageId?: string };

/** A compaction in progress (its `start` event). */
export interface CompactionInfo {
  runId: string;
  trigger: string;
  since: number;
}

/** A line about a compaction that did not happen or failed, shown until the next one or the next run. */
export interface CompactionNotice {
  kind: 'info' | 'error';
  text: string;
}

export interface ConversationState {
  id: string;
  /** History plus the finished rounds of the active run. */
  messages: Message[];
  /** The assistant message being streamed. */
  live: Message | null;
  /** Raw argument JSON of tool calls still streaming, by block index. */
  liveArgs: Record<number, string>;
  tools: Record<string, ToolRuntime>;
  /** AskUserQuestion events by toolCallId: the asked questions and, once settled, the outcome. */
  asks: Record<string, AskRecord>;
  running: boolean;
  run: RunInfo | null;
  lastSeq: number;
  queue: QueuedItem[];
  /** The last run's failure, shown with a retry button. */
  error: RuntimeErrorInfo | null;
  /** A transient line such as "retrying in 2 s" or "stopped". */
  notice: string | null;
  /** Files the last run changed (agent_end). */
  editedFiles: EditedFile[] | null;
  /** A snapshot or history load arrived. */
  loaded: boolean;
  /** The message just sent, shown until the server's agent_start echoes it. */
  pendingUser: Message | null;
  /** Context checkpoints, oldest first (from the snapshot, then live `compaction` ends). */
  checkpoints: LiveCheckpoint[];
  compacting: CompactionInfo | null;
  /** A compact_now request is on its way (before its `start` event arrives). */
  compactRequested: boolean;
  compactionNotice: CompactionNotice | null;
  /** The latest context estimate (a `context` event or a compaction's tokensAfter). */
  context: ContextView | null;
  /** Older stored messages exist than `messages` holds (a long conversation opens at its end). */
  hasMore: boolean;
  /** Ordinal of the oldest stored message held: the `before` of the next older page. */
  firstOrdinal: number | null;
  /** Stored messages older than those held. */
  olderCount: number;
  /** An older page is on its way. */
  loadingOlder: boolean;
  /** Why the last older page could not be loaded. */
  olderError: string | null;
  /** What the whole stored conversation spent (`conversations.usage`), fetched after a snapshot and each run. */
  spent: SpentView | null;
}

/** A conversation's spending over its whole history, as the server sums it. */
export interface SpentView {
  rounds: number;
  costUsd?: number;
  unpricedRounds: number;
}

export function emptyState(id: string): ConversationState {
  return {
    id,
    messages: [],
    live: null,
    liveArgs: {},
    tools: {},
    asks: {},
    running: false,
    run: null,
    lastSeq: 0,
    queue: [],
    error: null,
    notice: null,
    editedFiles: null,
    loaded: false,
    pendingUser: null,
    checkpoints: [],
    compacting: null,
    compactRequested: false,
    compactionNotice: null,
    context: null,
    hasMore: false,
    firstOrdinal: null,
    olderCount: 0,
    loadingOlder: false,
    olderError: null,
    spent: null,
  };
}

function ensureLive(s: ConversationState, messageId: string, ts: number): Message {
  if (!s.live || s.live.id !== messageId) {
    s.live = { id: messageId, role: 'assistant', content: [], createdAt: ts, provider: s.run?.provider, model: s.run?.model };
    s.liveArgs = {};
  }
  return s.live;
}

/**
 * The delta fold of the live message (the kernel's and the gateway's too: core/message-fold.ts),
 * kept beside the state, not in it (it must not become reactive). A live message that is not
 * the one it folded (a new message, a snapshot's partial) starts a fold from its content.
 */
const folds = new WeakMap<ConversationState, { live: Message; fold: MessageFold }>();

function foldFor(s: ConversationState, live: Message): MessageFold {
  const held = folds.get(s);
  if (held && held.live === live) return held.fold;
  const fold = MessageFold.from(live.content);
  folds.set(s, { live, fold });
  return fold;
}

function pushUnique(list: Message[], m: Message): void {
  const at = list.findIndex((x) => x.id === m.id);
  if (at >= 0) list[at] = m;
  else list.push(m);
}

/** Apply one lifecycle event. Events at or below lastSeq were seen already and are skipped. */
export function applyEvent(s: ConversationState, ev: LifecycleEvent, force = false): void {
  if (!force && ev.seq <= s.lastSeq) return;
  if (ev.seq > s.lastSeq) s.lastSeq = ev.seq;
  switch (ev.type) {
    case 'agent_start':
      s.running = true;
      s.run = { runId: ev.runId, mode: ev.mode, provider: ev.provider, model: ev.model, startedAt: ev.ts };
      s.error = null;
      s.notice = null;
      s.editedFiles = null;
      s.compactionNotice = null;
      if (ev.userMessage) {
        s.pendingUser = null;
        pushUnique(s.messages, ev.userMessage);
      }
      break;
    case 'message_start':
      ensureLive(s, ev.messageId, ev.ts);
      break;
    case 'message_update': {
      const msg = ensureLive(s, ev.messageId, ev.ts);
      if (s.notice) s.notice = null;
      const d = ev.delta;
      const fold = foldFor(s, msg);
      fold.apply(d);
      // A tool call's arguments stream beside it (ToolCallRow shows them); its input is set at its end.
      if (d.kind === 'tool_input') {
        const args = fold.toolInput(d.index);
        if (args !== undefined) s.liveArgs[d.index] = args;
        break;
      }
      // Indices can skip (a hidden block); fill the gap so positions keep matching the server's.
      while (msg.content.length < d.index) msg.content.push({ type: 'text', text: '' });
      msg.content[d.index] = fold.block(d.index)!;
      if (d.kind === 'tool_call_start') s.liveArgs[d.index] = '';
      else if (d.kind === 'block') delete s.liveArgs[d.index];
      break;
    }
    case 'message_end':
      s.live = ev.message;
      s.liveArgs = {};
      break;
    case 'tool_execution_start':
      s.tools[ev.toolCallId] = { status: 'running', startedAt: ev.ts };
      // The start event carries the arguments as the tool received them (e.g. stamped by prepareArguments).
      patchToolInput(s, ev.toolCallId, ev.args);
      break;
    case 'tool_execution_update': {
      const t = s.tools[ev.toolCallId] ?? (s.tools[ev.toolCallId] = { status: 'running', startedAt: ev.ts });
      t.progress = ev.partial;
      break;
    }
    case 'tool_execution_end':
      s.tools[ev.toolCallId] = {
        ...s.tools[ev.toolCallId],
        status: ev.result.isError ? 'error' : 'ok',
        durationMs: ev.durationMs,
        result: ev.result,
      };
      break;
    case 'turn_end':
      pushUnique(s.messages, ev.message);
      if (ev.toolResults) pushUnique(s.messages, ev.toolResults);
      if (s.live?.id === ev.message.id) s.live = null;
      s.liveArgs = {};
      break;
    case 'agent_end':
      if (s.live) {
        pushUnique(s.messages, s.live);
        s.live = null;
      }
      s.running = false;
      s.run = null;
      s.pendingUser = null;
      if (s.compacting?.runId === ev.runId) s.compacting = null;
      for (const t of Object.values(s.tools)) if (t.status === 'running') t.status = 'error';
      if (ev.status === 'error' && ev.error) s.error = ev.error;
      s.notice = ev.status === 'aborted' ? 'Stopped.' : null;
      s.editedFiles = ev.editedFiles?.length ? ev.editedFiles : null;
      break;
    case 'error':
      if (ev.error.code !== 'cancelled') s.error = ev.error;
      break;
    case 'notice':
      s.notice = noticeText(ev.payload);
      break;
    case 'ask_user_question':
    case 'ask_user_question_settled':
      applyAskEvent(s.asks, ev.type, ev.payload);
      break;
    case 'compaction':
      applyCompaction(s, ev);
      break;
    case 'context':
      if (typeof ev.payload.usedTokens === 'number') {
        const p = ev.payload;
        s.context = {
          seq: ev.seq,
          usedTokens: ev.payload.usedTokens,
          ...(typeof p.contextWindow === 'number' ? { contextWindow: p.contextWindow } : {}),
          ...(typeof p.thresholdTokens === 'number' ? { thresholdTokens: p.thresholdTokens } : {}),
        };
      }
      break;
    default:
      // turn_start and custom events need no transcript state.
      break;
  }
}

/**
 * A compaction's start shows progress; its end adds the checkpoint card before the first kept
 * message (where a reload puts it too), or at the end; an error says why. A manual compaction has
 * a runId of its own and never touches the run state.
 */
function applyCompaction(s: ConversationState, ev: { runId: string; seq: number; ts: number; payload: JsonObject }): void {
  const p = ev.payload;
  if (p.phase === 'start') {
    s.compacting = { runId: ev.runId, trigger: typeof p.trigger === 'string' ? p.trigger : 'manual', since: ev.ts };
    s.compactionNotice = null;
    return;
  }
  if (!s.compacting || s.compacting.runId === ev.runId) s.compacting = null;
  if (p.phase === 'error') {
    s.compactionNotice = { kind: 'error', text: `Compacting the context failed: ${typeof p.error === 'string' ? p.error : 'unknown error'}` };
    return;
  }
  const view = checkpointOfEndPayload(p, `live-${ev.seq}`);
  if (!view) return;
  const live: LiveCheckpoint = view;
  const last = s.messages[s.messages.length - 1];
  if ((!view.beforeMessageId || !s.messages.some((m) => m.id === view.beforeMessageId)) && last) live.afterMessageId = last.id;
  // A snapshot's pending events may repeat a checkpoint it already lists.
  if (!s.checkpoints.some((c) => c.createdAt === view.createdAt && c.tokensBefore === view.tokensBefore)) s.checkpoints.push(live);
  s.context = {
    seq: ev.seq,
    usedTokens: view.tokensAfter,
    ...(s.context?.contextWindow ? { contextWindow: s.context.contextWindow } : {}),
    ...(s.context?.thresholdTokens ? { thresholdTokens: s.context.thresholdTokens } : {}),
  };
}

function patchToolInput(s: ConversationState, toolCallId: string, args: JsonObject): void {
  for (const b of s.live?.content ?? []) if (b.type === 'tool_call' && b.id === toolCallId) b.input = args;
}

function noticeText(p: JsonObject): string {
  const msg = typeof p.message === 'string' ? p.message : '';
  if (p.kind === 'retry') {
    const secs = typeof p.delayMs === 'number' ? ` in ${Math.max(1, Math.round(p.delayMs / 1000))} s` : '';
    return `The provider failed${msg ? ` (${msg})` : ''}. Retrying${secs}${typeof p.attempt === 'number' ? ` (attempt ${p.attempt + 1})` : ''}…`;
  }
  return msg || JSON.stringify(p);
}

export interface SnapshotLike {
  lastSeq: number;
  messages: Message[];
  running: boolean;
  partial?: Message;
  pending?: LifecycleEvent[];
  checkpoints?: CheckpointView[];
  compacting?: LifecycleEvent;
  context?: ContextView;
  hasMore?: boolean;
  firstOrdinal?: number;
  olderCount?: number;
}

/** Replace the state with a server snapshot (history plus any in-progress reply). */
export function applySnapshot(s: ConversationState, snap: SnapshotLike): void {
  s.messages = snap.messages.slice();
  s.live = snap.partial && snap.running ? structuredClone(snap.partial) : null;
  s.liveArgs = {};
  s.running = snap.running;
  if (!snap.running) {
    s.run = null;
    s.pendingUser = null;
  } else if (!s.run) {
    s.run = { runId: '', startedAt: Date.now(), provider: snap.partial?.provider, model: snap.partial?.model };
  }
  s.lastSeq = snap.lastSeq;
  s.loaded = true;
  // A snapshot is the newest page again: older pages loaded before are dropped with it.
  s.hasMore = !!snap.hasMore;
  s.firstOrdinal = snap.firstOrdinal ?? null;
  s.olderCount = snap.hasMore ? (snap.olderCount ?? 0) : 0;
  s.olderError = null;
  // Settled questions are in the history (their results); pending ones come back with the run's events.
  s.asks = {};
  s.checkpoints = (snap.checkpoints ?? []).map((c) => ({ ...c }));
  s.context = snap.context ? { ...snap.context } : null;
  s.compacting = null;
  if (snap.compacting) applyEvent(s, snap.compacting, true);
  for (const ev of snap.pending ?? []) applyEvent(s, ev, true);
  s.lastSeq = Math.max(s.lastSeq, snap.lastSeq);
}

type Page = Extract<ServerMessage, { type: 'page' }>;

/**
 * Put an older page in front of the messages held. A page that no longer fits (a snapshot came
 * in between and moved `firstOrdinal`) is dropped: false. Checkpoints placed by the page get
 * their place (they were listed by the snapshot, marked inOlderPage).
 */
export function applyPage(s: ConversationState, page: Page): boolean {
  if (s.firstOrdinal === null || page.before !== s.firstOrdinal) return false;
  const held = new Set(s.messages.map((m) => m.id));
  const older = page.messages.filter((m) => !held.has(m.id));
  s.messages = [...older, ...s.messages];
  s.hasMore = page.hasMore;
  if (page.firstOrdinal !== undefined) s.firstOrdinal = page.firstOrdinal;
  s.olderCount = page.hasMore ? Math.max(0, s.olderCount - page.messages.length) : 0;
  for (const cp of page.checkpoints) {
    const at = s.checkpoints.findIndex((c) => c.segmentId === cp.segmentId);
    if (at >= 0) s.checkpoints[at] = { ...cp };
    else {
      // Oldest first: one the snapshot did not list goes by its time.
      const after = s.checkpoints.findIndex((c) => c.createdAt > cp.createdAt);
      s.checkpoints.splice(after < 0 ? s.checkpoints.length : after, 0, { ...cp });
    }
  }
  return true;
}
