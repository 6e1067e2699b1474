/**
 * The upload store: files staged under `<home>/uploads/<epoch-ms>/<safe name>`, one folder per
 * upload (its id is the folder's name), with a small sidecar `.upload.json` beside the file that
 * keeps the original name, the media type, the size and the content hash. Sidecars are written
 * to a temp file and renamed, so a reader never sees half of one; a folder without a sidecar is
 * an upload still in progress (or one that crashed, removed once a day old).
 *
 * Bodies stream to a partial file in the uploads folder (so the final rename is atomic) while
 * being hashed and checked; nothing buffers a whole file. Past the size limit the partial file is
 * removed and the stream refused. The same bytes are stored once: a file whose sha256 is already
 * stored answers the existing upload (and counts as a use, for retention).
 *
 * Several processes (the server, CLI runs) share the folder: ids are folders made with an
 * exclusive mkdir, and a lookup that misses rescans for folders others made.
 */
import { createHash, randomUUID } from 'node:crypto';
import fs, { promises as fsp } from 'node:fs';
import path from 'node:path';
import type { Logger, UploadRecord, UploadStageOptions, UploadStageResult, UploadsCollectResult } from '../../plugin-api.js';
import { formatSize } from '../../lib/provider-shared/attachments.js';
import { HEAD_BYTES, TextProbe, mediaTypeOf } from './media-type.js';
import { originalName, safeName } from './names.js';

export const SIDECAR = '.upload.json';
const PARTIAL_PREFIX = '.partial-';
const DAY = 24 * 60 * 60 * 1000;
/** A use refreshes the sidecar's `lastUsedAt` at most this often. */
const TOUCH_EVERY_MS = 60 * 60 * 1000;
const ID = /^\d{1,16}$/;

/** One stored upload, as its sidecar records it. */
export type { UploadRecord } from '../../plugin-api.js';

type SidecarData = Omit<UploadRecord, 'uploadId' | 'path'>;

/** A refused upload or lookup; `code` is what HTTP and gateway replies carry. */
export class UploadError extends Error {
  constructor(
    readonly code: 'too_large' | 'not_found' | 'bad_request',
    message: string,
  ) {
    super(message);
    this.name = 'UploadError';
  }
}

// The service's types are public (plugin-api.d.ts); the store keeps its shorter names for them.
export type StageOptions = UploadStageOptions;
export type StageResult = UploadStageResult;
export type CollectResult = UploadsCollectResult;

export class UploadStore {
  private byId = new Map<string, UploadRecord>();
  private byHash = new Map<string, string>();
  private inflight = new Map<string, Promise<StageResult>>();
  private ready: Promise<unknown> = Promise.resolve();

  constructor(
    readonly root: string,
    private readonly opts: { maxBytes: () => number; logger?: Logger; now?: () => number },
  ) {}

  private now(): number {
    return this.opts.now?.() ?? Date.now();
  }

  /**
   * Remove uploads not staged or attached for `retentionDays`, partial files of crashed uploads
   * (over an hour old) and folders that never got a sidecar (over a day old). Staging waits for
   * it, so a file is never deduplicated onto a folder being removed.
   */
  collect(retentionDays: number): Promise<CollectResult> {
    const run = this.collectNow(retentionDays);
    this.ready = run.catch(() => undefined);
    return run;
  }

  private async collectNow(retentionDays: number): Promise<CollectResult> {
    const removed: string[] = [];
    const now = this.now();
    const entries = await fsp.readdir(this.root, { withFileTypes: true }).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return [];
      throw err;
    });
    for (const e of entries) {
      const full = path.join(this.root, e.name);
      if (e.isFile() && e.name.startsWith(PARTIAL_PREFIX)) {
        const st = await fsp.stat(full).catch(() => undefined);
        if (st && now - st.mtimeMs > TOUCH_EVERY_MS) await fsp.rm(full, { force: true });
        continue;
      }
      if (!e.isDirectory() || !ID.test(e.name)) continue;
      const rec = await this.readSidecar(e.name);
      const last = rec ? Math.max(rec.createdAt, rec.lastUsedAt) : Number(e.name);
      const limit = rec ? retentionDays * DAY : Math.min(DAY, retentionDays * DAY);
      if (now - last <= limit) continue;
      await fsp.rm(full, { recursive: true, force: true });
      this.forget(e.name);
      removed.push(e.name);
    }
    if (removed.length) this.opts.logger?.info(`removed ${removed.length} upload${removed.length === 1 ? '' : 's'} older than ${retentionDays} days`);
    return { removed };
  }

  private forget(id: string): void {
    const rec = this.byId.get(id);
    if (!rec) return;
    this.byId.delete(id);
    if (this.byHash.get(rec.sha256) === id) this.byHash.delete(rec.sha256);
  }

  /** Stream `source` into the store. */
  async stage(source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>, opts: StageOptions = {}): Promise<StageResult> {
    await this.ready;
    const max = opts.maxBytes ?? this.opts.maxBytes();
    // Sizes that round alike ("64.0 KB, over the 64.0 KB") are given in bytes.
    const sizes = (n: number) => (formatSize(n) === formatSize(max) ? [`${n} bytes`, `${max} bytes`] : [formatSize(n), formatSize(max)]);
    const tooLarge = (n: number | string) => {
      const [got, limit] = typeof n === 'number' ? sizes(n) : [n, formatSize(max)];
      return new UploadError('too_large', `the file is ${got}, over the ${limit} an upload may be (uploads.maxBytes)`);
    };
    if (opts.declaredSize !== undefined && opts.declaredSize > max) throw tooLarge(opts.declaredSize);
    await fsp.mkdir(this.root, { recursive: true, mode: 0o700 });
    const partial = path.join(this.root, `${PARTIAL_PREFIX}${process.pid}-${randomUUID()}`);
    const fh = await fsp.open(partial, 'wx', 0o600);
    const hash = createHash('sha256');
    const probe = new TextProbe();
    const head = Buffer.alloc(HEAD_BYTES);
    let headLen = 0;
    let size = 0;
    try {
      for await (const raw of source) {
        const chunk = raw instanceof Uint8Array ? raw : Buffer.from(raw as string);
        size += chunk.length;
        if (size > max) throw tooLarge(`more than ${formatSize(max)}`);
        if (headLen < HEAD_BYTES) headLen += Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength).copy(head, headLen, 0, HEAD_BYTES - headLen);
        hash.update(chunk);
        probe.push(chunk);
        // One write at a time: a slow disk holds the source back instead of filling memory.
        await fh.write(chunk);
      }
      await fh.close();
    } catch (err) {
      await fh.close().catch(() => undefined);
      await fsp.rm(partial, { force: true });
      throw err;
    }
    const sha256 = hash.digest('hex');
    const text = probe.done();
    // Two uploads of the same bytes at once: the second waits and takes the first's folder.
    const pending = this.inflight.get(sha256);
    if (pending) await pending.catch(() => undefined);
    const work = this.place(partial, sha256, size, text, head.subarray(0, headLen), opts.name);
    this.inflight.set(sha256, work);
    try {
      return await work;
    } finally {
      if (this.inflight.get(sha256) === work) this.inflight.delete(sha256);
    }
  }

  private async place(partial: string, sha256: string, size: number, text: boolean, head: Buffer, given: string | undefined): Promise<StageResult> {
    const existing = await this.findByHash(sha256, size);
    if (existing) {
      await fsp.rm(partial, { force: true });
      return { record: await this.touch(existing), deduped: true };
    }
    const name = originalName(given, 'upload');
    const mediaType = mediaTypeOf(head, name, text);
    const storedName = safeName(name, mediaType);
    const uploadId = await this.makeFolder();
    const dir = path.join(this.root, uploadId);
    const file = path.join(dir, storedName);
    try {
      await fsp.rename(partial, file);
      const now = this.now();
      const rec: UploadRecord = { uploadId, name, storedName, path: file, size, mediaType, sha256, text, createdAt: now, lastUsedAt: now };
      await this.writeSidecar(rec);
      this.remember(rec);
      return { record: rec, deduped: false };
    } catch (err) {
      await fsp.rm(partial, { force: true });
      await fsp.rm(dir, { recursive: true, force: true });
      throw err;
    }
  }

  /** A fresh folder named by the time: exclusive mkdir, the next millisecond when taken. */
  private async makeFolder(): Promise<string> {
    for (let t = this.now(), tries = 0; ; t++, tries++) {
      const id = String(t);
      try {
        await fsp.mkdir(path.join(this.root, id), { mode: 0o700 });
        return id;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || tries > 10_000) throw err;
      }
    }
  }

  /** Stage a file from disk (the CLI's `--attach`). */
  async stageFile(file: string, name = path.basename(file)): Promise<StageResult> {
    const st = await fsp.stat(file);
    if (!st.isFile()) throw new UploadError('bad_request', `${file} is not a regular file`);
    return this.stage(fs.createReadStream(file), { name, declaredSize: st.size });
  }

  /** Stage bytes held in memory (an inline attachment of the gateway's legacy form). */
  stageBytes(bytes: Uint8Array, name: string): Promise<StageResult> {
    return this.stage([bytes], { name, declaredSize: bytes.length });
  }

  /** The upload `uploadId`, when it is stored (a folder another process made is read on demand). */
  get(uploadId: string): UploadRecord | undefined {
    if (!ID.test(uploadId)) return undefined;
    const hit = this.byId.get(uploadId);
    if (hit) return fs.existsSync(hit.path) ? hit : (this.forget(uploadId), undefined);
    const rec = this.readSidecarSync(uploadId);
    if (!rec || !fs.existsSync(rec.path)) return undefined;
    this.remember(rec);
    return rec;
  }

  /** Note a use (an attachment sent again): retention counts from the latest one. */
  async touch(rec: UploadRecord): Promise<UploadRecord> {
    const now = this.now();
    if (now - rec.lastUsedAt < TOUCH_EVERY_MS) return rec;
    const next = { ...rec, lastUsedAt: now };
    try {
      await this.writeSidecar(next);
      this.remember(next);
      return next;
    } catch (err) {
      this.opts.logger?.warn(`could not record a use of upload ${rec.uploadId}: ${(err as Error).message}`);
      return rec;
    }
  }

  private remember(rec: UploadRecord): void {
    this.byId.set(rec.uploadId, rec);
    this.byHash.set(rec.sha256, rec.uploadId);
  }

  private async findByHash(sha256: string, size: number): Promise<UploadRecord | undefined> {
    const check = (id: string | undefined) => {
      const rec = id ? this.get(id) : undefined;
      return rec && rec.sha256 === sha256 && rec.size === size ? rec : undefined;
    };
    const known = check(this.byHash.get(sha256));
    if (known) return known;
    await this.scan();
    return check(this.byHash.get(sha256));
  }

  /** Read the sidecars of folders not seen yet (made by another process, or before this one started). */
  private async scan(): Promise<void> {
    const names = await fsp.readdir(this.root).catch(() => [] as string[]);
    for (const n of names) {
      if (!ID.test(n) || this.byId.has(n)) continue;
      const rec = await this.readSidecar(n);
      if (rec) this.remember(rec);
    }
  }

  private sidecarPath(id: string): string {
    return path.join(this.root, id, SIDECAR);
  }

  private parseSidecar(id: string, text: string): UploadRecord | undefined {
    try {
      const d = JSON.parse(text) as SidecarData;
      if (typeof d.storedName !== 'string' || d.storedName.includes('/') || d.storedName.includes('\\') || d.storedName.startsWith('.')) return undefined;
      if (typeof d.sha256 !== 'string' || typeof d.size !== 'number' || typeof d.mediaType !== 'string') return undefined;
      const createdAt = typeof d.createdAt === 'number' ? d.createdAt : Number(id);
      return {
        uploadId: id,
        name: typeof d.name === 'string' ? d.name : d.storedName,
        storedName: d.storedName,
        path: path.join(this.root, id, d.storedName),
        size: d.size,
        mediaType: d.mediaType,
        sha256: d.sha256,
        text: d.text === true,
        createdAt,
        lastUsedAt: typeof d.lastUsedAt === 'number' ? d.lastUsedAt : createdAt,
      };
    } catch {
      return undefined;
    }
  }

  private async readSidecar(id: string): Promise<UploadRecord | undefined> {
    const text = await fsp.readFile(this.sidecarPath(id), 'utf8').catch(() => undefined);
    return text === undefined ? undefined : this.parseSidecar(id, text);
  }

  private readSidecarSync(id: string): UploadRecord | undefined {
    let text: string;
    try {
      text = fs.readFileSync(this.sidecarPath(id), 'utf8');
    } catch {
      return undefined;
    }
    return this.parseSidecar(id, text);
  }

  private async writeSidecar(rec: UploadRecord): Promise<void> {
    const data: SidecarData = { name: rec.name, storedName: rec.storedName, size: rec.size, mediaType: rec.mediaType, sha256: rec.sha256, text: rec.text, createdAt: rec.createdAt, lastUsedAt: rec.lastUsedAt };
    const file = this.sidecarPath(rec.uploadId);
    const tmp = `${file}.${process.pid}.${randomUUID()}.tmp`;
    await fsp.writeFile(tmp, JSON.stringify(data), { mode: 0o600 });
    try {
      await fsp.rename(tmp, file);
    } catch (err) {
      await fsp.rm(tmp, { force: true });
      throw err;
    }
  }
}
