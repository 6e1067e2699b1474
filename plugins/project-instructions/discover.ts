/**
 * Finding and reading a project's instruction files: `AGENTS.md` (and `CLAUDE.md`, for projects
 * that already have one) in every folder from the repository root down to the run's working
 * folder. The repository root is the nearest folder at or above the workdir holding `.git` (a
 * folder, or the file a worktree or submodule has); without one only the workdir itself counts,
 * so a run in a stray folder never picks up files from the user's home or `/`.
 *
 * Files are joined root-first (general rules before the specific ones of a subfolder), as codex
 * joins its AGENTS.md chain, and the whole is capped: what passes the cap is cut with a marker.
 *
 * A file is read only when it really lies inside the repository (or the workdir): a cloned repo
 * could carry `CLAUDE.md -> ~/.aws/credentials`, and what is read here goes to the model.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';

/** File names read in each folder, in this order. */
export const INSTRUCTION_FILES = ['AGENTS.md', 'CLAUDE.md'] as const;
/** The cap on the joined instructions (UTF-8 bytes), as codex's project_doc_max_bytes. */
export const MAX_INSTRUCTION_BYTES = 32 * 1024;
/** A single file larger than this is not read at all (it could never fit). */
const MAX_FILE_BYTES = 1024 * 1024;

export interface InstructionFile {
  /** Absolute path as found (not resolved through links). */
  path: string;
  text: string;
}

export interface Instructions {
  /** The repository root, or the workdir when there is none. */
  root: string;
  files: InstructionFile[];
  /** The joined text, capped; empty when no file was found. */
  text: string;
  /** True when the cap cut something off. */
  truncated: boolean;
}

interface Cached {
  mtimeMs: number;
  size: number;
  ino: number;
  text: string;
}

const isInside = (child: string, parent: string) => {
  const rel = path.relative(parent, child);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
};

/** The folders from the repository root down to `workdir` (root first). */
export async function folderChain(workdir: string): Promise<string[]> {
  const start = path.resolve(workdir);
  const up: string[] = [];
  for (let dir = start; ; dir = path.dirname(dir)) {
    up.push(dir);
    if (await fsp.lstat(path.join(dir, '.git')).then(() => true, () => false)) return up.reverse();
    if (path.dirname(dir) === dir) return [start];
  }
}

/**
 * Reads instruction files, remembering each file's text by path with its mtime, size and inode,
 * so a run re-reads only what changed (a stat per candidate is all an unchanged project costs).
 */
export class InstructionReader {
  private cache = new Map<string, Cached>();

  constructor(private readonly maxBytes = MAX_INSTRUCTION_BYTES) {}

  async read(workdir: string): Promise<Instructions> {
    const chain = await folderChain(workdir);
    const root = chain[0]!;
    const rootReal = await fsp.realpath(root).catch(() => root);
    const files: InstructionFile[] = [];
    const seen = new Set<string>();
    for (const dir of chain) {
      for (const name of INSTRUCTION_FILES) {
        const p = path.join(dir, name);
        const text = await this.readOne(p, rootReal, seen);
        if (text !== undefined && text.trim()) files.push({ path: p, text });
      }
    }
    // Identical content twice (CLAUDE.md a copy of AGENTS.md) is said once.
    const unique = files.filter((f, i) => files.findIndex((g) => g.text.trim() === f.text.trim()) === i);
    const { text, truncated } = joinCapped(unique, this.maxBytes);
    return { root, files: unique, text, truncated };
  }

  private async readOne(p: string, rootReal: string, seen: Set<string>): Promise<string | undefined> {
    let real: string;
    try {
      real = await fsp.realpath(p);
    } catch {
      this.cache.delete(p);
      return undefined;
    }
    // Outside the repository (a link out) or the same file twice (CLAUDE.md -> AGENTS.md).
    if (!isInside(real, rootReal) || seen.has(real)) return undefined;
    seen.add(real);
    const st = await fsp.stat(real).catch(() => undefined);
    if (!st?.isFile() || st.size > MAX_FILE_BYTES) return undefined;
    const hit = this.cache.get(p);
    if (hit && hit.mtimeMs === st.mtimeMs && hit.size === st.size && hit.ino === st.ino) return hit.text;
    const text = await fsp.readFile(real, 'utf8').catch(() => undefined);
    if (text === undefined) return undefined;
    this.cache.set(p, { mtimeMs: st.mtimeMs, size: st.size, ino: st.ino, text });
    return text;
  }
}

/** The files as the model reads them, each in a tagged block naming its path; cut at `maxBytes`. */
export function joinCapped(files: InstructionFile[], maxBytes: number): { text: string; truncated: boolean } {
  if (!files.length) return { text: '', truncated: false };
  const blocks = files.map((f) => `<instructions path="${f.path}">\n${f.text.trim()}\n</instructions>`);
  const joined = blocks.join('\n\n');
  const bytes = Buffer.from(joined, 'utf8');
  if (bytes.length <= maxBytes) return { text: joined, truncated: false };
  const marker = `\n[... project instructions cut here: they exceed ${Math.round(maxBytes / 1024)} KiB ...]`;
  // Cut on a character boundary: decoding a slice can end in half a character, which is dropped.
  let cut = bytes.subarray(0, Math.max(0, maxBytes - Buffer.byteLength(marker))).toString('utf8');
  if (cut.endsWith('\uFFFD')) cut = cut.slice(0, -1);
  return { text: cut + marker, truncated: true };
}
