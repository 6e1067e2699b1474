/**
 * The browser transport: one WebSocket to `/ws?token=...`, reconnecting by itself with
 * exponential backoff and jitter. Frames hold one server message or an array of them.
 */
import { TransportCore, type BackoffOptions } from './transport-core.js';

export interface WebSocketTransportOptions extends BackoffOptions {
  /** ws:// or wss:// URL of the gateway, without the token. */
  url: string;
  token: string;
  /** Injected for tests; defaults to the global WebSocket. */
  WebSocketImpl?: typeof WebSocket;
}

export class WebSocketTransport extends TransportCore {
  private ws: WebSocket | null = null;

  constructor(private readonly opts: WebSocketTransportOptions) {
    super(opts, 'gateway');
  }

  protected hasConnection(): boolean {
    return this.ws !== null;
  }

  // A socket still closing (its onclose not yet run) need not be waited for.
  protected override canReconnect(): boolean {
    return !(this.ws && this.ws.readyState <= 1);
  }

  protected post(text: string): boolean {
    if (!this.ws || this.ws.readyState !== 1) return false;
    this.ws.send(text);
    return true;
  }

  protected hangUp(): void {
    const ws = this.ws;
    this.ws = null;
    ws?.close(1000, 'client closed');
  }

  protected open(): void {
    const Impl = this.opts.WebSocketImpl ?? WebSocket;
    const sep = this.opts.url.includes('?') ? '&' : '?';
    const ws = new Impl(`${this.opts.url}${sep}token=${encodeURIComponent(this.opts.token)}`);
    this.ws = ws;
    this.connecting();
    ws.onopen = () => {
      if (this.ws === ws) this.opened((text) => ws.send(text));
    };
    ws.onmessage = (ev) => {
      if (this.ws === ws && typeof ev.data === 'string') this.deliver(ev.data);
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
}
