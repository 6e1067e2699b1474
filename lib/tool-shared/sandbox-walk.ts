/**
 * The race-free half of the sandbox: walk a path one name at a time from an open handle on the
 * root, never letting the kernel follow a symbolic link on its own.
 *
 * Checking a path and then opening it again by name is a race: between the two, another
 * process can swap a folder for a link to anywhere. So each step here opens the next folder
 * relative to the directory handle already held and verified, through
 * `/proc/self/fd/<dirfd>/<name>` with O_NOFOLLOW (the kernel resolves that path from the held
 * directory itself, whatever has been renamed since). A link met on the way is read, its target
 * checked against the sandbox, and the walk starts again from that root's handle. What is
 * finally returned is a held handle on the parent folder plus the last name, and every
 * operation on the entry (open, create, rename, unlink) goes through that handle.
 *
 * Where `/proc/self/fd` is unavailable (macOS, Windows), no folder is held and `at()` names
 * entries by their real path instead: that is the older check-then-use behaviour, narrowed by
 * lstat on each step and a realpath re-check after each open (see `recheck`). The race stays
 * open there; Node offers no openat.
 *
 * A folder moved (renamed) out of the workspace while a tool holds it keeps being used, as
 * with any handle-based sandbox: that needs write access outside, which the swap attack lacks.
 */
import { constants, promises as fsp, type Stats } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { FileIo } from './abort.js';
import { ToolFailure } from './results.js';
import { isInside, type SandboxTarget, type SandboxRoot, type SandboxScope } from './sandbox.js';

const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW } = constants;
const MAX_LINKS = 40;

let procFd: Promise<boolean> | undefined;
let forced: boolean | undefined;

/** Whether `/proc/self/fd/<fd>` names the open file itself (probed once). */
function procFdWorks(): Promise<boolean> {
  if (forced !== undefined) return Promise.resolve(forced);
  procFd ??= (async () => {
    if (process.platform !== 'linux') return false;
    let fh: FileHandle | undefined;
    try {
      fh = await fsp.open('/', O_RDONLY | O_DIRECTORY);
      const [a, b] = await Promise.all([fh.stat(), fsp.stat(`/proc/self/fd/${fh.fd}`)]);
      return a.ino === b.ino && a.dev === b.dev;
    } catch {
      return false;
    } finally {
      await fh?.close().catch(() => {});
    }
  })();
  return procFd;
}

/** Tests only: force the by-name fallback (false), force /proc (true), or probe again (undefined). */
export function useProcFdForTests(value: boolean | undefined): void {
  forced = value;
}

/** A folder held open, and how to name the entries inside it. */
export class HeldDir {
  private closed = false;
  constructor(
    /** The held handle; none in the by-name fallback, which names entries by path instead. */
    readonly fh: FileHandle | undefined,
    /** Its real path when it was opened (names it in messages; the by-name fallback uses it). */
    readonly real: string,
  ) {}

  get viaProc(): boolean {
    return this.fh !== undefined;
  }

  /** A path to `name` in this folder that the kernel resolves from the held handle. */
  at(name: string): string {
    return this.fh ? `/proc/self/fd/${this.fh.fd}/${name}` : path.join(this.real, name);
  }

  /** A path to the folder itself (for readdir). */
  self(): string {
    return this.fh ? `/proc/self/fd/${this.fh.fd}` : this.real;
  }

  /**
   * Only once no operation through `at()` can still be pending: a path op that ran after the
   * close could meet the descriptor number reused by another file. Hence no step here is raced
   * against abort; the signal is checked between steps, and only a tool's whole body is raced.
   */
  close(): Promise<void> {
    if (this.closed || !this.fh) return Promise.resolve();
    this.closed = true;
    return this.fh.close().catch(() => {});
  }
}

const codeOf = (err: unknown) => (err as NodeJS.ErrnoException | undefined)?.code;

/** The real path must still be where we walked; only meaningful for the by-name fallback. */
export async function recheck(dir: HeldDir, name: string, root: SandboxRoot, input: string): Promise<void> {
  if (dir.viaProc) return;
  const real = await fsp.realpath(dir.at(name));
  if (!isInside(real, root.real)) {
    throw new ToolFailure(`Refused: "${input}" changed while it was being opened and now leads to ${real}, outside the sandbox`, { refused: true, reason: 'symlink' });
  }
}

export async function openRoot(root: SandboxRoot, io: FileIo): Promise<HeldDir> {
  io.check();
  if (!(await procFdWorks())) return new HeldDir(undefined, root.real);
  return new HeldDir(await fsp.open(root.real, O_RDONLY | O_DIRECTORY), root.real);
}

export type Step = { dir: HeldDir } | { link: string };

/**
 * Open the folder `name` inside `dir` without following a link, creating it when asked. A link
 * is reported (its target), never followed here.
 */
export async function openChild(dir: HeldDir, name: string, io: FileIo, create = false): Promise<Step> {
  for (let attempt = 0; ; attempt++) {
    io.check();
    try {
      if (!dir.viaProc) {
        // By name: only the type is checked here; `recheck` follows up with realpath.
        const st = await fsp.lstat(dir.at(name));
        if (st.isDirectory()) return { dir: new HeldDir(undefined, path.join(dir.real, name)) };
        throw Object.assign(new Error(`${st.isSymbolicLink() ? 'ELOOP' : 'ENOTDIR'}: ${name}`), { code: st.isSymbolicLink() ? 'ELOOP' : 'ENOTDIR' });
      }
      const fh = await fsp.open(dir.at(name), O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
      return { dir: new HeldDir(fh, path.join(dir.real, name)) };
    } catch (err) {
      const code = codeOf(err);
      if (code === 'ELOOP' || code === 'ENOTDIR') {
        const st = await fsp.lstat(dir.at(name)).catch(() => undefined);
        if (st?.isSymbolicLink()) return { link: await fsp.readlink(dir.at(name)) };
        if (st && !st.isDirectory()) throw Object.assign(new Error(`ENOTDIR: ${name} is not a folder`), { code: 'ENOTDIR' });
        if (attempt < 3) continue; // swapped back to a folder meanwhile
      }
      if (code === 'ENOENT' && create && attempt < 3) {
        await fsp.mkdir(dir.at(name)).catch((e: unknown) => {
          if (codeOf(e) !== 'EEXIST') throw e;
        });
        continue;
      }
      throw err;
    }
  }
}

/** The parent folder of an entry, held open, and the entry's name and type (after the links asked for). */
export interface Located {
  dir: HeldDir;
  /** The last name; '.' when the path is a root itself. */
  name: string;
  /** lstat of the entry when located; undefined when nothing is there. */
  stat: Stats | undefined;
  root: SandboxRoot;
  /** Where the entry really is, for messages. */
  real: string;
}

export interface LocateOptions {
  /** Create missing parent folders (Write). */
  create?: boolean;
  /** Follow a link in the last position (read, write) or act on the link itself (delete). */
  followLast: boolean;
}

/**
 * Walk `p` from its root's handle. Each link met is read, its target re-admitted by the scope
 * (a refusal names the path and where it leads), and the walk restarts from that root.
 */
export async function locate(p: SandboxTarget, scope: SandboxScope, io: FileIo, o: LocateOptions): Promise<Located> {
  let target = p.absolute;
  let root = scope.roots.find((r) => isInside(target, r.real)) ?? scope.roots.find((r) => isInside(target, r.dir));
  if (!root) root = scope.admit(target, p.input);
  let base = isInside(target, root.real) ? root.real : root.dir;
  for (let links = 0; ; ) {
    const names = path.relative(base, target).split(path.sep).filter((n) => n !== '' && n !== '.');
    let dir = await openRoot(root, io);
    let next: string | undefined;
    try {
      for (let i = 0; i < names.length - 1 && next === undefined; i++) {
        const step = await openChild(dir, names[i]!, io, o.create);
        if ('link' in step) {
          next = path.resolve(dir.real, step.link, ...names.slice(i + 1));
        } else {
          await dir.close();
          dir = step.dir;
          await recheck(dir, '.', root, p.input);
        }
      }
      if (next === undefined) {
        const name = names.at(-1) ?? '.';
        io.check();
        const stat = await fsp.lstat(dir.at(name)).catch((err: unknown) => {
          if (codeOf(err) === 'ENOENT') return undefined;
          throw err;
        });
        if (stat?.isSymbolicLink() && o.followLast) {
          next = path.resolve(dir.real, await fsp.readlink(dir.at(name)));
        } else {
          if (scope.access === 'delete' && name === '.') scope.admit(dir.real, p.input); // refuses a root
          return { dir, name, stat, root, real: path.join(dir.real, name) };
        }
      }
    } catch (err) {
      await dir.close();
      throw err;
    }
    await dir.close();
    if (++links > MAX_LINKS) throw new ToolFailure(`Refused: "${p.input}" has too many levels of symbolic links`, { refused: true, reason: 'loop' });
    target = next;
    root = scope.admit(target, p.input);
    base = root.real;
  }
}
