/**
 * One writer per debug file: records are queued in memory and appended in order, off the path
 * that produced them (the drain starts on the next turn of the event loop, or at once on
 * `flush`). Records are serialized (and redacted) by the drain, not by the producer, so a
 * streaming reply never waits on JSON or on the disk.
 *
 * - The queue is bounded (`maxQueue` records): past it records are dropped and counted, and a
 *   `dropped` record saying how many goes in before the next record that fits.
 * - Rotation by size: a line that would take the file past `maxFileBytes` first renames
 *   `<id>.jsonl` to `<id>.1.jsonl` (older ones shift up, the oldest beyond `maxFiles` goes).
 * - A write error (disk full, EACCES, a file in the way) disables this writer for good: the
 *   queue is dropped and `onError` is called once. Nothing here ever throws to the producer.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { serializeRecord } from './redact.js';

/** A record: serialized lazily by the drain. */
export type LogRecord = Record<string, unknown>;

export interface WriterOptions {
  maxFileBytes: number;
  maxFiles: number;
  maxQueue: number;
  /** Called once, with the error that disabled the writer. */
  onError(err: Error): void;
}

/** Largest chunk handed to one append (bytes, approximately). */
const CHUNK_BYTES = 1024 * 1024;

export class JsonlWriter {
  private queue: LogRecord[] = [];
  private dropped = 0;
  private lastDropped: LogRecord | undefined;
  private size: number | undefined;
  private draining: Promise<void> | undefined;
  private scheduled = false;
  private dirReady = false;
  disabled = false;

  constructor(readonly file: string, private readonly opts: WriterOptions) {}

  /** Queue a record. Never throws, never waits. */
  push(record: LogRecord): void {
    if (this.disabled) return;
    if (this.queue.length >= this.opts.maxQueue) {
      this.dropped++;
      this.lastDropped = record;
      return;
    }
    if (this.dropped > 0) this.takeDropped();
    this.queue.push(record);
    if (!this.scheduled && !this.draining) {
      this.scheduled = true;
      setImmediate(() => this.start());
    }
  }

  /** Records waiting (for tests and the buffer bound). */
  get pending(): number {
    return this.queue.length;
  }

  /** Resolves once everything queued so far is on disk (or the writer gave up). */
  async flush(): Promise<void> {
    this.start();
    while (this.draining) await this.draining;
  }

  private takeDropped(): void {
    const last = this.lastDropped ?? {};
    this.queue.push({ ts: Date.now(), kind: 'dropped', conversationId: last.conversationId, runId: last.runId, round: last.round, count: this.dropped });
    this.dropped = 0;
    this.lastDropped = undefined;
  }

  private start(): void {
    this.scheduled = false;
    if (this.draining || this.disabled) return;
    if (this.dropped > 0 && this.queue.length < this.opts.maxQueue) this.takeDropped();
    if (this.queue.length === 0) return;
    this.draining = this.drain()
      .catch((err: unknown) => this.fail(err))
      .finally(() => {
        this.draining = undefined;
        if (this.queue.length > 0 || this.dropped > 0) this.start();
      });
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0 && !this.disabled) {
      const batch = this.queue;
      this.queue = [];
      if (!this.dirReady) {
        await fs.mkdir(path.dirname(this.file), { recursive: true, mode: 0o700 });
        this.dirReady = true;
      }
      if (this.size === undefined) this.size = await sizeOf(this.file);
      let chunk: string[] = [];
      let chunkBytes = 0;
      for (const record of batch) {
        const line = lineOf(record);
        const bytes = Buffer.byteLength(line);
        if (this.size + chunkBytes + bytes > this.opts.maxFileBytes && this.size + chunkBytes > 0) {
          await this.append(chunk, chunkBytes);
          chunk = [];
          chunkBytes = 0;
          await this.rotate();
        }
        chunk.push(line);
        chunkBytes += bytes;
        if (chunkBytes >= CHUNK_BYTES) {
          await this.append(chunk, chunkBytes);
          chunk = [];
          chunkBytes = 0;
        }
      }
      await this.append(chunk, chunkBytes);
    }
  }

  private async append(lines: string[], bytes: number): Promise<void> {
    if (lines.length === 0 || this.disabled) return;
    const text = lines.join('');
    try {
      await fs.appendFile(this.file, text, { mode: 0o600 });
    } catch (err) {
      // The folder was removed under a running host (someone cleaned up): make it again, once.
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      await fs.mkdir(path.dirname(this.file), { recursive: true, mode: 0o700 });
      await fs.appendFile(this.file, text, { mode: 0o600 });
      this.size = 0;
    }
    this.size = (this.size ?? 0) + bytes;
  }

  /** `<id>.jsonl` → `<id>.1.jsonl` → … → `<id>.<maxFiles-1>.jsonl`; what falls off the end is deleted. */
  private async rotate(): Promise<void> {
    const keep = this.opts.maxFiles - 1;
    const base = this.file.slice(0, -'.jsonl'.length);
    const nth = (n: number) => `${base}.${n}.jsonl`;
    if (keep <= 0) {
      await fs.rm(this.file, { force: true });
    } else {
      await fs.rm(nth(keep), { force: true });
      for (let n = keep - 1; n >= 1; n--) await renameIfThere(nth(n), nth(n + 1));
      await renameIfThere(this.file, nth(1));
    }
    this.size = 0;
  }

  private fail(err: unknown): void {
    if (this.disabled) return;
    this.disabled = true;
    this.queue = [];
    this.dropped = 0;
    try {
      this.opts.onError(err instanceof Error ? err : new Error(String(err)));
    } catch {
      /* the reporter must not take the writer's caller down */
    }
  }
}

function lineOf(record: LogRecord): string {
  try {
    return serializeRecord(record) + '\n';
  } catch (err) {
    // A circular or otherwise unserializable value: keep the record's place and say why.
    const { ts, kind, conversationId, runId, round } = record;
    return serializeRecord({ ts, kind: 'unserializable', conversationId, runId, round, of: kind, error: (err as Error)?.message ?? String(err) }) + '\n';
  }
}

async function sizeOf(file: string): Promise<number> {
  try {
    const st = await fs.stat(file);
    if (!st.isFile()) throw Object.assign(new Error(`${file} is not a regular file`), { code: 'EISDIR' });
    return st.size;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw err;
  }
}

async function renameIfThere(from: string, to: string): Promise<void> {
  try {
    await fs.rename(from, to);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}
