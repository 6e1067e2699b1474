/**
 * Memory paths: the model (and the service) name memory files by virtual paths under
 * `/memories`, as Anthropic's memory tool does. Two folders stand behind them:
 *
 *   /memories/...          user scope     $LIVEAGENT_HOME/memory/...
 *   /memories/project/...  project scope  <workdir>/.liveagent/memory/...
 *
 * (so `project` is a reserved name at the top of the user scope).
 *
 * Confinement, in two steps. Lexically: `.` and `..` segments, backslashes, NUL and control
 * characters are refused outright (never normalized away), and so are hidden names (a leading
 * dot): they keep temp files and the `.unreviewed.json` list out of the model's reach. Then on
 * disk: every existing component below the scope's folder is checked with lstat and a
 * symbolic link anywhere is refused, for reading as for writing; for the project scope the
 * `.liveagent` and `.liveagent/memory` folders themselves must be real folders too, because a
 * cloned repository can carry `.liveagent -> ~/.ssh`. The user scope's folder itself may be a
 * link the user made (into a synced folder, say). Files are then opened with O_NOFOLLOW and
 * replaced by a rename inside the checked folder.
 *
 * What remains is the usual check-then-use window: a process that can already write inside
 * the memory folder could swap a checked subfolder for a link between the check and the use.
 * The workspace tools close that window with held directory handles (tool-shared's
 * sandbox-walk); memory folders are the user's own, so the plain check is used here.
 */
import { constants, promises as fsp, type Stats } from 'node:fs';
import path from 'node:path';
import { ToolFailure } from '../../lib/tool-shared/results.js';

export type MemoryScope = 'user' | 'project';

export const VIRTUAL_ROOT = '/memories';
export const PROJECT_SEGMENT = 'project';
const MAX_DEPTH = 8;
const MAX_NAME_BYTES = 255;

export interface VirtualPath {
  /** The canonical virtual path (`/memories/a/b.md`). */
  virtual: string;
  scope: MemoryScope;
  /** Segments below the scope's folder; empty for the folder itself. */
  rel: string[];
}

export interface MemoryLocation extends VirtualPath {
  /** The scope's folder on disk. */
  root: string;
  /** The absolute path on disk. */
  abs: string;
}

/** Where the memory folders are; `workdir` absent: the project scope is unavailable. */
export interface MemoryRoots {
  home: string;
  workdir?: string;
}

export function refuse(message: string): never {
  throw new ToolFailure(`Refused: ${message}`, { refused: true });
}

export function userRoot(home: string): string {
  return path.join(home, 'memory');
}

export function projectRoot(workdir: string): string {
  return path.join(workdir, '.liveagent', 'memory');
}

export function virtualOf(scope: MemoryScope, rel: readonly string[]): string {
  const base = scope === 'project' ? `${VIRTUAL_ROOT}/${PROJECT_SEGMENT}` : VIRTUAL_ROOT;
  return rel.length ? `${base}/${rel.join('/')}` : base;
}

/** Parse a virtual path; throws a ToolFailure naming what is wrong. */
export function parseVirtual(input: string): VirtualPath {
  if (typeof input !== 'string' || !input.trim()) refuse('the path is empty; memory paths start with /memories');
  const raw = input.trim();
  if (raw.includes('\0')) refuse('the path contains a NUL character');
  if (raw.includes('\\')) refuse(`"${raw}" contains a backslash; memory paths use "/"`);
  if (/[\x00-\x1f\x7f]/.test(raw)) refuse(`"${raw}" contains a control character`);
  const segments = raw.split('/').filter((s) => s !== '');
  if (segments[0] !== 'memories') refuse(`"${raw}" is outside ${VIRTUAL_ROOT}; every memory path starts with ${VIRTUAL_ROOT}`);
  const rest = segments.slice(1);
  for (const s of rest) {
    if (s === '..' || s === '.') refuse(`"${raw}" uses "${s}"; memory paths may not leave or re-enter folders, name the file directly under ${VIRTUAL_ROOT}`);
    if (s.startsWith('.')) refuse(`"${raw}": names starting with "." are reserved`);
    if (Buffer.byteLength(s) > MAX_NAME_BYTES) refuse(`"${raw}": a name is longer than ${MAX_NAME_BYTES} bytes`);
  }
  if (rest.length > MAX_DEPTH + 1) refuse(`"${raw}" is nested deeper than ${MAX_DEPTH} folders`);
  const scope: MemoryScope = rest[0] === PROJECT_SEGMENT ? 'project' : 'user';
  const rel = scope === 'project' ? rest.slice(1) : rest;
  return { virtual: virtualOf(scope, rel), scope, rel };
}

const codeOf = (err: unknown) => (err as NodeJS.ErrnoException | undefined)?.code;

async function lstatOrUndefined(p: string): Promise<Stats | undefined> {
  try {
    return await fsp.lstat(p);
  } catch (err) {
    if (codeOf(err) === 'ENOENT') return undefined;
    throw err;
  }
}

function refuseKind(st: Stats, shown: string): void {
  if (st.isSymbolicLink()) refuse(`${shown} is a symbolic link; memory paths never follow links`);
  if (!st.isFile() && !st.isDirectory()) refuse(`${shown} is not a regular file or folder`);
}

/**
 * The scope's folder on disk, checked (and created when `create`). Undefined when it does not
 * exist and `create` is false.
 */
export async function scopeRoot(scope: MemoryScope, roots: MemoryRoots, create: boolean): Promise<string | undefined> {
  if (scope === 'user') {
    const root = userRoot(roots.home);
    const st = await fsp.stat(root).catch(() => undefined);
    if (st && !st.isDirectory()) refuse(`the user memory folder ${root} is not a folder`);
    if (!st) {
      if (!create) return undefined;
      await fsp.mkdir(root, { recursive: true, mode: 0o700 });
    }
    return root;
  }
  if (!roots.workdir) refuse(`${VIRTUAL_ROOT}/${PROJECT_SEGMENT} needs a working folder, and none is known here`);
  let dir = path.resolve(roots.workdir);
  for (const name of ['.liveagent', 'memory']) {
    dir = path.join(dir, name);
    const st = await lstatOrUndefined(dir);
    if (st) {
      if (st.isSymbolicLink()) refuse(`the project memory folder ${dir} is a symbolic link; it must be a real folder inside the project`);
      if (!st.isDirectory()) refuse(`the project memory folder ${dir} is not a folder`);
      continue;
    }
    if (!create) return undefined;
    await fsp.mkdir(dir, { mode: 0o700 }).catch((err: unknown) => {
      if (codeOf(err) !== 'EEXIST') throw err;
    });
    const again = await fsp.lstat(dir);
    if (!again.isDirectory()) refuse(`the project memory folder ${dir} changed while it was being created`);
  }
  return dir;
}

export interface Checked extends MemoryLocation {
  /** What is at the path (undefined: nothing). Never a link. */
  stat?: Stats;
}

/**
 * Resolve and check a virtual path on disk. `create`: the scope folder and missing parent
 * folders are made (each checked as it is made), for a write.
 */
export async function locate(input: string, roots: MemoryRoots, opts: { create?: boolean } = {}): Promise<Checked> {
  const v = parseVirtual(input);
  const root = await scopeRoot(v.scope, roots, !!opts.create);
  if (!root) {
    const missing = v.scope === 'user' ? userRoot(roots.home) : projectRoot(roots.workdir!);
    return { ...v, root: missing, abs: path.join(missing, ...v.rel) };
  }
  let dir = root;
  for (let i = 0; i < v.rel.length; i++) {
    const p = path.join(dir, v.rel[i]!);
    const shown = virtualOf(v.scope, v.rel.slice(0, i + 1));
    const last = i === v.rel.length - 1;
    const st = await lstatOrUndefined(p);
    if (!st) {
      if (last) return { ...v, root, abs: p };
      if (!opts.create) return { ...v, root, abs: path.join(root, ...v.rel) };
      await fsp.mkdir(p, { mode: 0o700 }).catch((err: unknown) => {
        if (codeOf(err) !== 'EEXIST') throw err;
      });
      const made = await fsp.lstat(p);
      if (!made.isDirectory()) refuse(`${shown} changed while it was being created`);
      dir = p;
      continue;
    }
    refuseKind(st, shown);
    if (last) return { ...v, root, abs: p, stat: st };
    if (!st.isDirectory()) refuse(`${shown} is a file, not a folder`);
    dir = p;
  }
  // The scope folder itself (the user's may be a link they made; scopeRoot checked it).
  return { ...v, root, abs: root, stat: await fsp.stat(root) };
}

/** Open a checked file for reading without following a link that appeared since the check. */
export async function openNoFollow(abs: string, flags = constants.O_RDONLY) {
  try {
    return await fsp.open(abs, flags | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    if (codeOf(err) === 'ELOOP') refuse('the file was replaced by a symbolic link; nothing was done');
    throw err;
  }
}
