/**
 * One connected socket and its bounded send queue. Nothing is written to the socket when an
 * event arrives: events pile up as shared batches and each client is flushed once per
 * setImmediate, as ONE frame holding an array of messages (coalescing is the big lever). The
 * bytes handed to the socket and not yet written out are counted here, because `bufferedAmount`
 * stays 0 until the kernel buffer is full; a client over its cap is dropped so it can never hold
 * unbounded memory or slow the others.
 */
import type { WebSocket } from 'ws';
import type { ServerMessage } from '../../lib/gateway-protocol/protocol.js';
import { Batch } from './wire.js';

export { Batch };

type Chunk = Buffer | Batch;

const OPEN = Buffer.from('[');
const COMMA = Buffer.from(',');
const CLOSE = Buffer.from(']');

export interface ClientHost {
  /** Ask for this client to be flushed on the next setImmediate. */
  schedule(client: GatewayClient): void;
  /** The client went over its cap (or failed): close it and forget it. */
  drop(client: GatewayClient, reason: string): void;
  maxBufferBytes(): number;
  /** This client's outstanding bytes changed by `delta` (the host keeps the total of every client). */
  heldChanged(delta: number): void;
  /** About to write: make room under the total cap. False when the writer itself had to go. */
  roomFor(writer: GatewayClient): boolean;
}

let nextId = 1;

export class GatewayClient {
  readonly id = `g${nextId++}`;
  /** Conversations this client follows. */
  readonly subscriptions = new Set<string>();
  /** Answered the last ping. */
  alive = true;
  closed = false;
  /** Highest number of bytes this client ever had outstanding (observability, the bench). */
  maxHeldBytes = 0;
  /** Client messages are handled one at a time, in order. */
  inbox: Promise<void> = Promise.resolve();
  private queue: Chunk[] = [];
  private inflight = 0;

  constructor(readonly ws: WebSocket, private readonly host: ClientHost) {}

  /** Bytes handed to the socket and not yet written out. */
  get heldBytes(): number {
    return this.inflight;
  }

  enqueue(chunk: Chunk): void {
    if (this.closed) return;
    this.queue.push(chunk);
    this.host.schedule(this);
  }

  /** A message for this client alone (a reply, a snapshot). */
  send(message: ServerMessage): void {
    if (this.closed) return;
    this.enqueue(Buffer.from(`[${JSON.stringify(message)}]`));
  }

  /** Already-serialized messages (replayed events), as one chunk. */
  sendSerialized(parts: string[]): void {
    if (this.closed || parts.length === 0) return;
    this.enqueue(Buffer.from(`[${parts.join(',')}]`));
  }

  /** Write everything queued as one frame. */
  flush(): void {
    if (this.closed || this.queue.length === 0) return;
    const chunks = this.queue;
    this.queue = [];
    let frame: Buffer;
    if (chunks.length === 1) {
      const c = chunks[0]!;
      frame = c instanceof Batch ? c.frame() : c;
    } else {
      // Several chunks (replies, other conversations): merge their arrays into one.
      const pieces: Buffer[] = [OPEN];
      chunks.forEach((c, i) => {
        const b = c instanceof Batch ? c.frame() : c;
        if (i > 0) pieces.push(COMMA);
        pieces.push(b.subarray(1, b.length - 1));
      });
      pieces.push(CLOSE);
      frame = Buffer.concat(pieces);
    }
    const size = frame.length;
    // Dropped only when already more than the cap behind: a single frame larger than the cap (a
    // long reply's message_end, a big snapshot) still reaches a client that is reading. So at
    // most cap + one frame is ever held for a client.
    if (this.inflight > this.host.maxBufferBytes()) {
      this.host.drop(this, `send buffer over ${this.host.maxBufferBytes()} bytes (client not reading)`);
      return;
    }
    // The same rule for every client together: the total is checked before this frame adds to it.
    if (!this.host.roomFor(this)) return;
    this.inflight += size;
    this.host.heldChanged(size);
    if (this.inflight > this.maxHeldBytes) this.maxHeldBytes = this.inflight;
    this.ws.send(frame, { binary: false, compress: false }, () => {
      this.inflight -= size;
      if (!this.closed) this.host.heldChanged(-size);
    });
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.queue = [];
    // What is still in flight no longer counts against the total: the socket is going away.
    this.host.heldChanged(-this.inflight);
  }
}
