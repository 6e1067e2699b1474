/**
 * The unreviewed list: memories that silent extraction proposed, waiting for the user to accept
 * or dismiss them. Extraction never writes a memory file itself (peers' users complain of memory
 * written, and deleted, without asking); it writes here, with the source of each proposal.
 *
 * One JSON file, `$LIVEAGENT_HOME/memory/.unreviewed.json` (hidden, so the Memory tool cannot
 * reach it), replaced atomically. Changes are read-modify-write under an in-process queue and
 * a lock file shared with other processes (a CLI run and the server may both extract); a lock
 * left by a crashed process is taken over once it is older than STALE_MS.
 */
import { constants, promises as fsp } from 'node:fs';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { z } from 'zod';
import { writeAtomic } from './files.js';

const Proposal = z.object({
  id: z.string(),
  text: z.string(),
  scope: z.enum(['user', 'project']),
  /** Suggested file, relative to the scope (e.g. `preferences.md`). */
  file: z.string(),
  /** The project's working folder (project scope). */
  workdir: z.string().optional(),
  source: z.object({ conversationId: z.string(), messageId: z.string().optional(), runId: z.string().optional() }),
  provider: z.string().optional(),
  model: z.string().optional(),
  createdAt: z.number(),
});
export type MemoryProposal = z.infer<typeof Proposal>;

const FileShape = z.object({ version: z.literal(1), items: z.array(Proposal) });

export const UNREVIEWED_FILE = '.unreviewed.json';
/** Oldest proposals go first past this many. */
const MAX_ITEMS = 500;
const STALE_MS = 10_000;
const LOCK_WAIT_MS = 5_000;

export class UnreviewedList {
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly dir: string) {}

  get file(): string {
    return path.join(this.dir, UNREVIEWED_FILE);
  }

  async list(): Promise<MemoryProposal[]> {
    return (await this.load()).items;
  }

  /** Add proposals (ids and times stamped here); returns the ones added (duplicates of pending ones are not). */
  add(items: Array<Omit<MemoryProposal, 'id' | 'createdAt'>>): Promise<MemoryProposal[]> {
    return this.change((current) => {
      const known = new Set(current.map((p) => norm(p.text)));
      const added: MemoryProposal[] = [];
      for (const item of items) {
        const key = norm(item.text);
        if (!key || known.has(key)) continue;
        known.add(key);
        added.push({ ...item, id: randomUUID(), createdAt: Date.now() });
      }
      return { next: [...current, ...added].slice(-MAX_ITEMS), result: added };
    });
  }

  /** Remove a proposal; resolves to it (undefined when unknown). */
  take(id: string): Promise<MemoryProposal | undefined> {
    return this.change((current) => {
      const found = current.find((p) => p.id === id);
      return { next: found ? current.filter((p) => p !== found) : current, result: found };
    });
  }

  private async load(): Promise<{ version: 1; items: MemoryProposal[] }> {
    const raw = await fsp.readFile(this.file, 'utf8').catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return undefined;
      throw err;
    });
    if (raw === undefined) return { version: 1, items: [] };
    let json: unknown;
    try {
      json = JSON.parse(raw);
    } catch {
      throw new Error(`${this.file} is not valid JSON; fix or remove it`);
    }
    const r = FileShape.safeParse(json);
    if (!r.success) throw new Error(`${this.file}: ${r.error.issues[0]!.path.join('.') || 'file'}: ${r.error.issues[0]!.message}`);
    return r.data;
  }

  private change<T>(fn: (items: MemoryProposal[]) => { next: MemoryProposal[]; result: T }): Promise<T> {
    const run = this.queue.then(async () => {
      await fsp.mkdir(this.dir, { recursive: true, mode: 0o700 });
      const release = await this.lock();
      try {
        const { items } = await this.load();
        const { next, result } = fn(items);
        if (next !== items) await writeAtomic(this.dir, UNREVIEWED_FILE, `${JSON.stringify({ version: 1, items: next }, null, 2)}\n`);
        return result;
      } finally {
        await release();
      }
    });
    this.queue = run.catch(() => {});
    return run;
  }

  private async lock(): Promise<() => Promise<void>> {
    const lockFile = `${this.file}.lock`;
    const started = Date.now();
    for (;;) {
      try {
        const fh = await fsp.open(lockFile, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
        await fh.writeFile(String(process.pid));
        await fh.close();
        return () => fsp.unlink(lockFile).catch(() => {});
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
        const st = await fsp.stat(lockFile).catch(() => undefined);
        if (st && Date.now() - st.mtimeMs > STALE_MS) {
          await fsp.unlink(lockFile).catch(() => {});
          continue;
        }
        if (Date.now() - started > LOCK_WAIT_MS) throw new Error(`${lockFile} is held by another process; try again`);
        await new Promise((r) => setTimeout(r, 25));
      }
    }
  }
}

function norm(text: string): string {
  return text.trim().replace(/\s+/g, ' ').toLowerCase();
}
