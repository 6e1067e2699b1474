/**
 * What every transport does the same whatever carries the frames (WebSocket, MessagePort):
 * listeners, the status, the outbox flushed after `open`, frame parsing and the reconnect
 * backoff. A subclass owns only its connection: `open()` starts one, and it calls `opened`,
 * `deliver` and `scheduleRetry` as that connection goes.
 */
import type { ClientMessage, ServerMessage } from '../../../lib/gateway-protocol/protocol.js';
import type { Transport, TransportStatus, Unsubscribe } from './types.js';

export interface BackoffOptions {
  /** First backoff wait (ms, default 300). */
  baseDelayMs?: number;
  /** Longest backoff wait (ms, default 8000). */
  maxDelayMs?: number;
}

export abstract class TransportCore implements Transport {
  private readonly messageFns = new Set<(m: ServerMessage) => void>();
  private readonly statusFns = new Set<(s: TransportStatus) => void>();
  private outbox: string[] = [];
  private timer: ReturnType<typeof setTimeout> | null = null;
  protected closed = false;
  private status: TransportStatus = { state: 'idle', attempt: 0, wasOpen: false };

  /** `who` names the far end in the warning about a frame that is not JSON. */
  constructor(
    private readonly backoff: BackoffOptions,
    private readonly who: string,
  ) {}

  /** A connection is open, or on its way: `connect()` starts no other. */
  protected abstract hasConnection(): boolean;
  /** Start a connection (its status is set by `connecting`, then `opened` or `scheduleRetry`). */
  protected abstract open(): void;
  /** Post one text frame on the open connection; false when there is none (it waits in the outbox). */
  protected abstract post(text: string): boolean;
  /** End the connection on `close()`. */
  protected abstract hangUp(): void;

  connect(): void {
    this.closed = false;
    if (this.hasConnection()) return;
    this.open();
  }

  send(msg: ClientMessage): void {
    const text = JSON.stringify(msg);
    if (!this.post(text)) this.outbox.push(text);
  }

  onMessage(fn: (msg: ServerMessage) => void): Unsubscribe {
    this.messageFns.add(fn);
    return () => this.messageFns.delete(fn);
  }

  onStatus(fn: (status: TransportStatus) => void): Unsubscribe {
    this.statusFns.add(fn);
    fn(this.status);
    return () => this.statusFns.delete(fn);
  }

  /** Whether `reconnectNow()` may start one (a subclass may allow it over a connection that is ending). */
  protected canReconnect(): boolean {
    return !this.hasConnection();
  }

  reconnectNow(): void {
    if (this.closed || !this.canReconnect()) return;
    this.clearTimer();
    this.open();
  }

  close(): void {
    this.closed = true;
    this.clearTimer();
    this.hangUp();
    this.setStatus({ ...this.status, state: 'closed' });
  }

  protected setStatus(s: TransportStatus): void {
    this.status = s;
    for (const fn of this.statusFns) fn(s);
  }

  /** An attempt starts: a reconnect once a connection was open before. */
  protected connecting(): void {
    this.setStatus({ ...this.status, state: this.status.wasOpen ? 'reconnecting' : 'connecting', nextRetryAt: undefined });
  }

  /** The connection is open: listeners see `open` first (they re-subscribe), then the outbox goes out. */
  protected opened(post: (text: string) => void): void {
    this.setStatus({ state: 'open', attempt: 0, wasOpen: true });
    const queued = this.outbox;
    this.outbox = [];
    for (const text of queued) post(text);
  }

  /** One frame: a server message or an array of them, each handed to every listener. */
  protected deliver(text: string): void {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      console.warn(`${this.who} sent a frame that is not JSON`);
      return;
    }
    for (const m of Array.isArray(parsed) ? parsed : [parsed]) {
      if (!m || typeof m !== 'object' || typeof (m as { type?: unknown }).type !== 'string') continue;
      for (const fn of this.messageFns) {
        try {
          fn(m as ServerMessage);
        } catch (err) {
          // One bad handler must not stop the rest of the burst.
          console.error('gateway message handler failed', err);
        }
      }
    }
  }

  /** Exponential backoff with jitter, so many tabs do not come back at the same instant. */
  protected scheduleRetry(reason: string): void {
    const attempt = this.status.attempt + 1;
    const base = this.backoff.baseDelayMs ?? 300;
    const max = this.backoff.maxDelayMs ?? 8000;
    const delay = Math.min(max, base * 2 ** Math.min(attempt - 1, 10)) * (0.75 + Math.random() * 0.5);
    this.setStatus({ state: 'reconnecting', attempt, nextRetryAt: Date.now() + delay, reason, wasOpen: this.status.wasOpen });
    this.timer = setTimeout(() => {
      this.timer = null;
      if (!this.closed) this.open();
    }, delay);
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}
