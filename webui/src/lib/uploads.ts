/**
 * Uploads over HTTP (docs/gateway-protocol.md, "Uploads"): `POST /api/uploads?name=` with the raw
 * bytes stages a file on the server and answers its uploadId; a message then names it as
 * `{ uploadId }`. `GET /api/uploads/<id>` gives the bytes back for previews. Both carry the
 * gateway token as a bearer header. XMLHttpRequest, not fetch, for the upload: only it reports
 * upload progress.
 */
import { gatewayToken } from './auth.js';

/** What the server answers for a staged file. */
export interface UploadResult {
  uploadId: string;
  name: string;
  /** Absolute path on the server (the model reads the file there). */
  path: string;
  size: number;
  mediaType: string;
}

/** How a message names a staged file (chat_queue.send / edit_resend `attachments`). */
export interface UploadRef {
  uploadId: string;
}

/** A refused or failed upload, with the server's code and message when it sent one. */
export class UploadError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly status = 0,
  ) {
    super(message);
  }
}

export interface UploadHandle {
  promise: Promise<UploadResult>;
  /** Cancel: the promise rejects with code `cancelled`. */
  abort(): void;
}

export type UploadFn = (file: Blob, name: string, onProgress: (loaded: number, total: number) => void) => UploadHandle;

const IMAGE_TYPES = /^image\/(png|jpe?g|gif|webp)$/i;

/** Formats every provider (and the browser) previews: PNG, JPEG, GIF, WebP. */
export function isPreviewableImage(mediaType: string | undefined): boolean {
  return !!mediaType && IMAGE_TYPES.test(mediaType.split(';')[0]!.trim());
}

/** The server's error body `{ error: { code, message } }`, else a line naming the HTTP status. */
export function errorFromResponse(status: number, body: string): UploadError {
  try {
    const parsed = JSON.parse(body) as { error?: { code?: unknown; message?: unknown } };
    const e = parsed?.error;
    if (e && typeof e.message === 'string' && e.message) return new UploadError(typeof e.code === 'string' ? e.code : `http_${status}`, e.message, status);
  } catch {
    // not JSON: fall through
  }
  const why: Record<number, string> = {
    401: 'the server refused the access token',
    403: 'the server refused the upload',
    404: 'this server does not accept uploads',
    413: 'the file is too large for the server',
  };
  return new UploadError(`http_${status}`, `${why[status] ?? 'the upload failed'} (HTTP ${status})`, status);
}

/** Validate the success body; a server that answers something else is reported, not trusted. */
export function parseUploadResult(body: string): UploadResult {
  let v: unknown;
  try {
    v = JSON.parse(body);
  } catch {
    throw new UploadError('bad_response', 'the server answered the upload with something that is not JSON');
  }
  return toUploadResult(v);
}

/** The success answer, however it came (an HTTP body, a desktop port message), checked. */
export function toUploadResult(answer: unknown): UploadResult {
  const v = answer as Partial<UploadResult> | null;
  if (typeof v?.uploadId !== 'string' || !v.uploadId || typeof v.name !== 'string' || typeof v.size !== 'number') {
    throw new UploadError('bad_response', 'the server answered the upload without an uploadId');
  }
  return { uploadId: v.uploadId, name: v.name, path: typeof v.path === 'string' ? v.path : '', size: v.size, mediaType: typeof v.mediaType === 'string' ? v.mediaType : 'application/octet-stream' };
}

function apiBase(): string {
  // Relative to the page, so a server behind a path prefix works as well as one at the root.
  return new URL('api/uploads', location.href.replace(/#.*$/, '')).href;
}

function authHeader(): string | null {
  const token = gatewayToken();
  return token ? `Bearer ${token}` : null;
}

/**
 * Where uploads go when not to this page's origin over HTTP: the desktop window (file://) sends
 * them over its transport's port (transport/index.ts sets this). Stores and components call
 * {@link uploadFile} and {@link acquirePreview} either way.
 */
export interface UploadPath {
  upload: UploadFn;
  /** A stored upload's bytes. */
  fetch(uploadId: string): Promise<Blob>;
}
let uploadPath: UploadPath | null = null;

export function setUploadPath(p: UploadPath | null): void {
  uploadPath = p;
}

/** Upload one file with progress; `abort()` cancels it. */
export const uploadFile: UploadFn = (file, name, onProgress) => (uploadPath ? uploadPath.upload(file, name, onProgress) : httpUpload(file, name, onProgress));

const httpUpload: UploadFn = (file, name, onProgress) => {
  const xhr = new XMLHttpRequest();
  const promise = new Promise<UploadResult>((resolve, reject) => {
    xhr.open('POST', `${apiBase()}?name=${encodeURIComponent(name)}`);
    const auth = authHeader();
    if (auth) xhr.setRequestHeader('Authorization', auth);
    xhr.setRequestHeader('Content-Type', file.type || 'application/octet-stream');
    xhr.upload.onprogress = (ev) => onProgress(ev.loaded, ev.lengthComputable ? ev.total : file.size);
    xhr.onload = () => {
      if (xhr.status >= 200 && xhr.status < 300) {
        try {
          resolve(parseUploadResult(xhr.responseText));
        } catch (err) {
          reject(err);
        }
      } else reject(errorFromResponse(xhr.status, xhr.responseText));
    };
    xhr.onerror = () => reject(new UploadError('network', 'the connection to the server failed'));
    xhr.onabort = () => reject(new UploadError('cancelled', 'cancelled'));
    xhr.send(file);
  });
  return { promise, abort: () => xhr.abort() };
};

/**
 * Object URLs of fetched uploads, shared by every view of the same upload and counted: the URL
 * is revoked when the last view lets go (a thumbnail and the lightbox showing one image fetch
 * it once).
 */
interface CacheEntry {
  refs: number;
  url: Promise<string>;
}
const previews = new Map<string, CacheEntry>();

async function fetchPreview(uploadId: string): Promise<string> {
  if (uploadPath) return URL.createObjectURL(await uploadPath.fetch(uploadId));
  const auth = authHeader();
  const res = await fetch(`${apiBase()}/${encodeURIComponent(uploadId)}`, { headers: auth ? { Authorization: auth } : {} });
  if (!res.ok) throw errorFromResponse(res.status, await res.text().catch(() => ''));
  return URL.createObjectURL(await res.blob());
}

/** An object URL for an upload's bytes; pair every call with {@link releasePreview}. */
export function acquirePreview(uploadId: string): Promise<string> {
  let e = previews.get(uploadId);
  if (!e) {
    const url = fetchPreview(uploadId);
    e = { refs: 0, url };
    previews.set(uploadId, e);
    // A failed fetch is not kept: the next view tries again.
    url.catch(() => {
      if (previews.get(uploadId)?.url === url) previews.delete(uploadId);
    });
  }
  e.refs++;
  return e.url;
}

export function releasePreview(uploadId: string): void {
  const e = previews.get(uploadId);
  if (!e || --e.refs > 0) return;
  previews.delete(uploadId);
  void e.url.then((u) => URL.revokeObjectURL(u)).catch(() => undefined);
}

/**
 * Seed the cache with the bytes just uploaded, so the sent message's thumbnail needs no round
 * trip. Nobody may look at it (a failed send): unclaimed, it is dropped after a minute.
 */
export function seedPreview(uploadId: string, bytes: Blob): void {
  if (previews.has(uploadId)) return;
  previews.set(uploadId, { refs: 0, url: Promise.resolve(URL.createObjectURL(bytes)) });
  setTimeout(() => {
    const e = previews.get(uploadId);
    if (e && e.refs === 0) {
      e.refs = 1;
      releasePreview(uploadId);
    }
  }, 60_000);
}

/** How many previews are held (for tests and leak checks). */
export function previewCount(): number {
  return previews.size;
}
