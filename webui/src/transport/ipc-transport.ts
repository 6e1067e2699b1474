/**
 * The desktop transport: the Electron preload's bridge (`window.liveagent.desktop`) hands over a
 * MessagePort whose other end the main process serves with the gateway itself, so frames are
 * the WebSocket's (one server message or an array of them) and every store stays the same.
 * Main may end a port (`{ closed: reason }`): the transport asks for a new one with backoff.
 */
import type { ClientMessage, ServerMessage } from '../../../plugins/gateway/protocol.js';
import { toUploadResult, UploadError, type UploadHandle, type UploadResult } from '../lib/uploads.js';
import type { Transport, TransportStatus, Unsubscribe } from './types.js';

/** Structural copy of hosts/desktop/contract.ts (the WebUI is type-checked on its own). */
export interface DesktopGatewayInfo {
  enabled: boolean;
  running: boolean;
  host: string;
  port: number;
  url?: string;
  token?: string;
  error?: string;
}

export interface DesktopBridge {
  readonly version: 1;
  readonly platform: string;
  connect(nonce: string): void;
  gatewayInfo(): Promise<DesktopGatewayInfo>;
  setGateway(patch: { enabled: boolean; host?: string; port?: number }): Promise<DesktopGatewayInfo>;
  onCommand(fn: (command: string) => void): () => void;
}

export const PORT_MESSAGE_TYPE = 'liveagent:port';
/** hosts/desktop/contract.ts: main refuses bigger chunks, and more than the window unacked. */
export const UPLOAD_CHUNK_BYTES = 256 * 1024;
export const UPLOAD_WINDOW_BYTES = 4 * UPLOAD_CHUNK_BYTES;

/** An upload message from main (contract.ts `UploadReply`). */
interface UploadReply {
  upload: 'ack' | 'done' | 'error' | 'file';
  id: string;
  received?: number;
  result?: unknown;
  code?: string;
  message?: string;
  mediaType?: string;
  data?: ArrayBuffer;
}

/** The HTTP status an upload error code stands for, so retry rules match the browser's. */
const STATUS: Record<string, number> = { too_large: 413, bad_request: 400, not_found: 404, failed: 500 };

/** Where the port message arrives (the page's window; injected for tests). */
export interface PortSource {
  addEventListener(type: 'message', fn: (ev: MessageEvent) => void): void;
  removeEventListener(type: 'message', fn: (ev: MessageEvent) => void): void;
}

export interface IpcTransportOptions {
  bridge: DesktopBridge;
  source?: PortSource;
  /** No port after this long: try again (ms, default 5000). */
  connectTimeoutMs?: number;
  baseDelayMs?: number;
  maxDelayMs?: number;
}

let nonces = 0;
let uploadIds = 0;

export class IpcTransport implements Transport {
  private port: MessagePort | null = null;
  private pending: { nonce: string; listener: (ev: MessageEvent) => void; timer: ReturnType<typeof setTimeout> } | null = null;
  private readonly messageFns = new Set<(m: ServerMessage) => void>();
  private readonly statusFns = new Set<(s: TransportStatus) => void>();
  private outbox: string[] = [];
  private timer: ReturnType<typeof setTimeout> | null = null;
  private closed = false;
  private status: TransportStatus = { state: 'idle', attempt: 0, wasOpen: false };
  /** Upload operations waiting for main, by id: they end with their port. */
  private readonly uploads = new Map<string, { port: MessagePort; on(r: UploadReply): void; lost(): void }>();

  constructor(private readonly opts: IpcTransportOptions) {}

  private get source(): PortSource {
    return this.opts.source ?? window;
  }

  connect(): void {
    this.closed = false;
    if (this.port || this.pending) return;
    this.open();
  }

  send(msg: ClientMessage): void {
    const text = JSON.stringify(msg);
    if (this.port) this.port.postMessage(text);
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
    if (this.closed || this.port || this.pending) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.open();
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.cancelPending();
    const port = this.port;
    this.port = null;
    if (port) {
      this.dropUploads(port);
      port.postMessage({ close: true });
      port.close();
    }
    this.setStatus({ ...this.status, state: 'closed' });
  }

  private setStatus(s: TransportStatus): void {
    this.status = s;
    for (const fn of this.statusFns) fn(s);
  }

  private cancelPending(): void {
    if (!this.pending) return;
    clearTimeout(this.pending.timer);
    this.source.removeEventListener('message', this.pending.listener);
    this.pending = null;
  }

  private open(): void {
    const nonce = `p${++nonces}-${Math.random().toString(36).slice(2)}`;
    const listener = (ev: MessageEvent) => {
      const d = ev.data as { type?: unknown; nonce?: unknown } | null;
      if (!d || d.type !== PORT_MESSAGE_TYPE || d.nonce !== nonce || !ev.ports[0]) return;
      this.cancelPending();
      if (this.closed) return void ev.ports[0].close();
      this.opened(ev.ports[0]);
    };
    const timer = setTimeout(() => {
      this.cancelPending();
      this.scheduleRetry('the desktop app did not answer');
    }, this.opts.connectTimeoutMs ?? 5000);
    this.pending = { nonce, listener, timer };
    this.source.addEventListener('message', listener);
    this.setStatus({ ...this.status, state: this.status.wasOpen ? 'reconnecting' : 'connecting', nextRetryAt: undefined });
    this.opts.bridge.connect(nonce);
  }

  private opened(port: MessagePort): void {
    this.port = port;
    port.onmessage = (ev) => {
      if (this.port !== port) return;
      if (typeof ev.data !== 'string') {
        const up = ev.data as UploadReply | null;
        if (up && typeof up.upload === 'string') return void this.uploads.get(up.id)?.on(up);
        const closed = (ev.data as { closed?: unknown } | null)?.closed;
        if (closed !== undefined) this.lost(port, typeof closed === 'string' && closed ? closed : 'connection lost');
        return;
      }
      this.deliver(ev.data);
    };
    this.setStatus({ state: 'open', attempt: 0, wasOpen: true });
    const queued = this.outbox;
    this.outbox = [];
    for (const text of queued) port.postMessage(text);
  }

  private deliver(text: string): void {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      console.warn('the desktop gateway sent a frame that is not JSON');
      return;
    }
    for (const m of Array.isArray(parsed) ? parsed : [parsed]) {
      if (!m || typeof m !== 'object' || typeof (m as { type?: unknown }).type !== 'string') continue;
      for (const fn of this.messageFns) {
        try {
          fn(m as ServerMessage);
        } catch (err) {
          console.error('gateway message handler failed', err);
        }
      }
    }
  }

  private lost(port: MessagePort, reason: string): void {
    this.port = null;
    this.dropUploads(port);
    port.close();
    if (!this.closed) this.scheduleRetry(reason);
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

  private dropUploads(port: MessagePort): void {
    for (const u of [...this.uploads.values()]) if (u.port === port) u.lost();
  }

  /**
   * Send a file to main over the port (the window has no HTTP origin): chunks of at most
   * UPLOAD_CHUNK_BYTES, their ArrayBuffers transferred, never more than UPLOAD_WINDOW_BYTES
   * ahead of main's acks; progress is what main has written. Main stages it through the uploads
   * service and answers what `POST /api/uploads` answers.
   */
  upload(file: Blob, name: string, onProgress: (loaded: number, total: number) => void): UploadHandle {
    const id = `u${++uploadIds}`;
    const port = this.port;
    let abort = () => undefined as void;
    const promise = new Promise<UploadResult>((resolve, reject) => {
      if (!port) return reject(new UploadError('network', 'the desktop app is not connected'));
      const size = file.size;
      let sent = 0;
      let acked = 0;
      let ended = false;
      let pumping = false;
      let done = false;
      const finish = (err: UploadError | null, result?: UploadResult) => {
        if (done) return;
        done = true;
        this.uploads.delete(id);
        if (err) reject(err);
        else resolve(result!);
      };
      const post = (m: unknown, transfer: Transferable[] = []) => {
        try {
          port.postMessage(m, transfer);
        } catch {
          finish(new UploadError('network', 'the connection to the desktop app failed'));
        }
      };
      const pump = async () => {
        if (pumping) return;
        pumping = true;
        try {
          while (!done && sent < size && sent - acked < UPLOAD_WINDOW_BYTES) {
            const end = Math.min(size, sent + UPLOAD_CHUNK_BYTES);
            const data = await file.slice(sent, end).arrayBuffer();
            if (done) return;
            sent = end;
            post({ upload: 'chunk', id, data }, [data]);
          }
          if (!done && !ended && sent === size) {
            ended = true;
            post({ upload: 'end', id });
          }
        } catch (err) {
          post({ upload: 'cancel', id });
          finish(new UploadError('read_failed', `the file could not be read: ${(err as Error).message}`));
        } finally {
          pumping = false;
        }
      };
      this.uploads.set(id, {
        port,
        on: (r) => {
          if (r.upload === 'ack' && typeof r.received === 'number') {
            acked = r.received;
            onProgress(acked, size);
            void pump();
          } else if (r.upload === 'done') {
            try {
              finish(null, toUploadResult(r.result));
            } catch (err) {
              finish(err as UploadError);
            }
          } else if (r.upload === 'error') finish(new UploadError(r.code ?? 'failed', r.message ?? 'the upload failed', STATUS[r.code ?? 'failed'] ?? 0));
        },
        lost: () => finish(new UploadError('network', 'the connection to the desktop app was lost')),
      });
      abort = () => {
        if (done) return;
        post({ upload: 'cancel', id });
        finish(new UploadError('cancelled', 'cancelled'));
      };
      post({ upload: 'begin', id, name, size });
      void pump();
    });
    return { promise, abort: () => abort() };
  }

  /** A stored upload's bytes from main (previews). */
  fetchUpload(uploadId: string): Promise<Blob> {
    const port = this.port;
    if (!port) return Promise.reject(new UploadError('network', 'the desktop app is not connected'));
    const id = `g${++uploadIds}`;
    return new Promise<Blob>((resolve, reject) => {
      this.uploads.set(id, {
        port,
        on: (r) => {
          this.uploads.delete(id);
          if (r.upload === 'file' && r.data instanceof ArrayBuffer) resolve(new Blob([r.data], { type: r.mediaType ?? 'application/octet-stream' }));
          else reject(new UploadError(r.code ?? 'failed', r.message ?? 'the file could not be fetched', STATUS[r.code ?? 'failed'] ?? 0));
        },
        lost: () => {
          this.uploads.delete(id);
          reject(new UploadError('network', 'the connection to the desktop app was lost'));
        },
      });
      port.postMessage({ upload: 'get', id, uploadId });
    });
  }
}
