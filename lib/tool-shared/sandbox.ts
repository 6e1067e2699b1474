/**
 * The workspace sandbox of the file tools: which roots an access may reach (the workspace; the
 * uploads folder, read-only; Delete's extra roots) and the checks a path must pass: lexically
 * (where it points once `..` is resolved) and for real (where it lands once the symbolic links
 * that exist are followed, including a dangling last link, which a write would otherwise
 * follow to create a file anywhere).
 *
 * The tools do the lexical check here and leave the real one to the handle walker
 * (sandbox-walk.ts), which applies the same scope to every link it meets while holding each
 * folder open, so that no swap between a check and a use can redirect them. The by-name real
 * check ({@link resolveSandboxPath}) stays for callers that only need to know where a path lands.
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

export interface SandboxPath extends SandboxTarget {
  /** Where the path really lands (for `delete`: the parent followed, the last name kept). */
  real: string;
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
 * The roots an access may reach, and the check a real location must pass. The handle walker
 * (sandbox-walk.ts) checks every symbolic-link target it meets against the same scope.
 */
export interface SandboxScope {
  access: Access;
  workspace: SandboxRoot;
  /** In order: the workspace first, so a path inside both is walked from the workspace. */
  roots: readonly SandboxRoot[];
  /** How messages name the reachable places ("the workspace or the uploads folder"). */
  where: string;
  /** The root `p` (an absolute path with `..` resolved) lies in, for this access; else a refusal naming `input`. */
  admit(p: string, input: string): SandboxRoot;
  /** True when `p` lies in the read-only uploads folder. */
  inUploads(p: string): boolean;
}

export type SandboxRoot = Root;

export async function sandboxScope(opts: SandboxOptions): Promise<SandboxScope> {
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
  const inUploads = (p: string) => !!uploadsDir && (isInside(p, uploadsDir) || isInside(p, uploadsReal!));
  const where = opts.access === 'read' && uploadsDir ? 'the workspace or the uploads folder' : opts.access === 'delete' && roots.length > 1 ? 'the workspace or an enabled skill folder' : 'the workspace';
  const admit = (real: string, input: string): Root => {
    if (opts.access !== 'read' && inUploads(real)) refuse(`"${input}" leads into the uploads folder (${real}), which is read-only`, 'uploads-read-only');
    const admitted = roots.find((r) => isInside(real, r.real));
    if (!admitted) refuse(`"${input}" resolves through a symbolic link to ${real}, outside ${where}`, 'symlink');
    if (opts.access === 'delete' && roots.some((r) => real === r.real)) {
      refuse(`"${input}" is the root of ${r0(admitted)} itself; delete what is inside it instead`, 'root');
    }
    return admitted;
  };
  return { access: opts.access, workspace, roots, where, admit, inUploads };
}

/**
 * Refuse a path that ends with a slash where the tool needs a file: `Write "dir/"` would
 * otherwise create a file named `dir`.
 */
export function refuseTrailingSlash(input: string, tool: string): void {
  if (input.endsWith('/') || (path.sep === '\\' && input.endsWith('\\'))) {
    refuse(`path ends with '/': ${tool} needs a file path ("${input}")`, 'trailing-slash');
  }
}

/**
 * Resolve a path given by the model and check it against the sandbox. Throws a
 * {@link ToolFailure} ("Refused: ...") naming the path and the rule it broke.
 *
 * This check alone is not enough to act on the path: another process may swap a folder for a
 * symbolic link right after it. The tools act through {@link resolveSandboxTarget} and the
 * handle walker (sandbox-walk.ts, sandbox-fs.ts), which check every step on open handles.
 */
export async function resolveSandboxPath(input: string, opts: SandboxOptions): Promise<SandboxPath> {
  return (await resolveSandbox(input, opts)).path;
}

/** A path the lexical check admitted: what the race-free operations (sandbox-fs.ts) start from. */
export interface SandboxTarget {
  /** The path as the model gave it. */
  input: string;
  /** Absolute, with `..` resolved (links not followed). */
  absolute: string;
  /** Workspace-relative with `/` separators when inside the workspace, else absolute. */
  display: string;
}

/**
 * The lexical check alone (no I/O on the path): what the file tools use, because the handle
 * walker then checks every link it meets, on held handles, with the same refusals.
 */
export async function resolveSandboxTarget(input: string, opts: SandboxOptions): Promise<{ target: SandboxTarget; scope: SandboxScope }> {
  if (typeof input !== 'string' || input.trim() === '') refuse('the path is empty', 'empty');
  if (input.includes('\0')) refuse('the path contains a NUL character', 'nul');
  const scope = await sandboxScope(opts);
  const { workspace, roots, where } = scope;
  const workdir = workspace.dir;
  const absolute = path.resolve(workdir, input);
  if (opts.access !== 'read' && scope.inUploads(absolute)) refuse(`"${input}" is in the uploads folder, which is read-only`, 'uploads-read-only');
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
  return { target: { input, absolute, display: toDisplay(absolute, workspace) }, scope };
}

/** {@link resolveSandboxPath}, plus the scope. */
export async function resolveSandbox(input: string, opts: SandboxOptions): Promise<{ path: SandboxPath; scope: SandboxScope }> {
  const { target, scope } = await resolveSandboxTarget(input, opts);
  const { absolute } = target;

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
  const admitted = scope.admit(real, input);
  return { path: { ...target, real, exists, root: admitted.kind }, scope };
}

function r0(root: Root): string {
  return root.kind === 'workspace' ? 'the workspace' : root.kind === 'uploads' ? 'the uploads folder' : `the folder ${root.dir}`;
}
