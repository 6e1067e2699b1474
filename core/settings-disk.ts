/**
 * settings.json on disk, shared by every process on one home (`serve`, CLIs, a text editor):
 * how a change is merged into what the file holds now, written so a crash never leaves half a
 * file, and serialized across processes.
 *
 * A save is a patch, not a replacement: the difference between the settings the caller started
 * from and the ones it wants is applied to the file as it is on disk at that moment, so a key
 * added by hand (or by another process) since this host last read the file survives.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { SettingsPatchOp } from '../plugin-api.js';
import { ConfigError } from './errors.js';
import { applySettingsPatch } from './settings-patch.js';

export const applyPatch = applySettingsPatch;

// ── Merging ─────────────────────────────────────────────────────────────────────────────────

type Json = unknown;
const isPlainObject = (v: unknown): v is Record<string, Json> => typeof v === 'object' && v !== null && !Array.isArray(v);

export function jsonEqual(a: Json, b: Json): boolean {
  if (a === b) return true;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((v, i) => jsonEqual(v, b[i]));
  }
  if (!isPlainObject(a) || !isPlainObject(b)) return false;
  const ka = Object.keys(a).filter((k) => a[k] !== undefined);
  const kb = Object.keys(b).filter((k) => b[k] !== undefined);
  return ka.length === kb.length && ka.every((k) => Object.hasOwn(b, k) && jsonEqual(a[k], b[k]));
}

/**
 * One change: set `path` to `value`, or remove it (`value` undefined). `object` makes sure an
 * object is there, keeping one that is (a section the caller added, which someone else may have
 * added too). Public as SettingsPatchOp: a shared settings backend applies these too.
 */
export type PatchOp = SettingsPatchOp;

/**
 * What turns `from` into `to`, key by key inside objects (arrays and other values are replaced
 * whole). A key only in `from` is a removal; a key the caller never saw is not mentioned at all.
 * An object the caller added is added key by key too, so two processes adding keys to a
 * section that neither had both keep theirs.
 */
export function diffSettings(from: Json, to: Json, at: string[] = []): PatchOp[] {
  if (jsonEqual(from, to)) return [];
  if (!isPlainObject(from) || !isPlainObject(to)) {
    if (!isPlainObject(to) || from !== undefined) return [{ path: at, value: to }];
    return [{ path: at, object: true }, ...diffSettings({}, to, at)];
  }
  const ops: PatchOp[] = [];
  for (const [k, v] of Object.entries(to)) {
    if (v === undefined) continue;
    ops.push(...diffSettings(Object.hasOwn(from, k) ? from[k] : undefined, v, [...at, k]));
  }
  for (const k of Object.keys(from)) if (from[k] !== undefined && (!Object.hasOwn(to, k) || to[k] === undefined)) ops.push({ path: [...at, k] });
  return ops;
}

// ── Reading ─────────────────────────────────────────────────────────────────────────────────

/** What identifies one version of the file without reading it (an atomic replace changes the inode). */
export type Stamp = string;

export function stampOf(st: fs.Stats | undefined): Stamp {
  return st ? `${st.ino}:${st.size}:${st.mtimeMs}` : 'missing';
}

export function statStamp(file: string): Stamp {
  try {
    return stampOf(fs.statSync(file));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 'missing';
    throw err;
  }
}

export type DiskRead = { state: 'missing'; stamp: Stamp } | { state: 'ok'; json: unknown; text: string; stamp: Stamp } | { state: 'invalid'; problem: string; stamp: Stamp };

/** The file's JSON (an empty file reads as `{}`), or why it cannot be used. Never throws for a bad file. */
export function readDisk(file: string): DiskRead {
  let text: string;
  let stamp: Stamp;
  try {
    const fd = fs.openSync(file, 'r');
    try {
      // The stamp of the very file read (a rename between stat and read cannot mismatch them).
      stamp = stampOf(fs.fstatSync(fd));
      text = fs.readFileSync(fd, 'utf8');
    } finally {
      fs.closeSync(fd);
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { state: 'missing', stamp: 'missing' };
    return { state: 'invalid', problem: `cannot be read: ${(err as Error).message}`, stamp: 'unreadable' };
  }
  if (!text.trim()) return { state: 'ok', json: {}, text, stamp };
  try {
    return { state: 'ok', json: JSON.parse(text), text, stamp };
  } catch (err) {
    return { state: 'invalid', problem: `is not valid JSON: ${(err as Error).message}`, stamp };
  }
}

// ── Writing ─────────────────────────────────────────────────────────────────────────────────

/**
 * Replace `file` with `text` atomically: a temp file in the same folder (so the rename never
 * crosses file systems), flushed to disk, renamed over the file, then the folder flushed so the
 * rename itself survives a power loss. `beforeRename` runs once the new text is safely on disk,
 * right before it goes in place: false drops it (the caller merges again). Returns the stamp of
 * the new file, or undefined when dropped.
 */
export async function writeAtomic(file: string, text: string, beforeRename: () => boolean = () => true): Promise<Stamp | undefined> {
  const dir = path.dirname(file);
  await fs.promises.mkdir(dir, { recursive: true });
  const tmp = path.join(dir, `.${path.basename(file)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  let stamp: Stamp;
  try {
    const fh = await fs.promises.open(tmp, 'wx', 0o600);
    try {
      await fh.writeFile(text);
      await fh.sync();
      stamp = stampOf(await fh.stat());
    } finally {
      await fh.close();
    }
    if (!beforeRename()) {
      await fs.promises.rm(tmp, { force: true });
      return undefined;
    }
    await fs.promises.rename(tmp, file);
  } catch (err) {
    await fs.promises.rm(tmp, { force: true });
    throw err;
  }
  try {
    const d = await fs.promises.open(dir, 'r');
    try {
      await d.sync();
    } finally {
      await d.close();
    }
  } catch {
    /* some platforms (Windows) cannot open a folder: the rename is still atomic */
  }
  return stamp;
}

// ── The cross-process lock ──────────────────────────────────────────────────────────────────

export interface LockOptions {
  /** Give up waiting for another process after this long. */
  timeoutMs: number;
  /** A lock older than this is taken to be left by a process that died (when its pid cannot tell). */
  staleMs: number;
}

/** Tokens of the locks this process holds: another store in this process waits for them, never breaks them. */
const heldHere = new Set<string>();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Why the lock at `lockFile` is stale, or undefined while its holder may still be working. */
function staleReason(lockFile: string, text: string, staleMs: number): string | undefined {
  let ageMs = 0;
  try {
    ageMs = Date.now() - fs.statSync(lockFile).mtimeMs;
  } catch {
    return undefined; // gone already: the next attempt takes it
  }
  const [pidText, host] = text.split('\n');
  const pid = Number(pidText);
  if (Number.isInteger(pid) && pid > 0 && host === os.hostname()) {
    if (pid === process.pid) return heldHere.has(text) ? undefined : 'left by this process';
    if (!alive(pid)) return `process ${pid} is gone`;
    return ageMs > staleMs ? `held for ${Math.round(ageMs)} ms` : undefined;
  }
  // Another host, or a lock its holder had no time to write into: only its age can tell.
  return ageMs > staleMs ? `held for ${Math.round(ageMs)} ms` : undefined;
}

/**
 * Run `fn` holding `lockFile`, created with O_EXCL (only one process can create it). A lock
 * whose process is gone (or that is older than `staleMs`) is broken; breaking moves it aside
 * first and checks it was the one judged stale, so two waiters cannot both break a fresh lock.
 */
export async function withFileLock<T>(lockFile: string, options: LockOptions, what: string, fn: () => Promise<T>): Promise<T> {
  const token = `${process.pid}\n${os.hostname()}\n${Date.now()}\n${randomBytes(6).toString('hex')}`;
  // Known before the file exists: another waiter in this process must never take it for a leftover.
  heldHere.add(token);
  try {
    await acquire(lockFile, token, options, what);
    return await fn();
  } finally {
    heldHere.delete(token);
    // Remove it only if it is still ours (a holder judged stale may have been broken).
    try {
      if (fs.readFileSync(lockFile, 'utf8') === token) fs.unlinkSync(lockFile);
    } catch {
      /* already gone */
    }
  }
}

async function acquire(lockFile: string, token: string, options: LockOptions, what: string): Promise<void> {
  const deadline = Date.now() + options.timeoutMs;
  for (let attempt = 0; ; attempt++) {
    try {
      const fh = await fs.promises.open(lockFile, 'wx', 0o600);
      try {
        await fh.writeFile(token);
      } finally {
        await fh.close();
      }
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
        await fs.promises.mkdir(path.dirname(lockFile), { recursive: true });
        continue;
      }
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    let seen = '';
    try {
      seen = fs.readFileSync(lockFile, 'utf8');
    } catch {
      continue; // released in between
    }
    if (staleReason(lockFile, seen, options.staleMs)) {
      breakLock(lockFile, seen);
      continue;
    }
    if (Date.now() > deadline) {
      const pid = Number(seen.split('\n')[0]);
      throw new ConfigError(`cannot save ${what}: ${lockFile} is held by another process${pid > 0 ? ` (pid ${pid})` : ''} for over ${options.timeoutMs} ms; try again`);
    }
    await sleep(Math.min(50, 5 + attempt * 2) + Math.random() * 10);
  }
}

function breakLock(lockFile: string, seen: string): void {
  const aside = `${lockFile}.${process.pid}.${randomBytes(4).toString('hex')}.stale`;
  try {
    fs.renameSync(lockFile, aside);
  } catch {
    return; // someone else broke or released it
  }
  try {
    // Another waiter broke the stale lock first and a fresh one took its place: put that back.
    if (fs.readFileSync(aside, 'utf8') !== seen && !fs.existsSync(lockFile)) fs.renameSync(aside, lockFile);
  } catch {
    /* best effort */
  } finally {
    fs.rmSync(aside, { force: true });
  }
}
