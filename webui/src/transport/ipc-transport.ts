/**
 * The desktop transport: the Electron preload's bridge (`window.liveagent.desktop`) hands over a
 * MessagePort whose other end the main process serves with the gateway itself, so frames are
 * the WebSocket's (one server message or an array of them) and every store stays the same.
 * Main may end a port (`{ closed: reason }`): the transport asks for a new one with backoff.
 */
import { toUploadResult, UploadError, type UploadHandle, type UploadResult } from '../lib/uploads.js';
import { TransportCore, type BackoffOptions } from './transport-core.js';
// The one contract with the desktop's main process and preload (it imports nothing, so the page can bundle it).
import { PORT_MESSAGE_TYPE, UPLOAD_CHUNK_BYTES, UPLOAD_WINDOW_BYTES } from '../../../hosts/desktop/contract.js';
import type { DesktopBridge, UploadReply } from '../../../hosts/desktop/contract.js';

export type { DesktopBridge, DesktopGatewayInfo } from '../../../hosts/desktop/contract.js';
export { PORT_MESSAGE_TYPE, UPLOAD_CHUNK_BYTES, UPLOAD_WINDOW_BYTES };

/** The HTTP status an upload error code stands for, so retry rules match the browser's. */
const STATUS: Record<string, number> = { too_large: 413, bad_request: 400, not_found: 404, failed: 500 };

/** Where the port message arrives (the page's window; injected for tests). */
export interface PortSource {
  addEventListener(type: 'message', fn: (ev: MessageEvent) => void): void;
  removeEventListener(type: 'message', fn: (ev: MessageEvent) => void): void;
}

export interface IpcTransportOptions extends BackoffOptions {
  bridge: DesktopBridge;
  source?: PortSource;
  /** No port after this long: try again (ms, default 5000). */
  connectTimeoutMs?: number;
}

let nonces = 0;
let uploadIds = 0;

export class IpcTransport extends TransportCore {
  private port: MessagePort | null = null;
  private pending: { nonce: string; listener: (ev: MessageEvent) => void; timer: ReturnType<typeof setTimeout> } | null = null;
  /** Upload operations waiting for main, by id: they end with their port. */
  private readonly uploads = new Map<string, { port: MessagePort; on(r: UploadReply): void; lost(): void }>();

  constructor(private readonly opts: IpcTransportOptions) {
    super(opts, 'the desktop gateway');
  }

  private get source(): PortSource {
    return this.opts.source ?? window;
  }

  protected hasConnection(): boolean {
    return !!(this.port || this.pending);
  }

  protected post(text: string): boolean {
    if (!this.port) return false;
    this.port.postMessage(text);
    return true;
  }

  protected hangUp(): void {
    this.cancelPending();
    const port = this.port;
    this.port = null;
    if (port) {
      this.dropUploads(port);
      port.postMessage({ close: true });
      port.close();
    }
  }

  private cancelPending(): void {
    if (!this.pending) return;
    clearTimeout(this.pending.timer);
    this.source.removeEventListener('message', this.pending.listener);
    this.pending = null;
  }

  protected open(): void {
    const nonce = `p${++nonces}-${Math.random().toString(36).slice(2)}`;
    const listener = (ev: MessageEvent) => {
      const d = ev.data as { type?: unknown; nonce?: unknown } | null;
      if (!d || d.type !== PORT_MESSAGE_TYPE || d.nonce !== nonce || !ev.ports[0]) return;
      this.cancelPending();
      if (this.closed) return void ev.ports[0].close();
      this.attach(ev.ports[0]);
    };
    const timer = setTimeout(() => {
      this.cancelPending();
      this.scheduleRetry('the desktop app did not answer');
    }, this.opts.connectTimeoutMs ?? 5000);
    this.pending = { nonce, listener, timer };
    this.source.addEventListener('message', listener);
    this.connecting();
    this.opts.bridge.connect(nonce);
  }

  private attach(port: MessagePort): void {
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
    this.opened((text) => port.postMessage(text));
  }

  private lost(port: MessagePort, reason: string): void {
    this.port = null;
    this.dropUploads(port);
    port.close();
    if (!this.closed) this.scheduleRetry(reason);
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
          if (r.upload === 'file' && r.data instanceof ArrayBuffer) return resolve(new Blob([r.data], { type: r.mediaType ?? 'application/octet-stream' }));
          const e = r.upload === 'error' ? r : undefined;
          reject(new UploadError(e?.code ?? 'failed', e?.message ?? 'the file could not be fetched', STATUS[e?.code ?? 'failed'] ?? 0));
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
