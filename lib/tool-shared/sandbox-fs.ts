/**
 * File operations on a path the sandbox admitted, done through the handles the walker verified
 * (sandbox-walk.ts), never by name again: open the entry relative to its held parent folder
 * with O_NOFOLLOW, check the type on the opened handle, read through that handle, and replace
 * a file by writing a temp file in the same held folder and renaming it there.
 *
 * Only regular files and folders are handled. A named pipe, socket or device is refused before
 * anything waits on it: the entry is typed with lstat first and opened with O_NONBLOCK, so even
 * a pipe swapped in between cannot make open hang, and fstat on the handle has the last word.
 */
import { constants, promises as fsp, type Stats } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import type { FileIo } from './abort.js';
import { ToolFailure } from './results.js';
import type { SandboxTarget, SandboxScope } from './sandbox.js';
import { locate, recheck, type LocateOptions, type Located } from './sandbox-walk.js';

const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW, O_NONBLOCK } = constants;
/** Bytes per read or write between abort checks. */
export const CHUNK = 1024 * 1024;

/** How a message names an entry that is neither a regular file nor a folder. */
export function specialKind(st: Stats): string | undefined {
  if (st.isFile() || st.isDirectory() || st.isSymbolicLink()) return undefined;
  if (st.isFIFO()) return 'a named pipe (FIFO)';
  if (st.isSocket()) return 'a socket';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  return 'not a regular file';
}

export function refuseSpecial(st: Stats, display: string): void {
  const kind = specialKind(st);
  if (kind) {
    throw new ToolFailure(`Refused: ${display} is ${kind}, not a regular file or folder; the file tools only work on regular files and folders.`, {
      refused: true,
      reason: 'special-file',
      path: display,
    });
  }
}

function changed(display: string): ToolFailure {
  return new ToolFailure(`${display} changed while it was being opened (it was replaced by a symbolic link); nothing was done. Try again.`, { path: display });
}

const codeOf = (err: unknown) => (err as NodeJS.ErrnoException | undefined)?.code;

/** An entry located by the walker: its held parent folder, its name, its type when located. */
export class SandboxEntry {
  private constructor(
    readonly loc: Located,
    readonly p: SandboxTarget,
    private readonly io: FileIo,
  ) {}

  /** Locate `p`, run `fn` on it, and release the held folder once `fn` is done. */
  static async use<T>(p: SandboxTarget, scope: SandboxScope, io: FileIo, o: LocateOptions, fn: (entry: SandboxEntry) => Promise<T>): Promise<T> {
    const loc = await locate(p, scope, io, o);
    try {
      return await fn(new SandboxEntry(loc, p, io));
    } finally {
      await loc.dir.close();
    }
  }

  get stat(): Stats | undefined {
    return this.loc.stat;
  }

  /** A path naming the entry through its held folder. */
  get at(): string {
    return this.loc.dir.at(this.loc.name);
  }

  /**
   * Open the entry for reading: a regular file, checked on the opened handle. The caller closes
   * the handle. A folder is refused with `folderMessage`; a missing entry throws ENOENT.
   */
  async openRead(folderMessage: string): Promise<{ fh: FileHandle; stat: Stats }> {
    const { stat } = this.loc;
    if (!stat) throw Object.assign(new Error(`ENOENT: ${this.p.display}`), { code: 'ENOENT' });
    if (stat.isDirectory()) throw new ToolFailure(folderMessage);
    refuseSpecial(stat, this.p.display);
    this.io.check();
    const fh = await fsp.open(this.at, O_RDONLY | O_NOFOLLOW | O_NONBLOCK).catch((err: unknown) => {
      if (codeOf(err) === 'ELOOP') throw changed(this.p.display);
      throw err;
    });
    try {
      const st = await fh.stat();
      if (st.isDirectory()) throw new ToolFailure(folderMessage);
      refuseSpecial(st, this.p.display);
      await recheck(this.loc.dir, this.loc.name, this.loc.root, this.p.input);
      return { fh, stat: st };
    } catch (err) {
      await fh.close().catch(() => {});
      throw err;
    }
  }

  /**
   * Replace the entry's content: a temp file created (O_EXCL, O_NOFOLLOW) in the held folder,
   * written in chunks with abort checks, then renamed over the name in that same folder. The
   * old file stays whole until the rename; an abort or failure removes the temp file.
   * `mode` keeps the permissions of the file replaced.
   */
  async replace(data: Buffer, mode?: number): Promise<void> {
    const { dir, name } = this.loc;
    // A rename would replace a read-only file too; the in-place write it stands for could not.
    if (this.loc.stat?.isFile()) await fsp.access(this.at, constants.W_OK);
    let tmp = '';
    let fh: FileHandle | undefined;
    for (let attempt = 0; !fh; attempt++) {
      this.io.check();
      tmp = `.${shortName(name)}.${randomBytes(6).toString('hex')}.tmp`;
      try {
        fh = await fsp.open(dir.at(tmp), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o666);
      } catch (err) {
        const code = codeOf(err);
        if (code === 'EEXIST' && attempt < 5) continue;
        // A folder we may not create in, holding a file we may write: write that file in place.
        if ((code === 'EACCES' || code === 'EPERM') && this.loc.stat?.isFile()) return this.overwrite(data);
        throw err;
      }
    }
    let renamed = false;
    try {
      await recheck(dir, tmp, this.loc.root, this.p.input);
      if (mode !== undefined) await fh.chmod(mode & 0o7777);
      await writeAll(fh, data, this.io);
      await fh.close();
      fh = undefined;
      this.io.check();
      await fsp.rename(dir.at(tmp), dir.at(name));
      renamed = true;
    } finally {
      await fh?.close().catch(() => {});
      if (!renamed) await fsp.unlink(dir.at(tmp)).catch(() => {});
    }
  }

  /** In-place write through a handle opened without following links and checked with fstat. */
  private async overwrite(data: Buffer): Promise<void> {
    const fh = await fsp.open(this.at, O_WRONLY | O_NOFOLLOW | O_NONBLOCK).catch((err: unknown) => {
      if (codeOf(err) === 'ELOOP') throw changed(this.p.display);
      throw err;
    });
    try {
      const st = await fh.stat();
      if (st.isDirectory()) throw Object.assign(new Error('EISDIR'), { code: 'EISDIR' });
      refuseSpecial(st, this.p.display);
      await recheck(this.loc.dir, this.loc.name, this.loc.root, this.p.input);
      this.io.check();
      await fh.truncate(0);
      await writeAll(fh, data, this.io);
    } finally {
      await fh.close().catch(() => {});
    }
  }
}

/** At most 100 bytes of `name`, whole characters only: the temp name must stay under NAME_MAX. */
function shortName(name: string): string {
  let out = '';
  for (const ch of name) {
    if (Buffer.byteLength(out + ch) > 100) break;
    out += ch;
  }
  return out;
}

async function writeAll(fh: FileHandle, data: Buffer, io: FileIo): Promise<void> {
  let off = 0;
  while (off < data.length) {
    io.check();
    const { bytesWritten } = await fh.write(data, off, Math.min(CHUNK, data.length - off), off);
    off += bytesWritten;
  }
}

/**
 * Read a handle from the start in chunks, checking abort between them. Stops after `limit`
 * bytes: the result is then longer than `limit` by one byte at most, so callers can tell.
 */
export async function readAll(fh: FileHandle, limit: number, io: FileIo, sizeHint = 0): Promise<Buffer> {
  const parts: Buffer[] = [];
  let total = 0;
  for (;;) {
    io.check();
    const want = Math.min(CHUNK, limit + 1 - total);
    if (want <= 0) break;
    const buf = Buffer.allocUnsafe(total === 0 && sizeHint > 0 ? Math.min(want, sizeHint + 1) : want);
    const { bytesRead } = await fh.read(buf, 0, buf.length, total);
    if (bytesRead === 0) break;
    parts.push(bytesRead === buf.length ? buf : buf.subarray(0, bytesRead));
    total += bytesRead;
    // A short read of a regular file is its end (no second, empty read of a fresh chunk).
    if (bytesRead < buf.length) break;
  }
  return Buffer.concat(parts, total);
}
