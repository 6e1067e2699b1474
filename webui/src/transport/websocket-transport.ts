/**
 * The browser transport: one WebSocket to `/ws?token=...`, reconnecting by itself with
 * exponential backoff and jitter. Frames hold one server message or an array of them.
 */
import type { ClientMessage, ServerMessage } from '../../../plugins/gateway/protocol.js';
import type { Transport, TransportStatus, Unsubscribe } from './types.js';

export interface WebSocketTransportOptions {
  /** ws:// or wss:// URL of the gateway, without the token. */
  url: string;
  token: string;
  /** First backoff wait (ms). */
  baseDelayMs?: number;
  /** Longest backoff wait (ms). */
  maxDelayMs?: number;
  /** Injected for tests; defaults to the global WebSocket. */
  WebSocketImpl?: typeof WebSocket;
}

export class WebSocketTransport implements Transport {
  private ws: WebSocket | null = null;
  private readonly messageFns = new Set<(m: ServerMessage) => void>();
  private readonly statusFns = new Set<(s: TransportStatus) => void>();
  private outbox: string[] = [];
  private timer: ReturnType<typeof setTimeout> | null = null;
  private closed = false;
  private status: TransportStatus = { state: 'idle', attempt: 0, wasOpen: false };

  constructor(private readonly opts: WebSocketTransportOptions) {}

  connect(): void {
    this.closed = false;
    if (this.ws) return;
    this.open();
  }

  send(msg: ClientMessage): void {
    const text = JSON.stringify(msg);
    if (this.ws && this.ws.readyState === 1) this.ws.send(text);
    else this.outbox.push(text);
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

  reconnectNow(): void {
    if (this.closed || (this.ws && this.ws.readyState <= 1)) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.open();
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const ws = this.ws;
    this.ws = null;
    ws?.close(1000, 'client closed');
    this.setStatus({ ...this.status, state: 'closed' });
  }

  private setStatus(s: TransportStatus): void {
    this.status = s;
    for (const fn of this.statusFns) fn(s);
  }

  private open(): void {
    const Impl = this.opts.WebSocketImpl ?? WebSocket;
    const sep = this.opts.url.includes('?') ? '&' : '?';
    const ws = new Impl(`${this.opts.url}${sep}token=${encodeURIComponent(this.opts.token)}`);
    this.ws = ws;
    this.setStatus({ ...this.status, state: this.status.wasOpen ? 'reconnecting' : 'connecting', nextRetryAt: undefined });
    ws.onopen = () => {
      if (this.ws !== ws) return;
      this.setStatus({ state: 'open', attempt: 0, wasOpen: true });
      const queued = this.outbox;
      this.outbox = [];
      for (const text of queued) ws.send(text);
    };
    ws.onmessage = (ev) => {
      if (this.ws !== ws || typeof ev.data !== 'string') return;
      let parsed: unknown;
      try {
        parsed = JSON.parse(ev.data);
      } catch {
        console.warn('gateway sent a frame that is not JSON');
        return;
      }
      const list = Array.isArray(parsed) ? parsed : [parsed];
      for (const m of list) {
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
    };
    ws.onclose = (ev) => {
      if (this.ws !== ws) return;
      this.ws = null;
      if (this.closed) return;
      this.scheduleRetry(ev.reason || (ev.code === 1006 ? 'connection lost' : `closed (${ev.code})`));
    };
    ws.onerror = () => {
      // onclose follows and schedules the retry.
    };
  }

  private scheduleRetry(reason: string): void {
    const attempt = this.status.attempt + 1;
    const base = this.opts.baseDelayMs ?? 300;
    const max = this.opts.maxDelayMs ?? 8000;
    const delay = Math.min(max, base * 2 ** Math.min(attempt - 1, 10)) * (0.75 + Math.random() * 0.5);
    this.setStatus({ state: 'reconnecting', attempt, nextRetryAt: Date.now() + delay, reason, wasOpen: this.status.wasOpen });
    this.timer = setTimeout(() => {
      this.timer = null;
      if (!this.closed) this.open();
    }, delay);
  }
}
