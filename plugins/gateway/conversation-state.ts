/**
 * What the gateway remembers about one conversation: the last sequence number, a bounded window
 * of serialized events for replay, its subscribers, and the active run (its user message, the
 * rounds it committed, the partial reply being streamed and the events a reconnecting client
 * needs to rebuild the live state).
 */
import type { ContentBlock, JsonObject, LifecycleEvent, Message, MessageDelta } from '../../plugin-api.js';
import type { Batch, GatewayClient } from './client.js';
import type { ContextView } from './protocol.js';

/** Serialized events in seq order, bounded by count and bytes. */
export class ReplayWindow {
  private seqs: number[] = [];
  private items: string[] = [];
  private start = 0;
  private bytes = 0;

  constructor(private limits: () => { count: number; bytes: number }) {}

  push(seq: number, serialized: string): void {
    this.seqs.push(seq);
    this.items.push(serialized);
    this.bytes += serialized.length;
    const { count, bytes } = this.limits();
    while (this.size > 0 && (this.size > count || this.bytes > bytes)) {
      this.bytes -= this.items[this.start]!.length;
      this.items[this.start] = '';
      this.start++;
    }
    // Compact now and then instead of shifting on every push.
    if (this.start > 1024 && this.start * 2 > this.seqs.length) {
      this.seqs = this.seqs.slice(this.start);
      this.items = this.items.slice(this.start);
      this.start = 0;
    }
  }

  get size(): number {
    return this.seqs.length - this.start;
  }

  get firstSeq(): number | undefined {
    return this.size > 0 ? this.seqs[this.start] : undefined;
  }

  /** Events after `lastSeq`, or undefined when the window no longer reaches back that far. */
  since(lastSeq: number, currentSeq: number): string[] | undefined {
    if (lastSeq > currentSeq) return undefined;
    if (lastSeq === currentSeq) return [];
    const first = this.firstSeq;
    if (first === undefined || lastSeq < first - 1) return undefined;
    // Rising, but not always contiguous (a store may skip numbers): find the first one after lastSeq.
    let lo = this.start;
    let hi = this.seqs.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.seqs[mid]! <= lastSeq) lo = mid + 1;
      else hi = mid;
    }
    return this.items.slice(lo);
  }

  clear(): void {
    this.seqs = [];
    this.items = [];
    this.start = 0;
    this.bytes = 0;
  }
}

interface BlockState {
  type: 'text' | 'thinking' | 'tool_call';
  parts: string[];
  id?: string;
  name?: string;
  final?: ContentBlock;
}

/** The assistant message being streamed, rebuilt from its deltas (joined only when asked). */
class PartialReply {
  private blocks = new Map<number, BlockState>();
  private finished: Message | undefined;

  constructor(readonly messageId: string, private readonly createdAt: number, private readonly provider: string, private readonly model: string) {}

  apply(delta: MessageDelta): void {
    const b = this.blocks.get(delta.index);
    switch (delta.kind) {
      case 'text':
      case 'thinking':
        if (b) b.parts.push(delta.text);
        else this.blocks.set(delta.index, { type: delta.kind, parts: [delta.text] });
        break;
      case 'tool_call_start':
        this.blocks.set(delta.index, { type: 'tool_call', parts: [], id: delta.id, name: delta.name });
        break;
      case 'tool_input':
        if (b) b.parts.push(delta.json);
        break;
      case 'block':
        this.blocks.set(delta.index, { type: b?.type ?? 'text', parts: b?.parts ?? [], final: delta.block });
        break;
    }
  }

  finish(message: Message): void {
    this.finished = message;
  }

  message(): Message {
    if (this.finished) return this.finished;
    const content: ContentBlock[] = [];
    for (const [, b] of [...this.blocks].sort((x, y) => x[0] - y[0])) {
      if (b.final) content.push(b.final);
      else if (b.type === 'text') content.push({ type: 'text', text: b.parts.join('') });
      else if (b.type === 'thinking') content.push({ type: 'thinking', thinking: b.parts.join('') });
      else content.push({ type: 'tool_call', id: b.id ?? '', name: b.name ?? '', input: parseInput(b.parts.join('')) });
    }
    return { id: this.messageId, role: 'assistant', content, createdAt: this.createdAt, provider: this.provider, model: this.model, meta: { partial: true } };
  }
}

function parseInput(json: string): JsonObject {
  try {
    const v = JSON.parse(json) as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as JsonObject) : {};
  } catch {
    return {};
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
  lastActive = Date.now();
  /**
   * The `start` of a compaction still in progress. A manual one (runtime.compact) has its own
   * runId and no agent_start/agent_end, so it is tracked apart from `run` and never makes the
   * conversation look running.
   */
  compacting: LifecycleEvent | undefined;
  /** The latest context estimate: a `context` event, or a compaction's tokensAfter. */
  context: ContextView | undefined;

  constructor(readonly id: string, windowLimits: () => { count: number; bytes: number }) {
    this.window = new ReplayWindow(windowLimits);
  }

  observe(e: LifecycleEvent): void {
    this.lastSeq = e.seq;
    this.seqKnown = true;
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
