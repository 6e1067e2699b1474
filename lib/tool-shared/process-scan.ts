/**
 * Finding every process a command started, including the ones that left its process group.
 *
 * A process group is not a container: `setsid`, a double fork or a daemonizing server leaves it,
 * and a group kill then misses them. What every descendant does keep is its environment, so each
 * shell we spawn carries a random tag in `LIVEAGENT_PROC_TAG` and a scan of /proc/<pid>/environ
 * finds the whole tree, wherever it moved. Nested hosts append their tag (`outer:inner`), so an
 * outer host's cleanup still reaches what an inner one started.
 *
 * Accepted residual risk: a process that clears or rewrites its environment (`env -i`, execve
 * with a fresh env) AND leaves the group cannot be found. Without /proc (not Linux) the scan finds
 * nothing and only the group is stopped.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';

export const TAG_ENV = 'LIVEAGENT_PROC_TAG';
const TAG_KEY = Buffer.from(`\0${TAG_ENV}=`);

export interface TaggedProcess {
  pid: number;
  /** Start time in clock ticks after boot (/proc/<pid>/stat field 22): with the pid, it names one process. */
  start: number;
  pgrp: number;
  tag: string;
}

export interface ProcStat {
  state: string;
  ppid: number;
  pgrp: number;
  start: number;
}

export function newTag(): string {
  return randomBytes(12).toString('hex');
}

/** The environment for a tagged shell: `base` with `tag` appended to any tag it already carries. */
export function taggedEnv(tag: string, base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const outer = base[TAG_ENV];
  return { ...base, [TAG_ENV]: outer ? `${outer}:${tag}` : tag };
}

export function procStat(pid: number): ProcStat | undefined {
  let stat: string;
  try {
    stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // After the command name (which may hold spaces and parentheses): state ppid pgrp ... field 22 = starttime.
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { state: f[0]!, ppid: Number(f[1]), pgrp: Number(f[2]), start: Number(f[19]) };
}

const dead = (s: ProcStat | undefined) => !s || s.state === 'Z' || s.state === 'X';

/** True while `pid` is the process that started at `start` and is not a zombie. */
export function isSameProcess(pid: number, start: number): boolean {
  const s = procStat(pid);
  return !dead(s) && s!.start === start;
}

/** The tags in a process's environment (empty when unreadable, a zombie, or untagged). */
export function tagsOf(pid: number): string[] {
  let env: Buffer;
  try {
    env = fs.readFileSync(`/proc/${pid}/environ`);
  } catch {
    return [];
  }
  return tagsIn(env);
}

function tagsIn(env: Buffer): string[] {
  // Variables are NUL-separated; the first one has no NUL before it.
  const name = TAG_KEY.subarray(1);
  let from: number;
  if (env.subarray(0, name.length).equals(name)) from = name.length;
  else {
    const at = env.indexOf(TAG_KEY);
    if (at < 0) return [];
    from = at + TAG_KEY.length;
  }
  const end = env.indexOf(0, from);
  return env.toString('utf8', from, end < 0 ? env.length : end).split(':').filter(Boolean);
}

function pids(): number[] {
  let names: string[];
  try {
    names = fs.readdirSync('/proc');
  } catch {
    return [];
  }
  const out: number[] = [];
  for (const n of names) {
    const c = n.charCodeAt(0);
    if (c >= 48 && c <= 57) out.push(Number(n));
  }
  return out;
}

/**
 * Live processes whose environment carries one of `tags` (this process never counts). One walk
 * of /proc reading each environ: a few milliseconds for a few hundred processes.
 */
export function findTagged(tags: string | ReadonlySet<string>, exclude: ReadonlySet<number> = new Set()): TaggedProcess[] {
  const want = typeof tags === 'string' ? new Set([tags]) : tags;
  if (want.size === 0) return [];
  const found: TaggedProcess[] = [];
  for (const pid of pids()) {
    if (pid === process.pid || exclude.has(pid)) continue;
    const tag = tagsOf(pid).find((t) => want.has(t));
    if (!tag) continue;
    const s = procStat(pid);
    if (dead(s)) continue;
    found.push({ pid, start: s!.start, pgrp: s!.pgrp, tag });
  }
  return found;
}

/** True when the process ignores SIGTERM (SigIgn bit 15): waiting a grace for it cannot help. */
export function ignoresTerm(pid: number): boolean {
  try {
    const m = /^SigIgn:\s*([0-9a-f]+)$/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return !!m && (BigInt(`0x${m[1]}`) & (1n << 14n)) !== 0n;
  } catch {
    return false;
  }
}

/** The command line of a process, for reports (empty when gone). */
export function commandOf(pid: number): string {
  try {
    const s = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0+$/, '').replace(/\0/g, ' ');
    return s.length > 120 ? `${s.slice(0, 117)}...` : s;
  } catch {
    return '';
  }
}

/** This process and its ancestors: a host started from a tagged shell must never reap itself. */
export function selfAndAncestors(): Set<number> {
  const out = new Set<number>();
  for (let pid = process.pid; pid > 1 && !out.has(pid); ) {
    out.add(pid);
    const s = procStat(pid);
    if (!s) break;
    pid = s.ppid;
  }
  return out;
}

const sleeper = new Int32Array(new SharedArrayBuffer(4));
/** A synchronous sleep, for exit paths that cannot wait on the event loop. */
export function sleepSync(ms: number): void {
  Atomics.wait(sleeper, 0, 0, ms);
}
