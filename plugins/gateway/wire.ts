/**
 * Events as they go on the wire: `{ type, conversationId, seq, phase?, event }` as JSON text.
 *
 * Text, thinking and tool-input deltas are most of a stream. They have one fixed shape (the
 * kernel builds them as one literal: type, messageId, delta { kind, index, text | json },
 * conversationId, runId, seq, ts), so a subscribed conversation writes them straight into its
 * batch's bytes from a per-message template: no string per event, no object to stringify and
 * nothing for the garbage collector, which is where a per-event JSON.stringify spends most of
 * its time. Every other event is stringified as is. `serializeEvent` gives the same JSON as a
 * string (for replaying events kept as objects).
 */
import type { LifecycleEvent } from '../../plugin-api.js';
import { streamKindOf } from '../../lib/gateway-protocol/protocol.js';

type Delta = Extract<LifecycleEvent, { type: 'message_update' }>;
export type DeltaEvent = Delta;

/** The event's wire message, serialized. */
export function serializeEvent(e: LifecycleEvent): string {
  const { kind, phase } = streamKindOf(e);
  return JSON.stringify(phase ? { type: kind, conversationId: e.conversationId, seq: e.seq, phase, event: e } : { type: kind, conversationId: e.conversationId, seq: e.seq, event: e });
}

/** The string of a text, thinking or tool-input delta (the ones written from a template); undefined for any other event. */
export function deltaPayload(e: LifecycleEvent): string | undefined {
  if (e.type !== 'message_update') return undefined;
  const d = e.delta;
  return d.kind === 'text' || d.kind === 'thinking' ? d.text : d.kind === 'tool_input' ? d.json : undefined;
}

/** Characters of the wrapper and event fields around a delta's ids and string (a six-digit seq and a millisecond timestamp). */
const DELTA_OVERHEAD = 205;

/** The size a delta will have once serialized (for the replay windows' byte bounds, without serializing it). */
export function estimateDelta(e: Delta, payload: string): number {
  return DELTA_OVERHEAD + 2 * e.conversationId.length + e.runId.length + e.messageId.length + payload.length;
}

const COMMA = 44;
const QUOTE = 34;

/**
 * The constant part of one block's deltas, as bytes: everything up to the delta's string. The
 * fields are ordered so that what varies (the string, seq, ts) comes last, after one copy of
 * the template; the short constants between them are stored byte by byte. A conversation keeps
 * one and rebuilds it when the message, block, run or delta kind changes.
 */
export class DeltaTemplate {
  private conv: string | undefined;
  private run: string | undefined;
  private msg: string | undefined;
  private kind: string | undefined;
  private index = -1;
  private head = Buffer.alloc(0);
  private lastTs = -1;
  private tsBytes = Buffer.alloc(0);
  /** Bytes around the payload, digits included at their widest. */
  overhead = 0;

  /** Ready for this delta, or false when it has no template form (its kind is not a string delta). */
  prepare(e: Delta): boolean {
    const d = e.delta;
    const kind = d.kind;
    if (kind !== 'text' && kind !== 'thinking' && kind !== 'tool_input') return false;
    if (e.messageId !== this.msg || d.index !== this.index || kind !== this.kind || e.runId !== this.run || e.conversationId !== this.conv) {
      this.conv = e.conversationId;
      this.run = e.runId;
      this.msg = e.messageId;
      this.kind = kind;
      this.index = d.index;
      const conv = JSON.stringify(e.conversationId);
      const type = kind === 'thinking' ? 'thinking' : 'token';
      const field = kind === 'tool_input' ? 'json' : 'text';
      this.head = Buffer.from(
        `{"type":"${type}","conversationId":${conv},"event":{"type":"message_update","messageId":${JSON.stringify(e.messageId)},"conversationId":${conv},"runId":${JSON.stringify(e.runId)},"delta":{"kind":"${kind}","index":${d.index},"${field}":`,
      );
      this.overhead = this.head.length + 8 + 16 + 6 + 16 + 8 + 16 + 13 + 16 + 1 + 2;
    }
    return true;
  }

  /**
   * Write the prepared delta at `at`; returns the offset after it. The caller reserved
   * `overhead + 6 × payload length` bytes. `coalesced` > 1: `e` is the last of that many
   * consecutive deltas whose strings `payload` joins.
   */
  write(buf: Buffer, at: number, e: Delta, payload: string, coalesced = 1): number {
    buf.set(this.head, at);
    let o = writeJsonString(buf, at + this.head.length, payload);
    o = writeSeqKey(buf, o); // },"seq":
    o = writeInt(buf, o, e.seq);
    // ,"ts":
    buf[o] = 44;
    buf[o + 1] = QUOTE;
    buf[o + 2] = 116;
    buf[o + 3] = 115;
    buf[o + 4] = QUOTE;
    buf[o + 5] = 58;
    o += 6;
    // Many deltas share a millisecond.
    if (e.ts !== this.lastTs) {
      this.lastTs = e.ts;
      this.tsBytes = Buffer.from(String(e.ts));
    }
    const ts = this.tsBytes;
    for (let i = 0; i < ts.length; i++) buf[o + i] = ts[i]!;
    o = writeSeqKey(buf, o + ts.length);
    o = writeInt(buf, o, e.seq);
    if (coalesced > 1) {
      o += buf.write(',"coalesced":', o, 'latin1');
      o = writeInt(buf, o, coalesced);
    }
    buf[o] = 125; // }
    return o + 1;
  }
}

/** `},"seq":` */
function writeSeqKey(buf: Buffer, o: number): number {
  buf[o] = 125;
  buf[o + 1] = 44;
  buf[o + 2] = QUOTE;
  buf[o + 3] = 115;
  buf[o + 4] = 101;
  buf[o + 5] = 113;
  buf[o + 6] = QUOTE;
  buf[o + 7] = 58;
  return o + 8;
}

/** A non-negative safe integer in decimal. */
function writeInt(buf: Buffer, at: number, n: number): number {
  if (n < 10) {
    buf[at] = 48 + n;
    return at + 1;
  }
  if (n > 0x7fffffff) return at + buf.write(String(n), at, 'latin1');
  let digits = 1;
  for (let m = n; m >= 10; m = (m / 10) | 0) digits++;
  let o = at + digits - 1;
  for (let m = n; m > 0; m = (m / 10) | 0) buf[o--] = 48 + (m % 10);
  return at + digits;
}

/** A JSON string literal: printable ASCII is copied as is; anything else goes through JSON.stringify. */
function writeJsonString(buf: Buffer, at: number, s: string): number {
  let o = at;
  buf[o++] = QUOTE;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c > 0x7e || c === QUOTE || c === 92) return at + buf.write(JSON.stringify(s), at, 'utf8');
    buf[o++] = c;
  }
  buf[o++] = QUOTE;
  return o;
}

/**
 * Events of one conversation gathered during one tick, shared by every subscriber: the frame
 * `[e1,e2,...]` written as bytes as the events come, handed out as one Buffer however many
 * clients send it.
 *
 * Consecutive deltas of one block within the tick go out as ONE message: its string is their
 * concatenation, its seq (and its event's) the last one's, and `coalesced` says how many it
 * stands for (they are consecutive: any other event of the conversation ends the run of deltas).
 * A fast stream thus costs per tick, not per delta, on the server and in every client; a stream
 * at reading speed, one delta per tick, goes out exactly as before.
 */
export class Batch {
  private buf: Buffer;
  private len = 1;
  private count = 0;
  private framed: Buffer | undefined;
  /** The run of deltas not written yet: its template, its last event, its strings. */
  private pendTemplate: DeltaTemplate | undefined;
  private pendLast: Delta | undefined;
  private pendParts: string[] = [];

  /** `sizeHint`: about how many bytes the previous batch of this conversation took. */
  constructor(sizeHint = 4096) {
    this.buf = Buffer.allocUnsafe(Math.max(1024, sizeHint));
    this.buf[0] = 91; // [
  }

  get size(): number {
    return this.len;
  }

  private reserve(n: number): void {
    const need = this.len + n + 2;
    if (need <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(need, this.buf.length * 2));
    this.buf.copy(next, 0, 0, this.len);
    this.buf = next;
  }

  /** An already-serialized message. */
  appendString(s: string): void {
    this.writePending();
    this.reserve(s.length * 3 + 1);
    if (this.count++ > 0) this.buf[this.len++] = COMMA;
    this.len += this.buf.write(s, this.len, 'utf8');
  }

  /** A streamed delta through its conversation's template; false when it has no template form. */
  appendDelta(t: DeltaTemplate, e: LifecycleEvent): boolean {
    const payload = deltaPayload(e);
    if (payload === undefined) return false;
    const d = e as Delta;
    const last = this.pendLast;
    if (last && last.messageId === d.messageId && last.delta.index === d.delta.index && last.delta.kind === d.delta.kind && last.runId === d.runId && last.seq + 1 === d.seq) {
      this.pendParts.push(payload);
      this.pendLast = d;
      return true;
    }
    this.writePending(); // with the template still prepared for the previous block
    if (!t.prepare(d)) return false;
    this.pendTemplate = t;
    this.pendLast = d;
    this.pendParts.push(payload);
    return true;
  }

  private writePending(): void {
    const t = this.pendTemplate;
    const last = this.pendLast;
    if (!t || !last) return;
    const parts = this.pendParts;
    const payload = parts.length === 1 ? parts[0]! : parts.join('');
    this.reserve(t.overhead + payload.length * 6 + 1);
    if (this.count++ > 0) this.buf[this.len++] = COMMA;
    this.len = t.write(this.buf, this.len, last, payload, parts.length);
    this.pendTemplate = undefined;
    this.pendLast = undefined;
    this.pendParts = [];
  }

  /** The frame; nothing may be appended after it was taken. */
  frame(): Buffer {
    if (!this.framed) {
      this.writePending();
      this.buf[this.len] = 93; // ]
      this.framed = this.buf.subarray(0, this.len + 1);
    }
    return this.framed;
  }
}
