/**
 * Where debug files live and how long they stay: `$LIVEAGENT_HOME/debug/<conversationId>.jsonl`
 * (rotated ones `<conversationId>.<n>.jsonl`), named only after ids that are safe as file names,
 * and collected by age at start-up.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';

/** The kernel's own id shape (core/ids.ts CONVERSATION_ID_PATTERN): no dots, slashes or NULs. */
const SAFE_ID = /^[A-Za-z0-9_-]{1,128}$/;

/** Our files and only ours: a live file or a rotated one. */
const OUR_FILE = /^[A-Za-z0-9_-]{1,128}(?:\.\d{1,3})?\.jsonl$/;

export function debugDir(home: string): string {
  return path.join(home, 'debug');
}

/**
 * The file name stem for a conversation. An id that is not safe as a file name (an embedder's
 * own ids) is never used as one: it becomes `x-<sha256 prefix>`, and the records still carry it.
 */
export function fileStem(conversationId: string): { stem: string; safe: boolean } {
  if (SAFE_ID.test(conversationId)) return { stem: conversationId, safe: true };
  return { stem: `x-${createHash('sha256').update(conversationId).digest('hex').slice(0, 32)}`, safe: false };
}

export function debugFile(home: string, conversationId: string): string {
  return path.join(debugDir(home), `${fileStem(conversationId).stem}.jsonl`);
}

/**
 * Delete our files in `dir` not modified for `days` days (0: keep everything). Resolves to the
 * number deleted; a missing folder is nothing to collect. Other files are never touched.
 */
export async function collectOld(dir: string, days: number, now = Date.now()): Promise<number> {
  if (!(days > 0)) return 0;
  let names: string[];
  try {
    names = await fs.readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENOTDIR') return 0;
    throw err;
  }
  const cutoff = now - days * 86_400_000;
  let removed = 0;
  for (const name of names) {
    if (!OUR_FILE.test(name)) continue;
    const file = path.join(dir, name);
    try {
      const st = await fs.lstat(file);
      if (!st.isFile() || st.mtimeMs >= cutoff) continue;
      await fs.unlink(file);
      removed++;
    } catch (err) {
      // Gone meanwhile (another host collecting too) is fine; anything else is worth saying.
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
  return removed;
}
