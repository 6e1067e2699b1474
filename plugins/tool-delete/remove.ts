/**
 * Listing and removing a folder through held directory handles. A recursive delete by name
 * (`rm -r`) re-resolves every path, so a subfolder swapped for a link while it runs makes it
 * list and unlink whatever the link points to. Here each subfolder is opened without following
 * links relative to its held parent, listed through its own handle, and its entries unlinked
 * through that handle; an entry that turns out to be a link is unlinked itself, never entered.
 */
import { promises as fsp } from 'node:fs';
import type { FileIo } from '../../lib/tool-shared/abort.js';
import { openChild, type HeldDir } from '../../lib/tool-shared/sandbox-walk.js';

const LIST_LIMIT = 30;

export interface Inventory {
  files: number;
  folders: number;
  links: number;
  bytes: number;
  listed: string[];
}

const codeOf = (err: unknown) => (err as NodeJS.ErrnoException | undefined)?.code;

/** Run `fn` on the subfolder `name` of `dir`, held open; a link there goes to `onLink` instead. */
async function withChild<T>(dir: HeldDir, name: string, io: FileIo, fn: (sub: HeldDir) => Promise<T>, onLink: () => Promise<T>): Promise<T> {
  const step = await openChild(dir, name, io);
  if ('link' in step) return onLink();
  try {
    return await fn(step.dir);
  } finally {
    await step.dir.close();
  }
}

/** What a held folder holds (links not followed), listing the first entries. */
export async function inventory(dir: HeldDir, shownAs: string, io: FileIo, inv: Inventory = { files: 0, folders: 0, links: 0, bytes: 0, listed: [] }): Promise<Inventory> {
  io.check();
  for (const name of await fsp.readdir(dir.self())) {
    const shown = `${shownAs}/${name}`;
    const st = await fsp.lstat(dir.at(name)).catch(() => undefined);
    if (!st) continue; // gone meanwhile
    if (st.isDirectory()) {
      inv.folders++;
      if (inv.listed.length < LIST_LIMIT) inv.listed.push(`${shown}/`);
      await withChild(
        dir,
        name,
        io,
        (sub) => inventory(sub, shown, io, inv),
        async () => inv,
      ).catch((err: unknown) => {
        if (codeOf(err) !== 'ENOENT') throw err;
        return inv;
      });
    } else {
      if (st.isSymbolicLink()) inv.links++;
      else inv.files++;
      if (inv.listed.length < LIST_LIMIT) inv.listed.push(shown);
      if (st.isFile()) inv.bytes += st.size;
    }
  }
  return inv;
}

/** Remove everything inside a held folder, then nothing else: the caller removes the folder. */
export async function emptyDir(dir: HeldDir, io: FileIo): Promise<void> {
  for (const name of await fsp.readdir(dir.self())) {
    io.check();
    await removeEntry(dir, name, io);
  }
}

/** Remove `name` inside a held folder: a link or file is unlinked, a folder emptied through its own handle and removed. */
export async function removeEntry(dir: HeldDir, name: string, io: FileIo): Promise<void> {
  const st = await fsp.lstat(dir.at(name)).catch((err: unknown) => {
    if (codeOf(err) === 'ENOENT') return undefined;
    throw err;
  });
  if (!st) return;
  if (!st.isDirectory()) {
    try {
      await fsp.unlink(dir.at(name));
      return;
    } catch (err) {
      // Became a folder since the lstat: fall through and remove it as one.
      if (codeOf(err) !== 'EISDIR' && codeOf(err) !== 'EPERM') throw err;
    }
  }
  await withChild(
    dir,
    name,
    io,
    (sub) => emptyDir(sub, io),
    async () => {
      await fsp.unlink(dir.at(name));
    },
  );
  await fsp.rmdir(dir.at(name)).catch((err: unknown) => {
    // ENOTDIR: a link took its place after it was emptied; the link itself is removed.
    if (codeOf(err) === 'ENOTDIR') return fsp.unlink(dir.at(name));
    if (codeOf(err) !== 'ENOENT') throw err;
  });
}
