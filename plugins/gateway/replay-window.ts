/**
 * A conversation's replay window: its latest events in seq order, bounded by count and bytes
 * (and, through the shared budget, by every window together), for a client that reconnects
 * with the last seq it saw.
 *
 * Most events are deltas, and a delta is not kept as its event object: the object and its
 * `delta` would then outlive many young-generation collections (copied, promoted, collected
 * later) at every delta of every stream. Consecutive deltas of one block (same message, block,
 * kind and run, seqs without a gap) share ONE entry: its header, and their strings and
 * timestamps in two arrays, so a delta costs two array pushes. A delta is rebuilt (and
 * serialized) only if it is replayed. Other events are kept as their JSON, one entry each.
 * Bounds drop the oldest events first, a delta at a time from the front of an entry.
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
  /** A delta's estimated size less its string's length (the estimate is linear in it). */
  fixed: number;
}

/** The deltas of one entry: strings and timestamps, from `off` on (the ones before were dropped). */
interface Run {
  parts: string[];
  ts: number[];
  off: number;
}

export class ReplayWindow {
  /** Per entry: the seq of its first event (dropped ones included, see Run.off). */
  private seqs: number[] = [];
  /** Per entry: the event's JSON, or '' for a run of deltas. */
  private items: string[] = [];
  /** Per entry: the deltas' header and strings, or undefined. */
  private heads: Array<DeltaHead | undefined> = [];
  private runs: Array<Run | undefined> = [];
  /** Per entry: the bytes it holds. */
  private sizes: number[] = [];
  private start = 0;
  private head: DeltaHead | undefined;
  /** Events held (deltas counted one by one). */
  private count = 0;
  /** The seq of the newest event held. */
  private lastSeq = -1;
  /** Bytes held (serialized, or estimated for deltas). */
  bytes = 0;

  constructor(private readonly limits: () => WindowLimits, private readonly budget: ReplayBudget) {}

  /** An event already serialized. */
  pushSerialized(seq: number, json: string): void {
    this.append(seq, json, undefined, undefined, json.length);
    this.lastSeq = seq;
    this.count++;
    this.account(json.length);
  }

  /** A text, thinking or tool-input delta, `payload` its string, `size` its estimated serialized size. */
  pushDelta(e: Delta, payload: string, size: number): void {
    const kind = e.delta.kind as StringKind;
    let h = this.head;
    if (!h || h.messageId !== e.messageId || h.index !== e.delta.index || h.kind !== kind || h.runId !== e.runId) {
      h = this.head = { conversationId: e.conversationId, runId: e.runId, messageId: e.messageId, kind, index: e.delta.index, fixed: size - payload.length };
    }
    const last = this.seqs.length - 1;
    const run = last >= this.start && this.heads[last] === h && e.seq === this.lastSeq + 1 ? this.runs[last] : undefined;
    if (run) {
      run.parts.push(payload);
      run.ts.push(e.ts);
      this.sizes[last]! += size;
    } else this.append(e.seq, '', h, { parts: [payload], ts: [e.ts], off: 0 }, size);
    this.lastSeq = e.seq;
    this.count++;
    this.account(size);
  }

  private append(seq: number, item: string, head: DeltaHead | undefined, run: Run | undefined, size: number): void {
    this.seqs.push(seq);
    this.items.push(item);
    this.heads.push(head);
    this.runs.push(run);
    this.sizes.push(size);
  }

  private account(size: number): void {
    this.bytes += size;
    this.budget.bytes += size;
    const l = this.limits();
    while (this.count > 0 && (this.count > l.replayWindow || this.bytes > l.replayWindowBytes)) this.dropFirst();
    // Compact now and then instead of shifting on every drop.
    if (this.start > 1024 && this.start * 2 > this.seqs.length) {
      this.seqs = this.seqs.slice(this.start);
      this.items = this.items.slice(this.start);
      this.heads = this.heads.slice(this.start);
      this.runs = this.runs.slice(this.start);
      this.sizes = this.sizes.slice(this.start);
      this.start = 0;
    }
  }

  /** Drop the oldest events until every window together holds at most `total` bytes (or this one is empty). */
  shed(total: number): void {
    while (this.count > 0 && this.budget.bytes > total) this.dropFirst();
  }

  /** The oldest event goes: a whole entry, or the first delta left in a run. */
  private dropFirst(): void {
    const i = this.start;
    const run = this.runs[i];
    let n: number;
    if (run && run.parts.length - run.off > 1) {
      n = this.heads[i]!.fixed + run.parts[run.off]!.length;
      run.parts[run.off] = '';
      run.off++;
      this.sizes[i]! -= n;
    } else {
      n = this.sizes[i]!;
      this.items[i] = '';
      this.heads[i] = undefined;
      this.runs[i] = undefined;
      this.start++;
    }
    this.bytes -= n;
    this.budget.bytes -= n;
    this.count--;
  }

  get size(): number {
    return this.count;
  }

  get firstSeq(): number | undefined {
    return this.count > 0 ? this.seqs[this.start]! + (this.runs[this.start]?.off ?? 0) : undefined;
  }

  /** Events after `lastSeq` (serialized), or undefined when the window no longer reaches back that far. */
  since(lastSeq: number, currentSeq: number, serialize: (e: LifecycleEvent) => string): string[] | undefined {
    if (lastSeq > currentSeq) return undefined;
    if (lastSeq === currentSeq) return [];
    const first = this.firstSeq;
    if (first === undefined || lastSeq < first - 1) return undefined;
    // Entries' first seqs rise (a store may skip numbers): find the last entry starting at or before lastSeq + 1.
    let lo = this.start;
    let hi = this.seqs.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.seqs[mid]! <= lastSeq + 1) lo = mid + 1;
      else hi = mid;
    }
    const out: string[] = [];
    for (let i = Math.max(this.start, lo - 1); i < this.seqs.length; i++) {
      const h = this.heads[i];
      const run = this.runs[i];
      if (!h || !run) {
        if (this.seqs[i]! > lastSeq) out.push(this.items[i]!);
        continue;
      }
      for (let k = run.off; k < run.parts.length; k++) {
        const seq = this.seqs[i]! + k;
        if (seq > lastSeq) out.push(serialize(rebuild(h, run.parts[k]!, seq, run.ts[k]!)));
      }
    }
    return out;
  }

  clear(): void {
    this.budget.bytes -= this.bytes;
    this.seqs = [];
    this.items = [];
    this.heads = [];
    this.runs = [];
    this.sizes = [];
    this.start = 0;
    this.bytes = 0;
    this.count = 0;
    this.lastSeq = -1;
    this.head = undefined;
  }
}

/** The delta event as the kernel built it (same fields, same order). */
function rebuild(h: DeltaHead, payload: string, seq: number, ts: number): Delta {
  const delta = h.kind === 'tool_input' ? { kind: h.kind, index: h.index, json: payload } : { kind: h.kind, index: h.index, text: payload };
  return { type: 'message_update', messageId: h.messageId, delta, conversationId: h.conversationId, runId: h.runId, seq, ts };
}
