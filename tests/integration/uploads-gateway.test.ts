/**
 * Uploads through the server host and the gateway: `POST /api/uploads` (token, Origin, size
 * limit, dedupe, safe names), `GET /api/uploads/<id>`, and messages that name uploads in
 * `chat_queue.send` / `edit_resend` (attachment-only resend), `chat_queue.regenerate` and
 * `conversations.truncate_preview`, with text mode refused.
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { ContentBlock, Message, Plugin } from '../../plugin-api.js';
import uploadsPlugin from '../../plugins/uploads/index.js';
import type { FakeStep } from '../helpers/fake-provider.js';
import { boot, cleanup, TestClient, type Booted } from './gateway-harness.js';
import { tinyPng } from '../helpers/uploads-fixtures.js';

afterEach(cleanup);
afterAll(cleanup);

interface HttpAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  json(): any;
}

/** One HTTP request with node's client (it reports an early answer even while the body is still going). */
function request(b: Booted, method: string, pathAndQuery: string, opts: { token?: string | null; headers?: Record<string, string>; body?: Buffer | Buffer[] } = {}): Promise<HttpAnswer> {
  const url = new URL(pathAndQuery, b.server.url);
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  const token = opts.token === undefined ? b.server.token : opts.token;
  if (token !== null) headers.authorization = `Bearer ${token}`;
  if (Buffer.isBuffer(opts.body)) headers['content-length'] = String(opts.body.length);
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const body = Buffer.concat(chunks);
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body, json: () => JSON.parse(body.toString('utf8')) });
      });
      res.on('error', reject);
    });
    // The server may answer (and close) before the whole body went: that is the point of some tests.
    req.on('error', () => undefined);
    if (Array.isArray(opts.body)) {
      // Chunked, no Content-Length: the limit can only be noticed while reading.
      let i = 0;
      const next = () => {
        if (i >= (opts.body as Buffer[]).length) return void req.end();
        req.write((opts.body as Buffer[])[i++], () => setImmediate(next));
      };
      next();
    } else req.end(opts.body);
  });
}

async function bootUploads(settings: Record<string, unknown> = {}, steps?: (req: unknown, i: number) => FakeStep) {
  return boot({ extra: [uploadsPlugin as Plugin], settings: settings as never, ...(steps ? { steps } : {}) });
}

const uploadsDir = (b: Booted) => path.join(b.home, 'uploads');
const listFiles = (dir: string) => (fs.existsSync(dir) ? fs.readdirSync(dir, { recursive: true }).map(String) : []);

describe('POST /api/uploads', () => {
  it('stores the body under uploads with a safe name and answers { uploadId, name, path, size, mediaType }', async () => {
    const b = await bootUploads();
    const png = tinyPng(3, 2);
    const r = await request(b, 'POST', `/api/uploads?name=${encodeURIComponent('../../evil.sh.png')}`, { body: png });
    expect(r.status).toBe(200);
    const info = r.json();
    expect(info).toEqual({ uploadId: expect.stringMatching(/^\d+$/), name: '../../evil.sh.png', path: path.join(uploadsDir(b), info.uploadId, 'evil_sh.png'), size: png.length, mediaType: 'image/png' });
    expect(fs.readFileSync(info.path)).toEqual(png);
    // Same bytes: same upload.
    const again = (await request(b, 'POST', '/api/uploads?name=copy.png', { body: png })).json();
    expect(again).toMatchObject({ uploadId: info.uploadId, path: info.path, deduped: true });
    // And back for a preview, with its media type.
    const got = await request(b, 'GET', `/api/uploads/${info.uploadId}`);
    expect(got.status).toBe(200);
    expect(got.headers['content-type']).toBe('image/png');
    expect(got.headers['x-content-type-options']).toBe('nosniff');
    expect(got.body).toEqual(png);
    expect((await request(b, 'GET', '/api/uploads/999')).status).toBe(404);
    expect((await request(b, 'GET', '/api/uploads/999')).json()).toEqual({ error: { code: 'not_found', message: 'unknown upload "999"' } });
  });

  it('refuses a missing or wrong token (401) and a foreign Origin (403), as JSON, storing nothing', async () => {
    const b = await bootUploads();
    const missing = await request(b, 'POST', '/api/uploads?name=a.txt', { token: null, body: Buffer.from('x') });
    expect(missing.status).toBe(401);
    expect(missing.json()).toEqual({ error: { code: 'unauthorized', message: 'missing or wrong token' } });
    expect((await request(b, 'POST', '/api/uploads?name=a.txt', { token: 'w'.repeat(43), body: Buffer.from('x') })).status).toBe(401);
    // The WebSocket's query-string token is not accepted over HTTP (URLs end up in logs).
    expect((await request(b, 'POST', `/api/uploads?name=a.txt&token=${b.server.token}`, { token: null, body: Buffer.from('x') })).status).toBe(401);
    const foreign = await request(b, 'POST', '/api/uploads?name=a.txt', { headers: { origin: 'https://evil.example' }, body: Buffer.from('x') });
    expect(foreign.status).toBe(403);
    expect(foreign.json().error.code).toBe('forbidden');
    expect((await request(b, 'GET', '/api/uploads/1', { token: null })).status).toBe(401);
    expect(listFiles(uploadsDir(b))).toEqual([]);
    // A page on the server's own origin passes, and gets CORS headers for it.
    const same = await request(b, 'POST', '/api/uploads?name=a.txt', { headers: { origin: b.server.url }, body: Buffer.from('x') });
    expect(same.status).toBe(200);
    expect(same.headers['access-control-allow-origin']).toBe(b.server.url);
  });

  it('refuses a body over uploads.maxBytes with 413 and removes the partial file (declared or streamed)', async () => {
    const b = await bootUploads({ uploads: { maxBytes: 1024 } });
    const declared = await request(b, 'POST', '/api/uploads?name=big.bin', { body: Buffer.alloc(4096, 1) });
    expect(declared.status).toBe(413);
    expect(declared.json()).toEqual({ error: { code: 'too_large', message: expect.stringMatching(/4\.0 KB, over the 1\.0 KB an upload may be \(uploads\.maxBytes\)/) } });
    const streamed = await request(b, 'POST', '/api/uploads?name=big.bin', { body: Array.from({ length: 8 }, () => Buffer.alloc(512, 2)) });
    expect(streamed.status).toBe(413);
    expect(streamed.json().error.code).toBe('too_large');
    expect(listFiles(uploadsDir(b))).toEqual([]);
    expect((await request(b, 'POST', '/api/uploads?name=small.bin', { body: Buffer.alloc(1000, 3) })).status).toBe(200);
  });

  it('answers a bad request (no name) with 400', async () => {
    const b = await bootUploads();
    const r = await request(b, 'POST', '/api/uploads', { body: Buffer.from('x') });
    expect(r.status).toBe(400);
    expect(r.json().error).toEqual({ code: 'bad_request', message: expect.stringMatching(/name query parameter is required/) });
  });
});

describe('messages naming uploads', () => {
  const send = (c: TestClient, item: Record<string, unknown>) => c.request({ type: 'chat_queue', item: { clientRequestId: `c-${Math.random().toString(36).slice(2)}`, ...item } });
  const userMessages = (b: Booted) => b.provider.requests.map((r) => r.messages.filter((m) => m.role === 'user').at(-1)!);
  const stored = (c: TestClient, conversationId: string) =>
    c.stream(conversationId).flatMap((m) => (m.event.type === 'agent_start' && m.event.userMessage ? [m.event.userMessage] : []));

  async function upload(b: Booted, bytes: Buffer, name: string): Promise<{ uploadId: string; path: string }> {
    return (await request(b, 'POST', `/api/uploads?name=${encodeURIComponent(name)}`, { body: bytes })).json();
  }

  it('send with { uploadId } stores an attachment block and the request carries the image; an unknown id is refused by name', async () => {
    const b = await bootUploads();
    const c = await TestClient.connect(b);
    const png = tinyPng();
    const up = await upload(b, png, 'shot.png');
    const r = await send(c, { action: 'send', text: 'what is this?', attachments: [{ uploadId: up.uploadId }] });
    expect(r.ok).toBe(true);
    const conversationId = (r as { data: { conversationId: string } }).data.conversationId;
    await c.terminal(conversationId);
    const [msg] = stored(c, conversationId);
    expect(msg!.content).toEqual([{ type: 'text', text: 'what is this?' }, { type: 'attachment', uploadId: up.uploadId, name: 'shot.png', path: up.path, mediaType: 'image/png', size: png.length }]);
    const sent = userMessages(b)[0]!.content;
    expect(sent.find((x) => x.type === 'image')).toEqual({ type: 'image', mimeType: 'image/png', data: png.toString('base64'), path: up.path });
    const bad = await send(c, { action: 'send', text: 'x', attachments: [{ uploadId: '123' }] });
    expect(bad).toMatchObject({ ok: false, error: { code: 'not_found', message: expect.stringContaining('unknown upload "123"') } });
    const malformed = await send(c, { action: 'send', text: 'x', attachments: [{ file: 'nope' }] });
    expect(malformed).toMatchObject({ ok: false, error: { code: 'bad_request', message: expect.stringMatching(/attachments\.0: each attachment must be \{ uploadId \}/) } });
  });

  it('an attachment in text mode is refused with a clear error, before anything runs', async () => {
    const b = await bootUploads();
    const c = await TestClient.connect(b);
    const up = await upload(b, Buffer.from('notes'), 'notes.txt');
    const r = await send(c, { action: 'send', text: 'read it', mode: 'text', attachments: [{ uploadId: up.uploadId }] });
    expect(r).toMatchObject({ ok: false, error: { code: 'bad_request', message: expect.stringMatching(/attachments need a tools mode .* text mode: "notes.txt"/) } });
    const inline = await send(c, { action: 'send', text: 'read it', mode: 'text', attachments: [{ name: 'a.txt', mimeType: 'text/plain', encoding: 'utf8', data: 'hi' }] });
    expect(inline).toMatchObject({ ok: false, error: { code: 'bad_request' } });
    expect(b.provider.requests).toHaveLength(0);
  });

  it('a legacy inline attachment is staged into the store: history holds a reference, not the bytes', async () => {
    const b = await bootUploads();
    const c = await TestClient.connect(b);
    const r = await send(c, { action: 'send', text: '', attachments: [{ name: 'hello.txt', mimeType: 'text/plain', encoding: 'utf8', data: 'hello from a file' }] });
    const conversationId = (r as { data: { conversationId: string } }).data.conversationId;
    await c.terminal(conversationId);
    const [msg] = stored(c, conversationId);
    const block = msg!.content[0] as Extract<ContentBlock, { type: 'attachment' }>;
    expect(block).toMatchObject({ type: 'attachment', name: 'hello.txt', mediaType: 'text/plain', size: 17 });
    expect(fs.readFileSync(block.path, 'utf8')).toBe('hello from a file');
    expect(JSON.stringify(userMessages(b)[0])).toContain('<file name=\\"hello.txt\\">\\nhello from a file\\n</file>');
  });

  it('attachment-only resend (edit_resend with empty text) and regenerate resend the attachments; truncate_preview counts what goes', async () => {
    const b = await bootUploads({}, (_req, i) => ({ text: `reply ${i}` }));
    const c = await TestClient.connect(b);
    const up = await upload(b, tinyPng(2, 2, 7), 'p.png');
    const first = await send(c, { action: 'send', text: 'first', attachments: [{ uploadId: up.uploadId }] });
    const conversationId = (first as { data: { conversationId: string } }).data.conversationId;
    let after = (await c.terminal(conversationId)).seq;
    await send(c, { action: 'send', conversationId, text: 'second' });
    after = (await c.terminal(conversationId, after)).seq;
    const [m1, m2] = stored(c, conversationId) as [Message, Message];

    // u1 a1 u2 a2: truncating at u2 removes 2, at u1 removes 4.
    expect((await c.ok({ type: 'conversations.truncate_preview', conversationId, messageId: m2.id })).removedCount).toBe(2);
    expect((await c.ok({ type: 'conversations.truncate_preview', conversationId, messageId: m1.id })).removedCount).toBe(4);
    expect(await c.request({ type: 'conversations.truncate_preview', conversationId, messageId: 'nope' })).toMatchObject({ ok: false, error: { code: 'not_found' } });

    // Regenerate resends u2 as stored.
    const regen = await send(c, { action: 'regenerate', conversationId });
    expect(regen).toMatchObject({ ok: true, data: { conversationId, messageId: m2.id, removedCount: 2 } });
    after = (await c.terminal(conversationId, after)).seq;
    expect(userMessages(b)[2]!.content).toEqual([{ type: 'text', text: 'second' }]);
    expect(b.provider.requests[2]!.messages.filter((m) => m.role === 'user')).toHaveLength(2);

    // Attachment-only resend of u1: the image again, no text; everything after u1 goes.
    const resend = await send(c, { action: 'edit_resend', conversationId, messageId: m1.id, text: '', attachments: [{ uploadId: up.uploadId }] });
    expect(resend).toMatchObject({ ok: true, data: { conversationId, removedCount: 4 } });
    await c.terminal(conversationId, after);
    const last = b.provider.requests[3]!;
    expect(last.messages.filter((m) => m.role === 'user')).toHaveLength(1);
    const content = last.messages[0]!.content;
    expect(content.some((x) => x.type === 'image')).toBe(true);
    expect(content.some((x) => x.type === 'text' && x.text === 'first')).toBe(false);
    // And regenerate of that attachment-only message resends the attachment block.
    const again = await send(c, { action: 'regenerate', conversationId });
    expect(again.ok).toBe(true);
    await c.waitFor((m) => m.type === 'done' && m.conversationId === conversationId && b.provider.requests.length === 5);
    expect(b.provider.requests[4]!.messages[0]!.content.some((x) => x.type === 'image')).toBe(true);
  });
});
