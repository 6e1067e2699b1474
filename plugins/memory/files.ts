/**
 * Low-level file work inside checked memory folders (paths.ts did the checks): reading a text
 * file through a handle opened without following links, atomic replacement (a temp file in the
 * same folder, renamed over the name), and the walk that lists every memory file.
 */
import { constants, promises as fsp } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { ToolFailure } from '../../lib/tool-shared/results.js';
import { openNoFollow, scopeRoot, virtualOf, type MemoryRoots, type MemoryScope } from './paths.js';

/** Largest file read back (memory files are small; anything bigger is not ours). */
export const MAX_READ_BYTES = 1024 * 1024;
const MAX_WALK_DEPTH = 8;
const MAX_LISTED = 2000;

export async function readText(abs: string, shown: string): Promise<string> {
  const fh = await openNoFollow(abs);
  try {
    const st = await fh.stat();
    if (st.isDirectory()) throw new ToolFailure(`${shown} is a folder, not a file`);
    if (!st.isFile()) throw new ToolFailure(`Refused: ${shown} is not a regular file`);
    if (st.size > MAX_READ_BYTES) throw new ToolFailure(`${shown} is ${st.size} bytes, too large for a memory file`);
    const buf = await fh.readFile();
    if (buf.includes(0)) throw new ToolFailure(`${shown} is a binary file; memory files are text`);
    return buf.toString('utf8');
  } finally {
    await fh.close().catch(() => {});
  }
}

/**
 * Replace (or create) `name` in the folder `dir` atomically: readers see the old file or the
 * new one, never half of one. The temp file is hidden, so listings and the model never see it.
 */
export async function writeAtomic(dir: string, name: string, text: string): Promise<void> {
  const tmp = path.join(dir, `.${name.slice(0, 100)}.${randomBytes(6).toString('hex')}.tmp`);
  const fh = await fsp.open(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  let renamed = false;
  try {
    await fh.writeFile(text, 'utf8');
    await fh.close();
    await fsp.rename(tmp, path.join(dir, name));
    renamed = true;
  } finally {
    await fh.close().catch(() => {});
    if (!renamed) await fsp.unlink(tmp).catch(() => {});
  }
}

export interface MemoryFileInfo {
  /** Virtual path (`/memories/...`). */
  path: string;
  scope: MemoryScope;
  size: number;
  mtimeMs: number;
  /** The first non-empty line, without Markdown heading marks, at most 160 characters. */
  firstLine: string;
}

const FIRST_LINE_BYTES = 2048;

async function firstLineOf(abs: string): Promise<string> {
  const fh = await openNoFollow(abs).catch(() => undefined);
  if (!fh) return '';
  try {
    const buf = Buffer.alloc(FIRST_LINE_BYTES);
    const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
    const head = buf.subarray(0, bytesRead).toString('utf8');
    const line = head.split('\n').map((l) => l.trim()).find((l) => l && l !== '---') ?? '';
    const clean = line.replace(/^#+\s*/, '').replace(/\uFFFD$/, '');
    return clean.length > 160 ? `${clean.slice(0, 159)}…` : clean;
  } finally {
    await fh.close().catch(() => {});
  }
}

/** Every memory file of one scope, sorted by path; hidden names and links are skipped. */
export async function listScope(scope: MemoryScope, roots: MemoryRoots): Promise<MemoryFileInfo[]> {
  const root = await scopeRoot(scope, roots, false).catch(() => undefined);
  if (!root) return [];
  const out: MemoryFileInfo[] = [];
  const walk = async (dir: string, rel: string[]): Promise<void> => {
    if (rel.length > MAX_WALK_DEPTH || out.length >= MAX_LISTED) return;
    const entries = await fsp.readdir(dir, { withFileTypes: true }).catch(() => []);
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const e of entries) {
      if (e.name.startsWith('.') || out.length >= MAX_LISTED) continue;
      // The user scope's `project` name is the project scope's mount point, never a user file.
      if (scope === 'user' && rel.length === 0 && e.name === 'project') continue;
      const abs = path.join(dir, e.name);
      if (e.isDirectory()) await walk(abs, [...rel, e.name]);
      else if (e.isFile()) {
        const st = await fsp.lstat(abs).catch(() => undefined);
        if (!st?.isFile()) continue;
        out.push({ path: virtualOf(scope, [...rel, e.name]), scope, size: st.size, mtimeMs: st.mtimeMs, firstLine: await firstLineOf(abs) });
      }
    }
  };
  await walk(root, []);
  return out;
}

/** Both scopes: the user's files first, then the project's (when a workdir is known). */
export async function listAll(roots: MemoryRoots): Promise<MemoryFileInfo[]> {
  const user = await listScope('user', roots);
  const project = roots.workdir ? await listScope('project', roots) : [];
  return [...user, ...project];
}

export function humanSize(n: number): string {
  if (n < 1024) return `${n}B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)}K`;
  return `${(n / (1024 * 1024)).toFixed(1)}M`;
}
