/**
 * The workspace sandbox of the file tools. A path is checked twice before the tool touches it:
 * lexically (where it points once `..` is resolved) and for real (where it lands once the
 * symbolic links that exist are followed, including a dangling last link, which a write would
 * otherwise follow to create a file anywhere). The uploads folder may be read, never changed.
 *
 * Only the roots (workspace, uploads, extra roots) and the path's existing ancestors are
 * inspected here; the target's content is never read or written before the check passes.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { ToolFailure } from './results.js';

/** What the caller will do with the path. `delete` acts on the path itself, never on a link's target. */
export type Access = 'read' | 'write' | 'delete';

export interface SandboxOptions {
  /** The run's working directory: the workspace. */
  workdir: string;
  /** The uploads folder: readable, never writable. */
  uploads?: string;
  access: Access;
  /** More roots the access may reach (Delete: enabled skill folders, from `tools.deleteRoots`). */
  extraRoots?: readonly string[];
}

export interface SandboxPath {
  /** The path as the model gave it. */
  input: string;
  /** Absolute, with `..` resolved (links not followed). */
  absolute: string;
  /** Where the path really lands (for `delete`: the parent followed, the last name kept). */
  real: string;
  /** Workspace-relative with `/` separators when inside the workspace, else absolute. Ledger and messages use it. */
  display: string;
  /** True when something exists at the path (for `delete`: the entry itself, a link included). */
  exists: boolean;
  /** Which root admitted the path. */
  root: 'workspace' | 'uploads' | 'extra';
}

interface Root {
  kind: SandboxPath['root'];
  dir: string;
  real: string;
}

const MAX_LINKS = 40;

export function isInside(child: string, parent: string): boolean {
  const rel = path.relative(parent, child);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
}

function refuse(message: string, reason: string): never {
  throw new ToolFailure(`Refused: ${message}`, { refused: true, reason });
}

async function realOrSelf(dir: string): Promise<string | undefined> {
  try {
    return await fsp.realpath(dir);
  } catch {
    return undefined;
  }
}

/**
 * Where `p` really lands: the real path of its longest existing prefix, with the rest appended.
 * A dangling symbolic link is followed to its (missing) target, since writing through it would
 * create that target.
 */
async function resolveReal(p: string, links = { n: 0 }): Promise<string> {
  try {
    return await fsp.realpath(p);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT' && code !== 'ENOTDIR') {
      if (code === 'ELOOP') refuse(`"${p}" has too many levels of symbolic links`, 'loop');
      throw err;
    }
  }
  const parent = path.dirname(p);
  const link = await fsp.lstat(p).then((s) => s.isSymbolicLink(), () => false);
  if (link) {
    if (++links.n > MAX_LINKS) refuse(`"${p}" has too many levels of symbolic links`, 'loop');
    const target = await fsp.readlink(p);
    return resolveReal(path.resolve(await resolveReal(parent, links), target), links);
  }
  if (parent === p) return p;
  return path.join(await resolveReal(parent, links), path.basename(p));
}

function toDisplay(absolute: string, workspace: Root): string {
  for (const base of [workspace.dir, workspace.real]) {
    if (isInside(absolute, base)) {
      const rel = path.relative(base, absolute);
      return rel === '' ? '.' : rel.split(path.sep).join('/');
    }
  }
  return absolute;
}

/**
 * Resolve a path given by the model and check it against the sandbox. Throws a
 * {@link ToolFailure} ("Refused: ...") naming the path and the rule it broke.
 */
export async function resolveSandboxPath(input: string, opts: SandboxOptions): Promise<SandboxPath> {
  if (typeof input !== 'string' || input.trim() === '') refuse('the path is empty', 'empty');
  if (input.includes('\0')) refuse('the path contains a NUL character', 'nul');
  const workdir = path.resolve(opts.workdir);
  const workspaceReal = await realOrSelf(workdir);
  if (!workspaceReal) throw new ToolFailure(`The workspace ${workdir} does not exist.`);
  const workspace: Root = { kind: 'workspace', dir: workdir, real: workspaceReal };
  const roots: Root[] = [workspace];
  const uploadsDir = opts.uploads ? path.resolve(opts.uploads) : undefined;
  const uploadsReal = uploadsDir ? ((await realOrSelf(uploadsDir)) ?? uploadsDir) : undefined;
  if (opts.access === 'read' && uploadsDir) roots.push({ kind: 'uploads', dir: uploadsDir, real: uploadsReal! });
  if (opts.access === 'delete') {
    for (const extra of opts.extraRoots ?? []) {
      const dir = path.resolve(extra);
      const real = await realOrSelf(dir);
      if (real) roots.push({ kind: 'extra', dir, real });
    }
  }

  const absolute = path.resolve(workdir, input);
  const inUploads = (p: string) => !!uploadsDir && (isInside(p, uploadsDir) || isInside(p, uploadsReal!));
  const where = opts.access === 'read' && uploadsDir ? 'the workspace or the uploads folder' : opts.access === 'delete' && roots.length > 1 ? 'the workspace or an enabled skill folder' : 'the workspace';

  // Lexical check: no I/O on the target yet.
  if (opts.access !== 'read' && inUploads(absolute)) refuse(`"${input}" is in the uploads folder, which is read-only`, 'uploads-read-only');
  const lexical = roots.find((r) => isInside(absolute, r.dir) || isInside(absolute, r.real));
  if (!lexical) {
    const escapes = !path.isAbsolute(input) && input.split(/[\\/]/).includes('..');
    refuse(
      escapes
        ? `"${input}" escapes the workspace (${workdir}) through "..". File tools only work inside ${where}.`
        : `"${input}" is outside the workspace (${workdir}). File tools only work inside ${where}.`,
      escapes ? 'escape' : 'outside',
    );
  }
  if (opts.access === 'delete' && roots.some((r) => absolute === r.dir || absolute === r.real)) {
    refuse(`"${input}" is the root of ${r0(lexical!)} itself; delete what is inside it instead`, 'root');
  }

  // Real check: follow the links that exist.
  let real: string;
  let exists: boolean;
  if (opts.access === 'delete') {
    real = path.join(await resolveReal(path.dirname(absolute)), path.basename(absolute));
    exists = await fsp.lstat(absolute).then(() => true, () => false);
  } else {
    real = await resolveReal(absolute);
    exists = await fsp.stat(absolute).then(() => true, () => false);
  }
  if (opts.access !== 'read' && inUploads(real)) refuse(`"${input}" leads into the uploads folder (${real}), which is read-only`, 'uploads-read-only');
  const admitted = roots.find((r) => isInside(real, r.real));
  if (!admitted) refuse(`"${input}" resolves through a symbolic link to ${real}, outside ${where}`, 'symlink');
  if (opts.access === 'delete' && roots.some((r) => real === r.real)) {
    refuse(`"${input}" is the root of ${r0(admitted!)} itself; delete what is inside it instead`, 'root');
  }
  return { input, absolute, real, display: toDisplay(absolute, workspace), exists, root: admitted!.kind };
}

function r0(root: Root): string {
  return root.kind === 'workspace' ? 'the workspace' : root.kind === 'uploads' ? 'the uploads folder' : `the folder ${root.dir}`;
}
