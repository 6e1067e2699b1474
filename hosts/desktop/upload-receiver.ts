/**
 * Uploads from the desktop window over its gateway port (the page loads from file://, so it has
 * no `POST /api/uploads` to go to). The renderer sends the file in bounded chunks (transferred
 * ArrayBuffers) and main stages them through the same uploads service the HTTP route uses: the
 * same `uploads.maxBytes`, name checks, safe stored names and dedupe, the same answer. Main acks
 * each chunk once it is written, and the renderer keeps at most UPLOAD_WINDOW_BYTES unacked, so
 * a slow disk holds the renderer back instead of filling main's memory. A cancel (or the port
 * closing) ends the stage mid-way and the store removes the partial file.
 *
 * Messages (objects on the port, beside the gateway's string frames): see contract.ts
 * `UploadRequest` / `UploadReply`.
 */
import { promises as fsp } from 'node:fs';
import { UploadError, uploadInfo, uploadNameError, type UploadsService } from '../../plugins/uploads/service.js';
import { UPLOAD_CHUNK_BYTES, UPLOAD_WINDOW_BYTES, type UploadReply } from './contract.js';

/** Uploads one port may run at once (the composer takes at most 20 files per message). */
const MAX_ACTIVE = 20;
const ID = /^[A-Za-z0-9_-]{1,64}$/;

export interface UploadReceiverOptions {
  /** The uploads service (undefined when the plugin is not loaded: uploads are refused). */
  uploads: () => UploadsService | undefined;
  /** Send a reply to the renderer (the port; an ArrayBuffer in `data` is the whole file). */
  post: (reply: UploadReply) => void;
  chunkBytes?: number;
  windowBytes?: number;
}

class Cancelled extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'Cancelled';
  }
}

/** One incoming file: the chunks as the async iterable the store reads. */
class Incoming {
  private queue: Uint8Array[] = [];
  private queued = 0;
  private ended = false;
  private failure: Error | null = null;
  private wake: (() => void) | null = null;
  /** Bytes written to the store, and bytes that came (written or queued). */
  received = 0;
  pushed = 0;

  constructor(
    readonly declared: number,
    private readonly window: number,
    private readonly onWritten: (received: number) => void,
  ) {}

  push(chunk: Uint8Array): void {
    this.queue.push(chunk);
    this.queued += chunk.length;
    this.pushed += chunk.length;
    if (this.queued > this.window) this.fail(new UploadError('bad_request', `the window sent more than ${this.window} bytes ahead of what was written`));
    this.poke();
  }

  end(): void {
    this.ended = true;
    this.poke();
  }

  fail(err: Error): void {
    this.failure ??= err;
    this.poke();
  }

  private poke(): void {
    const w = this.wake;
    this.wake = null;
    w?.();
  }

  async *chunks(): AsyncGenerator<Uint8Array> {
    for (;;) {
      if (this.failure) throw this.failure;
      const next = this.queue.shift();
      if (next) {
        this.queued -= next.length;
        yield next;
        // The store asks for the next chunk once this one is written: that is the ack.
        this.received += next.length;
        this.onWritten(this.received);
        continue;
      }
      if (this.ended) return;
      await new Promise<void>((r) => (this.wake = r));
    }
  }
}

function bytesOf(data: unknown): Uint8Array | undefined {
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  return undefined;
}

export class UploadReceiver {
  private readonly active = new Map<string, Incoming>();
  private closed = false;

  constructor(private readonly opts: UploadReceiverOptions) {}

  /** Whether `data` was an upload message (handled here); anything else is not ours. */
  handle(data: unknown): boolean {
    if (!data || typeof data !== 'object' || typeof (data as { upload?: unknown }).upload !== 'string') return false;
    const m = data as Record<string, unknown>;
    const id = m.id;
    if (typeof id !== 'string' || !ID.test(id)) return true; // nothing to answer to
    if (this.closed) return true;
    switch (m.upload) {
      case 'begin':
        this.begin(id, m.name, m.size);
        break;
      case 'chunk': {
        const inc = this.active.get(id);
        const bytes = bytesOf(m.data);
        if (!inc) break; // cancelled or failed already: late chunks are dropped
        if (!bytes) inc.fail(new UploadError('bad_request', 'a chunk carried no bytes'));
        else if (bytes.length > (this.opts.chunkBytes ?? UPLOAD_CHUNK_BYTES)) inc.fail(new UploadError('bad_request', `a chunk may be at most ${this.opts.chunkBytes ?? UPLOAD_CHUNK_BYTES} bytes`));
        else if (inc.pushed + bytes.length > inc.declared) inc.fail(new UploadError('bad_request', `more bytes came than the ${inc.declared} the upload announced`));
        else inc.push(bytes);
        break;
      }
      case 'end':
        this.active.get(id)?.end();
        break;
      case 'cancel':
        this.active.get(id)?.fail(new Cancelled('cancelled'));
        break;
      case 'get':
        void this.get(id, m.uploadId);
        break;
      default:
        this.opts.post({ upload: 'error', id, code: 'bad_request', message: `unknown upload message "${String(m.upload)}"` });
    }
    return true;
  }

  /** The port went away: every upload in progress stops and leaves nothing behind. */
  closeAll(): void {
    this.closed = true;
    for (const inc of this.active.values()) inc.fail(new Cancelled('the window closed'));
  }

  /** Uploads in progress (for tests). */
  get size(): number {
    return this.active.size;
  }

  private reply(r: UploadReply): void {
    if (this.closed) return;
    try {
      this.opts.post(r);
    } catch {
      /* the port is gone; closeAll follows */
    }
  }

  private begin(id: string, name: unknown, size: unknown): void {
    const refuse = (code: string, message: string) => this.reply({ upload: 'error', id, code, message });
    if (this.active.has(id)) return refuse('bad_request', `upload ${id} is already in progress`);
    const badName = uploadNameError(name);
    if (badName) return refuse('bad_request', badName);
    if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 0) return refuse('bad_request', 'size: must be a whole number of bytes');
    const uploads = this.opts.uploads();
    if (!uploads) return refuse('not_found', 'this app does not accept uploads (the uploads plugin is not loaded)');
    if (this.active.size >= MAX_ACTIVE) return refuse('bad_request', `at most ${MAX_ACTIVE} uploads at once`);
    const inc = new Incoming(size, this.opts.windowBytes ?? UPLOAD_WINDOW_BYTES, (received) => this.reply({ upload: 'ack', id, received }));
    this.active.set(id, inc);
    uploads
      .stage(inc.chunks(), { name: name as string, declaredSize: size })
      .then(
        ({ record, deduped }) => this.reply({ upload: 'done', id, result: { ...uploadInfo(record), ...(deduped ? { deduped: true } : {}) } }),
        (err: Error) => {
          if (err instanceof Cancelled) return this.reply({ upload: 'error', id, code: 'cancelled', message: 'cancelled' });
          if (err instanceof UploadError) return this.reply({ upload: 'error', id, code: err.code, message: err.message });
          this.reply({ upload: 'error', id, code: 'failed', message: `the upload failed: ${err.message}` });
        },
      )
      .finally(() => {
        if (this.active.get(id) === inc) this.active.delete(id);
      });
  }

  /** A stored upload's bytes (previews: the page cannot GET /api/uploads/<id> from file://). */
  private async get(id: string, uploadId: unknown): Promise<void> {
    const rec = typeof uploadId === 'string' ? this.opts.uploads()?.get(uploadId) : undefined;
    if (!rec) return this.reply({ upload: 'error', id, code: 'not_found', message: `unknown upload "${String(uploadId)}"` });
    try {
      const buf = await fsp.readFile(rec.path);
      // Its own ArrayBuffer: a pooled Buffer's would carry other bytes along.
      const data = buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength) as ArrayBuffer;
      this.reply({ upload: 'file', id, mediaType: rec.mediaType, data });
    } catch (err) {
      this.reply({ upload: 'error', id, code: 'not_found', message: `upload "${rec.uploadId}" could not be read: ${(err as Error).message}` });
    }
  }
}
