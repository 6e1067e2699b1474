/**
 * The upload store: hostile names land under uploads with a safe name (the original kept as
 * metadata), the same bytes are stored once, a body over the limit is refused and its partial
 * file removed, media types come from magic bytes before names, and start-up collection removes
 * uploads past `uploads.retentionDays` (31 days old) while keeping younger ones (29 days).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Plugin } from '../../plugin-api.js';
import { createKernel, type Kernel } from '../../core/kernel.js';
import uploadsPlugin, { UPLOADS_SERVICE, type UploadsService } from '../../plugins/uploads/index.js';
import { safeName } from '../../plugins/uploads/names.js';
import { SIDECAR, UploadError, UploadStore } from '../../plugins/uploads/store.js';
import { PDF_FIXTURE, removeTempDirs, tempDir, tinyPng } from '../helpers/uploads-fixtures.js';

const kernels: Kernel[] = [];
afterEach(async () => {
  for (const k of kernels.splice(0)) await k.shutdown();
  removeTempDirs();
});

function store(root = path.join(tempDir(), 'uploads'), maxBytes = 1024 * 1024) {
  return new UploadStore(root, { maxBytes: () => maxBytes });
}

/** Everything under `root`, as relative paths. */
function tree(root: string): string[] {
  return fs.readdirSync(root, { recursive: true }).map(String).sort();
}

describe('upload names', () => {
  const hostile = ['../../x', '/etc/passwd', '..\\x', 'a\0b.txt', 'x'.repeat(300) + '.txt', 'evil.sh.png', '..', '.bashrc', 'CON', '   ', 'ok name (1).md', 'résumé.txt'];

  it('every hostile name is stored under uploads with a safe name, the original kept as metadata', async () => {
    const s = store();
    for (const [i, name] of hostile.entries()) {
      const { record } = await s.stageBytes(Buffer.from(`file ${i}\n`), name);
      const rel = path.relative(s.root, record.path);
      expect(rel.split(path.sep), name).toEqual([record.uploadId, record.storedName]);
      expect(record.storedName).toMatch(/^[\p{L}\p{N}_-][\p{L}\p{N}._-]*$/u);
      expect(record.storedName.startsWith('.')).toBe(false);
      expect(Buffer.byteLength(record.storedName)).toBeLessThanOrEqual(120);
      expect(fs.readFileSync(record.path, 'utf8')).toBe(`file ${i}\n`);
      // The name the client gave is metadata, with NULs dropped.
      expect(record.name).toBe(name.replace('\0', '').trim() || 'upload');
      const sidecar = JSON.parse(fs.readFileSync(path.join(s.root, record.uploadId, SIDECAR), 'utf8'));
      expect(sidecar.name).toBe(record.name);
    }
    expect(tree(s.root).every((p) => !p.includes('..'))).toBe(true);
    expect(fs.existsSync(path.join(s.root, '..', 'x'))).toBe(false);
  });

  it('the stored name keeps one extension, and a sniffed binary type names it', () => {
    expect(safeName('evil.sh.png', 'image/png')).toBe('evil_sh.png');
    expect(safeName('evil.sh.png', 'text/plain')).toBe('evil_sh.png');
    expect(safeName('photo.jpeg', 'image/jpeg')).toBe('photo.jpeg');
    expect(safeName('notes.txt', 'application/pdf')).toBe('notes.pdf');
    expect(safeName('../../x', 'text/plain')).toBe('x');
    expect(safeName('/etc/passwd', 'text/plain')).toBe('passwd');
    expect(safeName('..\\x', 'text/plain')).toBe('x');
    expect(safeName('..', 'text/plain')).toBe('upload');
    expect(safeName('', 'image/png')).toBe('upload.png');
    expect(safeName('.bashrc', 'text/plain')).toBe('bashrc');
  });
});

describe('upload store', () => {
  it('the same bytes are stored once: the second upload answers the first one’s id and path', async () => {
    const s = store();
    const a = await s.stageBytes(tinyPng(), 'a.png');
    const b = await s.stageBytes(tinyPng(), 'b.png');
    expect(a.deduped).toBe(false);
    expect(b.deduped).toBe(true);
    expect(b.record.uploadId).toBe(a.record.uploadId);
    expect(b.record.path).toBe(a.record.path);
    const c = await s.stageBytes(tinyPng(2, 2, 1), 'c.png');
    expect(c.record.uploadId).not.toBe(a.record.uploadId);
    expect(tree(s.root).filter((p) => p.endsWith('.png'))).toHaveLength(2);
    // Another process's store sees it too (it reads the sidecars).
    const other = store(s.root);
    expect((await other.stageBytes(tinyPng(), 'again.png')).record.uploadId).toBe(a.record.uploadId);
  });

  it('the same bytes staged at once end in one folder', async () => {
    const s = store();
    const results = await Promise.all([1, 2, 3].map((i) => s.stageBytes(Buffer.from('same bytes'), `n${i}.txt`)));
    expect(new Set(results.map((r) => r.record.uploadId)).size).toBe(1);
    expect(tree(s.root).filter((p) => p.endsWith('.txt'))).toHaveLength(1);
  });

  it('a body over maxBytes is refused and its partial file removed; a declared size over it is refused before reading', async () => {
    const s = store(undefined, 1000);
    async function* body() {
      for (let i = 0; i < 10; i++) yield Buffer.alloc(300, 0x61);
    }
    const err = await s.stage(body(), { name: 'big.txt' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UploadError);
    expect((err as UploadError).code).toBe('too_large');
    expect((err as Error).message).toMatch(/uploads\.maxBytes/);
    expect(tree(s.root)).toEqual([]);
    let read = false;
    async function* never() {
      read = true;
      yield Buffer.alloc(1);
    }
    await expect(s.stage(never(), { name: 'x', declaredSize: 5000 })).rejects.toMatchObject({ code: 'too_large' });
    expect(read).toBe(false);
  });

  it('media types: magic bytes first, then the extension, then UTF-8 text, else octet-stream', async () => {
    const s = store();
    const type = async (bytes: Buffer, name: string) => (await s.stageBytes(bytes, name)).record.mediaType;
    expect(await type(tinyPng(3, 3), 'photo.txt')).toBe('image/png');
    expect(await type(fs.readFileSync(PDF_FIXTURE), 'report')).toBe('application/pdf');
    expect(await type(Buffer.from('not really a png'), 'fake.png')).toBe('text/plain');
    expect(await type(Buffer.from('{"a":1}'), 'data.json')).toBe('application/json');
    expect(await type(Buffer.from('plain words, no extension'), 'README')).toBe('text/plain');
    expect(await type(Buffer.from([0xff, 0x00, 0xfe, 0x01]), 'blob')).toBe('application/octet-stream');
    expect(await type(Buffer.from([0xc3, 0x28]), 'bad-utf8')).toBe('application/octet-stream');
  });
});

describe('start-up collection', () => {
  const DAY = 24 * 60 * 60 * 1000;

  /** Stage a file with the service, then date it `days` back (its sidecar, as an older process would have written it). */
  async function aged(svc: UploadsService, root: string, name: string, days: number): Promise<string> {
    const { record } = await svc.stageBytes(Buffer.from(`${name} body`), name);
    const file = path.join(root, record.uploadId, SIDECAR);
    const sidecar = JSON.parse(fs.readFileSync(file, 'utf8'));
    sidecar.createdAt = sidecar.lastUsedAt = Date.now() - days * DAY;
    fs.writeFileSync(file, JSON.stringify(sidecar));
    return record.uploadId;
  }

  async function boot(home: string, settings = {}): Promise<UploadsService> {
    const kernel = await createKernel({ home, plugins: [uploadsPlugin as Plugin], settings, thirdParty: false });
    kernels.push(kernel);
    return kernel.services.get<UploadsService>(UPLOADS_SERVICE)!;
  }

  it('a 31-day-old upload is removed at start, a 29-day-old one kept (uploads.retentionDays 30)', async () => {
    const home = tempDir();
    const root = path.join(home, 'uploads');
    const first = await boot(home);
    await first.collected();
    const old = await aged(first, root, 'old.txt', 31);
    const young = await aged(first, root, 'young.txt', 29);
    fs.writeFileSync(path.join(root, '.partial-123-crashed'), 'half');
    fs.utimesSync(path.join(root, '.partial-123-crashed'), new Date(Date.now() - 2 * 60 * 60 * 1000), new Date(Date.now() - 2 * 60 * 60 * 1000));
    await kernels.pop()!.shutdown();

    const second = await boot(home);
    expect((await second.collected()).removed).toEqual([old]);
    expect(fs.existsSync(path.join(root, old))).toBe(false);
    expect(fs.existsSync(path.join(root, young))).toBe(true);
    expect(fs.existsSync(path.join(root, '.partial-123-crashed'))).toBe(false);
    expect(second.get(old)).toBeUndefined();
    expect(second.get(young)?.name).toBe('young.txt');
  });

  it('retentionDays is a setting, validated', async () => {
    const home = tempDir();
    const root = path.join(home, 'uploads');
    const first = await boot(home);
    const id = await aged(first, root, 'a.txt', 3);
    await kernels.pop()!.shutdown();
    const second = await boot(home, { uploads: { retentionDays: 2 } });
    expect((await second.collected()).removed).toEqual([id]);
    // A bad section stops the plugin at boot, with the key named.
    const bad = await createKernel({ home: tempDir(), plugins: [uploadsPlugin as Plugin], settings: { uploads: { retentionDays: 0 } }, thirdParty: false });
    kernels.push(bad);
    expect(bad.services.get(UPLOADS_SERVICE)).toBeUndefined();
    expect(bad.loaded.find((p) => p.name === 'uploads')?.error?.message).toMatch(/uploads\.retentionDays: must be at least 1 day/);
  });
});
