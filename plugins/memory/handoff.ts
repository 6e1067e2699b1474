/**
 * Turns waiting for silent extraction when a host stops are handed to the next host that starts
 * on the same home, instead of being dropped: a one-shot `liveagent chat` exits long before the
 * quiet time is over, so without this a CLI user's turns would never be read. The next process
 * (another CLI call, `serve`) extracts them at once, in the background.
 *
 * One file, `$LIVEAGENT_HOME/memory/.pending-extractions.json` (0600: it holds turn texts, as the
 * history database does). A process claims it by renaming it to a name of its own, so two hosts
 * starting together never extract the same turns twice; saving merges with whatever another
 * process left meanwhile. Bounded: the newest MAX_BATCHES batches, none older than MAX_AGE_MS.
 */
import { randomUUID } from 'node:crypto';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';

const FILE = '.pending-extractions.json';
const MAX_BATCHES = 50;
const MAX_AGE_MS = 7 * 24 * 3600_000;

const TurnSchema = z.object({ runId: z.string(), userText: z.string(), userMessageId: z.string().optional(), assistantText: z.string() });
const BatchSchema = z.object({
  conversationId: z.string().min(1),
  turns: z.array(TurnSchema).min(1),
  provider: z.string(),
  model: z.string(),
  workdir: z.string(),
  agentDev: z.boolean().optional(),
  savedAt: z.number(),
});
const FileSchema = z.object({ version: z.literal(1), batches: z.array(z.unknown()) });

export type HandoffBatch = z.infer<typeof BatchSchema>;

export class ExtractionHandoff {
  constructor(
    private readonly dir: string,
    private readonly warn: (message: string) => void,
  ) {}

  private get file(): string {
    return path.join(this.dir, FILE);
  }

  /** Take what earlier hosts left (this process alone gets it); entries that do not parse or are too old are dropped. */
  async claim(): Promise<HandoffBatch[]> {
    const mine = path.join(this.dir, `.pending-extractions.claimed-${process.pid}-${randomUUID()}.json`);
    try {
      await fsp.rename(this.file, mine);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') this.warn(`cannot take the pending memory extractions (${(err as Error).message})`);
      return [];
    }
    try {
      const parsed = FileSchema.safeParse(JSON.parse(await fsp.readFile(mine, 'utf8')));
      if (!parsed.success) {
        this.warn(`the pending memory extractions in ${this.file} are not readable; they are dropped`);
        return [];
      }
      const oldest = Date.now() - MAX_AGE_MS;
      return parsed.data.batches.flatMap((b) => {
        const r = BatchSchema.safeParse(b);
        return r.success && r.data.savedAt >= oldest ? [r.data] : [];
      });
    } catch (err) {
      this.warn(`cannot read the pending memory extractions (${(err as Error).message}); they are dropped`);
      return [];
    } finally {
      await fsp.unlink(mine).catch(() => {});
    }
  }

  /** Leave `batches` for the next host, with whatever another process left meanwhile (newest kept). */
  async save(batches: HandoffBatch[]): Promise<void> {
    if (!batches.length) return;
    await fsp.mkdir(this.dir, { recursive: true });
    const tmp = path.join(this.dir, `.pending-extractions.${process.pid}-${randomUUID()}.tmp`);
    let merged = batches;
    try {
      // link() never replaces: a file another host saved meanwhile is claimed and merged, then tried again.
      for (let attempt = 0; attempt < 20; attempt++) {
        if (attempt) await new Promise((r) => setTimeout(r, 2 + Math.random() * 10 * attempt));
        merged = [...(await this.claim()), ...merged].sort((x, y) => x.savedAt - y.savedAt).slice(-MAX_BATCHES);
        await fsp.writeFile(tmp, JSON.stringify({ version: 1, batches: merged }), { mode: 0o600 });
        try {
          await fsp.link(tmp, this.file);
          return;
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
        }
      }
      throw new Error('other hosts kept saving at the same time');
    } catch (err) {
      this.warn(`cannot leave the pending memory extractions for the next start (${(err as Error).message}); they are dropped`);
    } finally {
      await fsp.unlink(tmp).catch(() => {});
    }
  }
}
