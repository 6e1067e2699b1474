/**
 * Uploads from the desktop window: the renderer's IPC transport (webui/src/transport/ipc-transport.ts)
 * sends the file in chunks over a real MessageChannel to the main process (the fake Electron,
 * hosts/desktop/upload-receiver.ts), which stages it through the uploads service as
 * `POST /api/uploads` does. Progress is what main wrote, never more than the window ahead; the
 * size limit, hostile names and dedupe are the store's; a cancel or a closed window mid-way
 * leaves no partial file; previews come back over the port.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MessageChannel, type MessagePort as NodeMessagePort } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import type { Settings } from '../../plugin-api.js';
import { UPLOAD_CHUNK_BYTES, UPLOAD_WINDOW_BYTES, type UploadReply } from '../../hosts/desktop/contract.js';
import { startDesktop, type Desktop } from '../../hosts/desktop/main-process.js';
import { installBridge } from '../../hosts/desktop/preload-bridge.js';
import { UploadReceiver } from '../../hosts/desktop/upload-receiver.js';
import type { UploadsService } from '../../plugins/uploads/service.js';
import { UploadStore } from '../../plugins/uploads/store.js';
import { IpcTransport, UPLOAD_CHUNK_BYTES as PAGE_CHUNK, UPLOAD_WINDOW_BYTES as PAGE_WINDOW, type PortSource } from '../../webui/src/transport/ipc-transport.js';
import { UploadError } from '../../webui/src/lib/uploads.js';
import { createFakeElectron, type FakeHarness, type FakePort } from '../helpers/fake-electron.js';

const MiB = 1024 * 1024;
const cleanups: Array<() => unknown> = [];

afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function tmpHome(): string {
  const h = fs.mkdtempSync(path.join(os.tmpdir(), 'h16b-uploads-'));
  cleanups.push(() => fs.rmSync(h, { recursive: true, force: true }));
  return h;
}

async function until(fn: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!fn()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** What is in the uploads folder: stored folders and partial files. */
function uploadsDir(home: string): { folders: string[]; partials: string[] } {
  const dir = path.join(home, 'uploads');
  const names = fs.existsSync(dir) ? fs.readdirSync(dir) : [];
  return { folders: names.filter((n) => /^\d+$/.test(n)), partials: names.filter((n) => n.startsWith('.partial-')) };
}

/**
 * The desktop against the fake Electron, and the page's IPC transport on a real MessageChannel
 * piped to main's port (structured clone and transfer as in a browser). `toMain` counts the
 * upload bytes sent and `acked` what main acknowledged, to check the window.
 */
async function boot(settings: Settings = {}) {
  const home = tmpHome();
  const fake: FakeHarness = createFakeElectron();
  const desktop: Desktop = (await startDesktop({ electron: fake.electron, home, settings: { runtime: { persistIntervalMs: 20 }, ...settings }, builtins: undefined, thirdParty: false, webuiDir: home, log: () => undefined }))!;
  cleanups.push(async () => {
    fake.app.quit();
    await desktop.stopped;
  });
  const listeners = new Set<(ev: MessageEvent) => void>();
  const source: PortSource = { addEventListener: (_t, fn) => void listeners.add(fn), removeEventListener: (_t, fn) => void listeners.delete(fn) };
  const flow = { sent: 0, acked: 0, maxAhead: 0 };
  let mainPort: FakePort | undefined;
  let pagePipe: NodeMessagePort | undefined;
  const bridge = installBridge(
    fake.preload,
    {
      postMessage: (message, _origin, transfer) => {
        const fakePort = (transfer as unknown as FakePort[])[0]!;
        const ch = new MessageChannel();
        mainPort = fakePort;
        pagePipe = ch.port1;
        fakePort.on('message', (ev: { data: unknown }) => {
          const up = ev.data as UploadReply;
          if (up && typeof up === 'object' && up.upload === 'ack') flow.acked = Math.max(flow.acked, up.received);
          try {
            ch.port1.postMessage(ev.data);
          } catch {
            /* closed */
          }
        });
        fakePort.on('close', () => ch.port1.close());
        ch.port1.on('message', (data: unknown) => {
          const m = data as { upload?: string; data?: ArrayBuffer };
          if (m && typeof m === 'object' && m.upload === 'chunk' && m.data) {
            flow.sent += m.data.byteLength;
            flow.maxAhead = Math.max(flow.maxAhead, flow.sent - flow.acked);
          }
          if (!fakePort.closed) fakePort.postMessage(data);
        });
        fakePort.start();
        for (const fn of listeners) fn({ data: message, ports: [ch.port2] } as unknown as MessageEvent);
      },
    },
    'linux',
  );
  const transport = new IpcTransport({ bridge, source });
  cleanups.push(() => {
    transport.close();
    pagePipe?.close();
  });
  const opened = new Promise<void>((r) => transport.onStatus((s) => s.state === 'open' && r()));
  transport.connect();
  await opened;
  return { home, fake, desktop, transport, flow, mainPort: () => mainPort! };
}

const bytes = (n: number, seed = 1) => {
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i++) b[i] = (i * 31 + seed) & 0xff;
  return b;
};

describe('desktop uploads over the port', () => {
  it('the page and main agree on the chunk and window sizes', () => {
    expect([PAGE_CHUNK, PAGE_WINDOW]).toEqual([UPLOAD_CHUNK_BYTES, UPLOAD_WINDOW_BYTES]);
  });

  it('stages a file in chunks with progress and backpressure, answers the HTTP record, dedupes, keeps hostile names out of the path, serves previews', async () => {
    const { home, transport, flow } = await boot();
    const data = bytes(3 * MiB + 123);
    const progress: number[] = [];
    const first = await transport.upload(new Blob([data]), '../../etc/passwd\u0000.png', (loaded, total) => {
      expect(total).toBe(data.length);
      progress.push(loaded);
    }).promise;
    expect(first).toMatchObject({ name: '../../etc/passwd.png', size: data.length, mediaType: 'application/octet-stream' });
    expect(first.uploadId).toMatch(/^\d+$/);
    // Stored under a plain name inside its own folder, byte for byte.
    expect(path.dirname(first.path)).toBe(path.join(home, 'uploads', first.uploadId));
    expect(path.basename(first.path)).not.toMatch(/[/\\]|^\./);
    expect(fs.readFileSync(first.path).equals(data)).toBe(true);
    // Progress is main's writes, in chunks, rising to the whole file; never more than the window in flight.
    expect(progress.length).toBeGreaterThanOrEqual(Math.ceil(data.length / UPLOAD_CHUNK_BYTES));
    expect(progress).toEqual([...progress].sort((a, b) => a - b));
    expect(progress.at(-1)).toBe(data.length);
    expect(flow.maxAhead).toBeLessThanOrEqual(UPLOAD_WINDOW_BYTES);
    expect(flow.maxAhead).toBeGreaterThan(UPLOAD_CHUNK_BYTES);

    // The same bytes again: the first upload (the composer shows one chip).
    const again = await transport.upload(new Blob([data]), 'copy.bin', () => undefined).promise;
    expect(again.uploadId).toBe(first.uploadId);
    expect(uploadsDir(home)).toEqual({ folders: [first.uploadId], partials: [] });

    // An empty file is an upload too.
    const empty = await transport.upload(new Blob([]), 'empty.txt', () => undefined).promise;
    expect(empty.size).toBe(0);

    // Previews: the bytes come back over the port; an unknown id is refused.
    const png = await transport.upload(new Blob([Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex')]), 'p.png', () => undefined).promise;
    expect(png.mediaType).toBe('image/png');
    const blob = await transport.fetchUpload(png.uploadId);
    expect(blob.type).toBe('image/png');
    expect(Buffer.from(await blob.arrayBuffer()).toString('hex')).toBe('89504e470d0a1a0a0000000d49484452');
    await expect(transport.fetchUpload('999')).rejects.toMatchObject({ code: 'not_found', status: 404 });
  });

  it('refuses past uploads.maxBytes and a bad name, as the HTTP route does (not retryable), leaving nothing', async () => {
    const { home, transport } = await boot({ uploads: { maxBytes: 64 * 1024 } } as Settings);
    const err = await transport.upload(new Blob([bytes(64 * 1024 + 1)]), 'big.bin', () => undefined).promise.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UploadError);
    expect(err).toMatchObject({ code: 'too_large', status: 413 });
    expect((err as Error).message).toMatch(/over the (64(\.0)? KB|65536 bytes) an upload may be \(uploads\.maxBytes\)/);
    await expect(transport.upload(new Blob(['x']), '   ', () => undefined).promise).rejects.toMatchObject({ code: 'bad_request', status: 400, message: 'a file name is required' });
    await expect(transport.upload(new Blob(['x']), 'n'.repeat(501), () => undefined).promise).rejects.toMatchObject({ code: 'bad_request' });
    expect(uploadsDir(home)).toEqual({ folders: [], partials: [] });
    // Exactly the limit passes.
    await expect(transport.upload(new Blob([bytes(64 * 1024)]), 'ok.bin', () => undefined).promise).resolves.toMatchObject({ size: 64 * 1024 });
  });

  it('a cancel mid-way stops main and removes the partial file', async () => {
    const { home, transport, flow } = await boot();
    const data = bytes(4 * MiB);
    let handle!: ReturnType<IpcTransport['upload']>;
    let firstProgress!: () => void;
    const progressed = new Promise<void>((r) => (firstProgress = r));
    handle = transport.upload(new Blob([data]), 'long.bin', () => firstProgress());
    await progressed;
    // Main has written a part (a partial file exists) and not all (the window holds the rest back).
    expect(uploadsDir(home).partials).toHaveLength(1);
    handle.abort();
    await expect(handle.promise).rejects.toMatchObject({ code: 'cancelled' });
    await until(() => uploadsDir(home).partials.length === 0);
    expect(uploadsDir(home).folders).toEqual([]);
    expect(flow.sent).toBeLessThan(data.length);
    // The port still works after it.
    await expect(transport.upload(new Blob(['after']), 'after.txt', () => undefined).promise).resolves.toMatchObject({ size: 5, mediaType: 'text/plain' });
  });

  it('the window closing mid-upload fails it as a lost connection (retryable) and leaves no partial file', async () => {
    const { home, fake, transport } = await boot();
    let firstProgress!: () => void;
    const progressed = new Promise<void>((r) => (firstProgress = r));
    const handle = transport.upload(new Blob([bytes(4 * MiB)]), 'long.bin', () => firstProgress());
    await progressed;
    fake.windows[0]!.close();
    await expect(handle.promise).rejects.toMatchObject({ code: 'network' });
    await until(() => uploadsDir(home).partials.length === 0);
    expect(uploadsDir(home).folders).toEqual([]);
  });
});

describe('the upload receiver (main side) against a renderer that does not play by the rules', () => {
  async function receiver(maxBytes = 1024 * 1024) {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'h16b-recv-'));
    cleanups.push(() => fs.rmSync(root, { recursive: true, force: true }));
    const store = new UploadStore(root, { maxBytes: () => maxBytes });
    const service = { stage: (s, o) => store.stage(s, o), get: (id) => store.get(id) } as Pick<UploadsService, 'stage' | 'get'> as UploadsService;
    const replies: UploadReply[] = [];
    const r = new UploadReceiver({ uploads: () => service, post: (m) => void replies.push(m) });
    const ended = (id: string) => until(() => replies.some((m) => m.id === id && (m.upload === 'done' || m.upload === 'error'))).then(() => replies.find((m) => m.id === id && (m.upload === 'done' || m.upload === 'error'))!);
    const partials = () => fs.readdirSync(root).filter((n) => n.startsWith('.partial-'));
    return { r, replies, ended, partials, root };
  }

  it('refuses oversized chunks, more bytes than announced, a window overrun, and unknown messages; nothing stays behind', async () => {
    const { r, ended, partials, replies } = await receiver();
    r.handle({ upload: 'begin', id: 'a', name: 'a.bin', size: 10 });
    r.handle({ upload: 'chunk', id: 'a', data: new ArrayBuffer(UPLOAD_CHUNK_BYTES + 1) });
    expect(await ended('a')).toMatchObject({ upload: 'error', code: 'bad_request', message: `a chunk may be at most ${UPLOAD_CHUNK_BYTES} bytes` });

    r.handle({ upload: 'begin', id: 'b', name: 'b.bin', size: 4 });
    r.handle({ upload: 'chunk', id: 'b', data: new Uint8Array([1, 2, 3, 4, 5]).buffer });
    expect(await ended('b')).toMatchObject({ upload: 'error', code: 'bad_request', message: 'more bytes came than the 4 the upload announced' });

    // Declared within the limit, but the window ignored: refused before main buffers it all.
    const big = 8 * UPLOAD_CHUNK_BYTES;
    const { r: r2, ended: ended2, partials: partials2 } = await receiver(16 * UPLOAD_CHUNK_BYTES);
    r2.handle({ upload: 'begin', id: 'c', name: 'c.bin', size: big });
    for (let i = 0; i < 8; i++) r2.handle({ upload: 'chunk', id: 'c', data: new ArrayBuffer(UPLOAD_CHUNK_BYTES) });
    expect(await ended2('c')).toMatchObject({ upload: 'error', code: 'bad_request' });
    await until(() => partials2().length === 0);

    expect(r.handle('a string frame')).toBe(false);
    expect(r.handle({ close: true })).toBe(false);
    r.handle({ upload: 'nope', id: 'd' });
    expect(replies.at(-1)).toMatchObject({ upload: 'error', id: 'd', code: 'bad_request' });
    r.handle({ upload: 'begin', id: 'e', name: 'e.bin', size: -1 });
    expect(await ended('e')).toMatchObject({ code: 'bad_request', message: 'size: must be a whole number of bytes' });
    await until(() => partials().length === 0 && r.size === 0);
  });

  it('a cancel between chunks and closeAll both remove the partial file', async () => {
    const { r, ended, partials, root } = await receiver();
    r.handle({ upload: 'begin', id: 'a', name: 'a.bin', size: 100 });
    r.handle({ upload: 'chunk', id: 'a', data: new ArrayBuffer(50) });
    await until(() => partials().length === 1);
    r.handle({ upload: 'cancel', id: 'a' });
    expect(await ended('a')).toMatchObject({ upload: 'error', code: 'cancelled' });
    expect(partials()).toEqual([]);

    r.handle({ upload: 'begin', id: 'b', name: 'b.bin', size: 100 });
    r.handle({ upload: 'chunk', id: 'b', data: new ArrayBuffer(50) });
    await until(() => partials().length === 1);
    r.closeAll();
    await until(() => partials().length === 0 && r.size === 0);
    expect(fs.readdirSync(root).filter((n) => /^\d+$/.test(n))).toEqual([]);
  });
});
