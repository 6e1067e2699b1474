/**
 * The composer's files: each one starts uploading the moment it is added, shows its progress,
 * can be cancelled or removed, and reports the server's refusal on its own chip. The message can
 * go once every file is staged. DOM-free (the upload function and URL helpers are injected), so
 * the state machine is unit-tested on its own.
 */
import type { ExecutionMode } from '../../../plugin-api.js';
import { isPreviewableImage, UploadError, type UploadFn, type UploadHandle, type UploadResult } from './uploads.js';

/** The gateway takes at most this many attachments per message. */
export const MAX_ATTACHMENTS = 20;

export type UploadStatus = 'uploading' | 'done' | 'error';

export interface UploadItem {
  key: string;
  name: string;
  size: number;
  mediaType: string;
  status: UploadStatus;
  /** Bytes sent so far, and 0..1 of the file. */
  loaded: number;
  progress: number;
  /** The server's message (or ours) when the upload failed. */
  error: string | null;
  /** Whether trying again may help (a lost connection, a server error; not a refusal). */
  retryable: boolean;
  result: UploadResult | null;
  /** A local object URL for an image's thumbnail (revoked when the item goes). */
  previewUrl: string | null;
}

/** A picked, pasted or dropped file (a File; a named Blob in tests). */
export type NamedBlob = Blob & { name?: string };

export interface QueueDeps {
  upload: UploadFn;
  createUrl?: (b: Blob) => string;
  revokeUrl?: (url: string) => void;
}

export const TEXT_MODE_HINT = 'Files can be attached in Tools or Agent-dev mode only: the model reads them with its tools. Switch the mode to attach.';

/** Whether files may be attached in this execution mode (the server refuses them in text mode too). */
export function attachmentsAllowed(mode: ExecutionMode): boolean {
  return mode !== 'text';
}

/** Whether a message can be sent now, and if not, why (shown as the Send button's title). */
export function sendState(items: readonly UploadItem[], text: string, mode: ExecutionMode): { canSend: boolean; reason: string | null } {
  if (items.length && !attachmentsAllowed(mode)) return { canSend: false, reason: TEXT_MODE_HINT };
  const uploading = items.filter((i) => i.status === 'uploading').length;
  if (uploading) return { canSend: false, reason: uploading === 1 ? 'Waiting for a file to finish uploading' : `Waiting for ${uploading} files to finish uploading` };
  if (items.some((i) => i.status === 'error')) return { canSend: false, reason: 'Remove the files that failed to upload (or retry them) to send' };
  if (!text.trim() && !items.length) return { canSend: false, reason: null };
  return { canSend: true, reason: null };
}

/** A refusal (too large, bad name, no access) stays one; a lost connection or a server failure may pass. */
export function isRetryable(err: unknown): boolean {
  if (!(err instanceof UploadError)) return true;
  return err.code === 'network' || err.status >= 500;
}

let seq = 0;

export class UploadQueue {
  private readonly files = new Map<string, NamedBlob>();
  private readonly handles = new Map<string, UploadHandle>();

  /**
   * `store` is reactive in the app: every change goes through it so the view follows. `notice`
   * says what happened on its own (a file that turned out to be attached already).
   */
  constructor(
    readonly store: { items: UploadItem[]; notice?: string | null },
    private readonly deps: QueueDeps,
  ) {}

  get items(): UploadItem[] {
    return this.store.items;
  }

  /** Start uploading files. Returns a hint when some or all were not taken (mode, count), else null. */
  add(files: Iterable<NamedBlob>, mode: ExecutionMode): string | null {
    const list = [...files];
    if (!list.length) return null;
    if (!attachmentsAllowed(mode)) return TEXT_MODE_HINT;
    let hint: string | null = null;
    for (const f of list) {
      if (this.items.length >= MAX_ATTACHMENTS) {
        hint = `At most ${MAX_ATTACHMENTS} files per message: ${list.length - list.indexOf(f)} not attached.`;
        break;
      }
      const key = `u${++seq}`;
      const mediaType = f.type || 'application/octet-stream';
      const name = f.name || (mediaType.startsWith('image/') ? `pasted-image-${seq}.${mediaType.split('/')[1]?.replace('jpeg', 'jpg') ?? 'png'}` : `file-${seq}`);
      this.files.set(key, f);
      this.items.push({
        key,
        name,
        size: f.size,
        mediaType,
        status: 'uploading',
        loaded: 0,
        progress: 0,
        error: null,
        retryable: false,
        result: null,
        previewUrl: isPreviewableImage(mediaType) && this.deps.createUrl ? this.deps.createUrl(f) : null,
      });
      this.start(key);
    }
    return hint;
  }

  private find(key: string): UploadItem | undefined {
    return this.items.find((i) => i.key === key);
  }

  private start(key: string): void {
    const item = this.find(key);
    const file = this.files.get(key);
    if (!item || !file) return;
    Object.assign(item, { status: 'uploading', loaded: 0, progress: 0, error: null, retryable: false, result: null });
    const handle = this.deps.upload(file, item.name, (loaded, total) => {
      const it = this.find(key);
      if (!it || it.status !== 'uploading') return;
      it.loaded = loaded;
      it.progress = total > 0 ? Math.min(1, loaded / total) : 0;
    });
    this.handles.set(key, handle);
    handle.promise.then(
      (result) => {
        if (this.handles.get(key) !== handle) return;
        this.handles.delete(key);
        const it = this.find(key);
        if (!it) return;
        // The server stores the same bytes once and answers with the first upload: one chip is enough.
        const twin = this.items.find((o) => o !== it && o.result?.uploadId === result.uploadId);
        if (twin) {
          this.store.notice = `${it.name} is attached already${twin.name !== it.name ? ` (as ${twin.name})` : ''}.`;
          this.remove(key);
          return;
        }
        Object.assign(it, { status: 'done', progress: 1, loaded: it.size, result });
      },
      (err: unknown) => {
        if (this.handles.get(key) !== handle) return;
        this.handles.delete(key);
        const it = this.find(key);
        // A cancel removes the item itself; nothing to show.
        if (!it || (err instanceof UploadError && err.code === 'cancelled')) return;
        Object.assign(it, { status: 'error', error: err instanceof Error ? err.message : String(err), retryable: isRetryable(err) });
      },
    );
  }

  /** Upload a failed file again (when that may help). */
  retry(key: string): void {
    const it = this.find(key);
    if (it?.status === 'error' && it.retryable) this.start(key);
  }

  /** Cancel the upload (if it runs) and drop the file. */
  remove(key: string): void {
    const at = this.items.findIndex((i) => i.key === key);
    if (at < 0) return;
    const [item] = this.items.splice(at, 1);
    const handle = this.handles.get(key);
    this.handles.delete(key);
    handle?.abort();
    this.files.delete(key);
    if (item?.previewUrl) this.deps.revokeUrl?.(item.previewUrl);
  }

  clear(): void {
    for (const i of [...this.items]) this.remove(i.key);
  }

  /** The bytes of a file still held (to seed the sent message's preview). */
  fileOf(key: string): NamedBlob | undefined {
    return this.files.get(key);
  }

  /**
   * Hand the staged files over for sending: the composer empties, the items come back (for
   * {@link restore} when the send fails, else {@link release}).
   */
  take(): UploadItem[] {
    const taken = this.items.splice(0, this.items.length);
    return taken;
  }

  /** Put taken items back (the send failed), in front of any added meanwhile. */
  restore(taken: UploadItem[]): void {
    this.items.unshift(...taken);
  }

  /** Free what taken items held once their message went. */
  release(taken: UploadItem[]): void {
    for (const i of taken) {
      this.files.delete(i.key);
      if (i.previewUrl) this.deps.revokeUrl?.(i.previewUrl);
    }
  }
}
