/**
 * A conversation's replay window: its latest events in seq order, bounded by count and bytes
 * (and, through the shared budget, by every window together), for a client that reconnects
 * with the last seq it saw.
 *
 * Most events are deltas, and a delta is not kept as its event object: the object and its
 * `delta` would then outlive many young-generation collections (copied, promoted, collected
 * later) at every delta of every stream. A delta is kept as its string (the same string the
 * run's partial reply holds anyway), its seq and ts (numbers, nothing for the collector to
 * trace) and a header shared by every delta of its block; it is rebuilt and serialized only if
 * it is replayed. Other events are kept as their JSON.
 */
import type { LifecycleEvent } from '../../plugin-api.js';

/** Bytes held by every replay window together (shared, so the fan-out can keep a global budget). */
export interface ReplayBudget {
  bytes: number;
}

/** The per-conversation bounds (read on every push: the settings object itself, never a copy). */
export interface WindowLimits {
  replayWindow: number;
  replayWindowBytes: number;
}

type Delta = Extract<LifecycleEvent, { type: 'message_update' }>;
type StringKind = 'text' | 'thinking' | 'tool_input';

/** What every delta of one block has in common. */
interface DeltaHead {
  conversationId: string;
  runId: string;
  messageId: string;
  kind: StringKind;
  index: number;
}

export class ReplayWindow {
  private seqs: number[] = [];
  /** A delta's ts (0 for other events). */
  private ts: number[] = [];
  /** An event's JSON, or a delta's string. */
  private items: string[] = [];
  /** Set for deltas. */
  private heads: Array<DeltaHead | undefined> = [];
  private sizes: number[] = [];
  private start = 0;
  private head: DeltaHead | undefined;
  /** Bytes held (serialized, or estimated for deltas). */
  bytes = 0;

  constructor(private readonly limits: () => WindowLimits, private readonly budget: ReplayBudget) {}

  /** An event already serialized. */
  pushSerialized(seq: number, json: string): void {
    this.push(seq, 0, json, undefined, json.length);
  }

  /** A text, thinking or tool-input delta, `payload` its string, `size` its estimated serialized size. */
  pushDelta(e: Delta, payload: string, size: number): void {
    const kind = e.delta.kind as StringKind;
    let h = this.head;
    if (!h || h.messageId !== e.messageId || h.index !== e.delta.index || h.kind !== kind || h.runId !== e.runId) {
      h = this.head = { conversationId: e.conversationId, runId: e.runId, messageId: e.messageId, kind, index: e.delta.index };
    }
    this.push(e.seq, e.ts, payload, h, size);
  }

  private push(seq: number, ts: number, item: string, head: DeltaHead | undefined, size: number): void {
    this.seqs.push(seq);
    this.ts.push(ts);
    this.items.push(item);
    this.heads.push(head);
    this.sizes.push(size);
    this.bytes += size;
    this.budget.bytes += size;
    const l = this.limits();
    while (this.size > 0 && (this.size > l.replayWindow || this.bytes > l.replayWindowBytes)) this.dropFirst();
    // Compact now and then instead of shifting on every push.
    if (this.start > 1024 && this.start * 2 > this.seqs.length) {
      this.seqs = this.seqs.slice(this.start);
      this.ts = this.ts.slice(this.start);
      this.items = this.items.slice(this.start);
      this.heads = this.heads.slice(this.start);
      this.sizes = this.sizes.slice(this.start);
      this.start = 0;
    }
  }

  /** Drop the oldest events until every window together holds at most `total` bytes (or this one is empty). */
  shed(total: number): void {
    while (this.size > 0 && this.budget.bytes > total) this.dropFirst();
  }

  private dropFirst(): void {
    const n = this.sizes[this.start]!;
    this.bytes -= n;
    this.budget.bytes -= n;
    this.items[this.start] = '';
    this.heads[this.start] = undefined;
    this.start++;
  }

  get size(): number {
    return this.seqs.length - this.start;
  }

  get firstSeq(): number | undefined {
    return this.size > 0 ? this.seqs[this.start] : undefined;
  }

  /** Events after `lastSeq` (serialized), or undefined when the window no longer reaches back that far. */
  since(lastSeq: number, currentSeq: number, serialize: (e: LifecycleEvent) => string): string[] | undefined {
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
    const out: string[] = [];
    for (let i = lo; i < this.items.length; i++) {
      const h = this.heads[i];
      out.push(h ? serialize(rebuild(h, this.items[i]!, this.seqs[i]!, this.ts[i]!)) : this.items[i]!);
    }
    return out;
  }

  clear(): void {
    this.budget.bytes -= this.bytes;
    this.seqs = [];
    this.ts = [];
    this.items = [];
    this.heads = [];
    this.sizes = [];
    this.start = 0;
    this.bytes = 0;
    this.head = undefined;
  }
}

/** The delta event as the kernel built it (same fields, same order). */
function rebuild(h: DeltaHead, payload: string, seq: number, ts: number): Delta {
  const delta = h.kind === 'tool_input' ? { kind: h.kind, index: h.index, json: payload } : { kind: h.kind, index: h.index, text: payload };
  return { type: 'message_update', messageId: h.messageId, delta, conversationId: h.conversationId, runId: h.runId, seq, ts };
}
