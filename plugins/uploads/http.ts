/**
 * The uploads' HTTP routes on the gateway (docs/gateway-protocol.md, "Uploads"). The gateway
 * checks Host, Origin and the bearer token before these run.
 *
 * - `POST /api/uploads?name=<file name>`: the raw bytes as the body. 200
 *   `{ uploadId, name, path, size, mediaType }`; 413 past `uploads.maxBytes` (at once when
 *   Content-Length says so, else as soon as the body passes it; the partial file is removed).
 * - `GET /api/uploads/<uploadId>`: the file, with its media type (previews). 404 when unknown.
 */
import fs from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { sendJson, sendJsonError } from '../../lib/http/json-reply.js';
import { isTextual } from './media-type.js';
import { uploadInfo, uploadNameError } from './service.js';
import { UploadError, type UploadStore } from './store.js';

/** Past the limit, at most this much more of a body is read (and dropped) so the client sees the 413; then the socket goes. */
const DRAIN_MAX = 1024 * 1024;

/** Read (and drop) what is left of the body, up to DRAIN_MAX, so the client is reading when the answer comes. */
function drain(req: IncomingMessage): void {
  let left = DRAIN_MAX;
  req.on('data', (c: Buffer) => {
    left -= c.length;
    if (left < 0) req.destroy();
  });
  req.on('error', () => undefined);
  req.resume();
}

export async function postUpload(store: UploadStore, req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
  const name = url.searchParams.get('name');
  if (!name || !name.trim()) {
    drain(req);
    return sendJsonError(res, 400, 'bad_request', 'the name query parameter is required: POST /api/uploads?name=<file name>');
  }
  const bad = uploadNameError(name);
  if (bad) {
    drain(req);
    return sendJsonError(res, 400, 'bad_request', bad);
  }
  const header = req.headers['content-length'];
  const declared = header === undefined ? undefined : Number(header);
  if (declared !== undefined && !Number.isSafeInteger(declared)) {
    drain(req);
    return sendJsonError(res, 400, 'bad_request', 'Content-Length is not a number');
  }
  try {
    // The iterator must not destroy the request when staging stops early (over the limit):
    // the 413 still has to go out on its socket.
    const body = req.iterator({ destroyOnReturn: false }) as AsyncIterable<Uint8Array>;
    const { record, deduped } = await store.stage(body, { name, ...(declared !== undefined ? { declaredSize: declared } : {}) });
    sendJson(res, 200, { ...uploadInfo(record), ...(deduped ? { deduped: true } : {}) });
  } catch (err) {
    if (!req.complete) {
      res.setHeader('Connection', 'close');
      drain(req);
    }
    if (err instanceof UploadError) return sendJsonError(res, err.code === 'too_large' ? 413 : err.code === 'not_found' ? 404 : 400, err.code, err.message);
    if (req.destroyed && !req.complete) return void res.destroy(); // the client went away mid-body
    throw err;
  }
}

export async function getUpload(store: UploadStore, req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
  const id = decodeURIComponent(url.pathname.slice('/api/uploads/'.length));
  const rec = id && !id.includes('/') ? store.get(id) : undefined;
  if (!rec) return sendJsonError(res, 404, 'not_found', `unknown upload "${id}"`);
  const type = isTextual(rec.mediaType) && rec.text ? `${rec.mediaType}; charset=utf-8` : rec.mediaType;
  res.writeHead(200, {
    'Content-Type': type,
    'Content-Length': rec.size,
    // Same bytes, same id: a preview may be kept; never shared, it is behind the token.
    'Cache-Control': 'private, max-age=86400, immutable',
    'Content-Disposition': `inline; filename*=UTF-8''${encodeURIComponent(rec.storedName)}`,
    // A stored HTML or SVG file must not run as a page of this origin.
    'Content-Security-Policy': "default-src 'none'; sandbox",
    'X-Content-Type-Options': 'nosniff',
  });
  if (req.method === 'HEAD') return void res.end();
  await new Promise<void>((resolve) => {
    const stream = fs.createReadStream(rec.path);
    stream.on('error', () => {
      res.destroy();
      resolve();
    });
    res.on('close', () => {
      stream.destroy();
      resolve();
    });
    stream.pipe(res);
  });
}
