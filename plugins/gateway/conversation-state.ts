/**
 * What the gateway remembers about one conversation: the last sequence number, a bounded window
 * of events for replay, its subscribers, and the active run (its user message, the
 * rounds it committed, the partial reply being streamed and the events a reconnecting client
 * needs to rebuild the live state).
 */
import { MessageFold } from '../../core/define-plugin.js';
import type { JsonObject, LifecycleEvent, Message, MessageDelta } from '../../plugin-api.js';
import type { GatewayClient } from './client.js';
import type { ContextView } from '../../lib/gateway-protocol/protocol.js';
import { ReplayWindow, type ReplayBudget, type WindowLimits } from './replay-window.js';
import { DeltaTemplate, type Batch } from './wire.js';

export type { ReplayBudget, WindowLimits };

/** The assistant message being streamed, rebuilt from its deltas by the shared fold (joined only when asked). */
class PartialReply {
  private readonly fold = new MessageFold();
  private finished: Message | undefined;

  constructor(readonly messageId: string, private readonly createdAt: number, private readonly provider: string, private readonly model: string) {}

  apply(delta: MessageDelta): void {
    this.fold.apply(delta);
  }

  finish(message: Message): void {
    this.finished = message;
  }

  message(): Message {
    if (this.finished) return this.finished;
    // Unfinished tool calls are shown with their arguments so far; thinking as it streamed.
    const content = this.fold.content({ toolCalls: 'parse' });
    return { id: this.messageId, role: 'assistant', content, createdAt: this.createdAt, provider: this.provider, model: this.model, meta: { partial: true } };
  }
}

const MAX_PENDING = 2000;

/** The run in progress, as far as a reconnecting client needs it. */
export class ActiveRun {
  readonly userMessage: Message | undefined;
  /** Messages of rounds this run finished (turn_end). */
  readonly committed: Message[] = [];
  /** Events of the current round since its message_start, deltas excepted (they are folded into the partial). */
  private pending: LifecycleEvent[] = [];
  private partial: PartialReply | undefined;

  constructor(readonly start: Extract<LifecycleEvent, { type: 'agent_start' }>) {
    this.userMessage = start.userMessage;
  }

  get runId(): string {
    return this.start.runId;
  }

  observe(e: LifecycleEvent): void {
    switch (e.type) {
      case 'message_start':
        this.partial = new PartialReply(e.messageId, e.ts, this.start.provider, this.start.model);
        this.pending = [e];
        return;
      case 'message_update':
        this.partial?.apply(e.delta);
        return;
      case 'message_end':
        this.partial?.finish(e.message);
        break;
      case 'turn_end':
        this.committed.push(e.message);
        if (e.toolResults) this.committed.push(e.toolResults);
        this.partial = undefined;
        this.pending = [];
        return;
    }
    this.pending.push(e);
    if (this.pending.length > MAX_PENDING) this.pending = thinUpdates(this.pending);
  }

  partialMessage(): Message | undefined {
    return this.partial?.message();
  }

  pendingEvents(): LifecycleEvent[] {
    return [this.start, ...this.pending];
  }
}

/** Keep only the latest progress update of each tool call: the rest is superseded. */
function thinUpdates(events: LifecycleEvent[]): LifecycleEvent[] {
  const latest = new Map<string, LifecycleEvent>();
  for (const e of events) if (e.type === 'tool_execution_update') latest.set(e.toolCallId, e);
  const out = events.filter((e) => e.type !== 'tool_execution_update' || latest.get(e.toolCallId) === e);
  return out.length > MAX_PENDING ? out.slice(out.length - MAX_PENDING) : out;
}

let touchCounter = 0;

export class ConversationState {
  lastSeq = 0;
  /** True once an event was seen here: only then is `lastSeq` authoritative. */
  seqKnown = false;
  /** Bumped when stored history changes (a round, a user message, a rename): snapshots retry on it. */
  commitVersion = 0;
  readonly window: ReplayWindow;
  readonly subscribers = new Set<GatewayClient>();
  run: ActiveRun | undefined;
  /** The batch of events collected for subscribers during the current tick. */
  openBatch: Batch | undefined;
  /** Bytes of the last batch: the next one starts that large. */
  batchHint = 4096;
  /** The constant bytes of the current message's deltas. */
  readonly template = new DeltaTemplate();
  lastActive = Date.now();
  /** Rises with every event of any conversation: orders windows for the global replay budget. */
  touched = 0;
  /**
   * The `start` of a compaction still in progress. A manual one (runtime.compact) has its own
   * runId and no agent_start/agent_end, so it is tracked apart from `run` and never makes the
   * conversation look running.
   */
  compacting: LifecycleEvent | undefined;
  /** The latest context estimate: a `context` event, or a compaction's tokensAfter. */
  context: ContextView | undefined;
  /**
   * Whether events go into the replay window. A window serves clients that followed the run and
   * reconnect with their last seq; a run nobody followed (a CLI run, a server-side job) needs
   * none, and a client that subscribes later gets a snapshot. Set by a subscribe, re-decided at
   * every agent_start (kept on while a subscriber left less than `replayGraceMs` ago: a client
   * reconnecting across the start of the next run still replays); turned off, the window is
   * emptied at once, as a window with a hole in it would replay events with some missing.
   */
  recording = false;
  /** When the last subscriber left (0: never), for `gateway.replayGraceMs`. */
  lastLeftAt = 0;

  constructor(readonly id: string, private readonly windowLimits: () => WindowLimits & { replayGraceMs: number }, budget: ReplayBudget) {
    this.window = new ReplayWindow(windowLimits, budget);
  }

  /** Fold one event in. A text delta costs a Map lookup and an array push (the partial reply's). */
  observe(e: LifecycleEvent): void {
    this.touched = ++touchCounter;
    this.lastSeq = e.seq;
    this.seqKnown = true;
    if (e.type === 'message_update') {
      if (this.run?.runId === e.runId) this.run.observe(e);
      return;
    }
    if (e.type === 'compaction') this.observeCompaction(e.payload, e);
    else if (e.type === 'context' && typeof e.payload.usedTokens === 'number') {
      const p = e.payload;
      this.context = {
        seq: e.seq,
        usedTokens: p.usedTokens as number,
        ...(typeof p.contextWindow === 'number' ? { contextWindow: p.contextWindow } : {}),
        ...(typeof p.thresholdTokens === 'number' ? { thresholdTokens: p.thresholdTokens } : {}),
      };
    }
    switch (e.type) {
      case 'agent_start':
        this.record(this.subscribers.size > 0 || (this.lastLeftAt > 0 && Date.now() - this.lastLeftAt < this.windowLimits().replayGraceMs));
        this.run = new ActiveRun(e);
        this.commitVersion++;
        this.lastActive = Date.now();
        return;
      case 'turn_end':
        this.commitVersion++;
        break;
      case 'agent_end':
        this.commitVersion++;
        if (this.run?.runId === e.runId) this.run = undefined;
        if (this.compacting?.runId === e.runId) this.compacting = undefined;
        this.lastActive = Date.now();
        return;
    }
    if (this.run?.runId === e.runId) this.run.observe(e);
  }

  record(on: boolean): void {
    if (!on && this.recording) this.window.clear();
    this.recording = on;
  }

  private observeCompaction(p: JsonObject, e: LifecycleEvent): void {
    if (p.phase === 'start') {
      this.compacting = e;
      return;
    }
    if (this.compacting?.runId === e.runId) this.compacting = undefined;
    if (p.phase !== 'end') return;
    // A checkpoint moved messages into a new segment: a snapshot read across it is retaken.
    this.commitVersion++;
    this.lastActive = Date.now();
    if (typeof p.tokensAfter === 'number') this.context = { seq: e.seq, usedTokens: p.tokensAfter, ...(this.context?.contextWindow ? { contextWindow: this.context.contextWindow } : {}), ...(this.context?.thresholdTokens ? { thresholdTokens: this.context.thresholdTokens } : {}) };
  }
}
