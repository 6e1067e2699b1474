/**
 * Shell commands in their own process group, and a stop that leaves nothing behind. The shell
 * is spawned detached so it leads a new group, and tagged (process-scan.ts) so the processes
 * that leave the group (setsid, double forks, daemons) are still found. Stopping a tree signals
 * the group and every tagged process: SIGTERM, then SIGKILL after a grace. A process that
 * ignores SIGTERM gets SIGKILL at once: a grace cannot help it, and an abort must be quick.
 *
 * "Alive" ignores zombies: an orphan killed with its group waits for init to reap it, and where
 * init does not reap (some containers) `kill(-pgid, 0)` would report the group alive forever.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { commandOf, findTagged, ignoresTerm, isSameProcess, procStat, sleepSync, taggedEnv, tagsOf, type TaggedProcess } from './process-scan.js';

export interface SpawnShellOptions {
  cwd: string;
  env?: NodeJS.ProcessEnv;
  /** Tag the shell's environment (see process-scan.ts), so its whole tree can be found later. */
  tag?: string;
}

/** `bash -c <command>` leading its own process group, stdin closed, stdout and stderr piped. */
export function spawnShell(command: string, opts: SpawnShellOptions): ChildProcess {
  const env = opts.env ?? process.env;
  return spawn('bash', ['-c', command], {
    cwd: opts.cwd,
    env: opts.tag ? taggedEnv(opts.tag, env) : env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** What a command started: its process group and its tag. */
export interface ProcessTree {
  /** The shell's pid, which is also the process group id. */
  pgid: number;
  tag: string;
  /** The shell's start time (/proc stat field 22), when known: guards against a reused group id. */
  start?: number;
}

export interface Survivor {
  pid: number;
  command: string;
}

export interface TreeStop {
  /** none: nothing was running; terminated: all ended on SIGTERM; killed: SIGKILL was needed. */
  how: 'none' | 'terminated' | 'killed';
  /** Processes still alive after the SIGKILL (root-owned, stuck in the kernel, ...): never claimed stopped. */
  survivors: Survivor[];
  /** Processes found outside the process group (setsid and the like). */
  escaped: number;
}

function signal(target: number, sig: NodeJS.Signals): void {
  try {
    process.kill(target, sig);
  } catch {
    /* already gone (ESRCH) */
  }
}
const signalGroup = (pgid: number, sig: NodeJS.Signals) => signal(-pgid, sig);

/** Live (non-zombie) members of a process group, from /proc. */
function liveMembersLinux(pgid: number): number[] | undefined {
  let entries: string[];
  try {
    entries = fs.readdirSync('/proc');
  } catch {
    return undefined;
  }
  const out: number[] = [];
  for (const name of entries) {
    const c = name.charCodeAt(0);
    if (c < 48 || c > 57) continue;
    const s = procStat(Number(name));
    if (s && s.pgrp === pgid && s.state !== 'Z' && s.state !== 'X') out.push(Number(name));
  }
  return out;
}

/** True while any process of the group is alive (zombies excluded). */
export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  if (process.platform === 'linux') {
    const members = liveMembersLinux(pgid);
    if (members) return members.length > 0;
  }
  return true;
}

/**
 * The group is still the tree's. A group id stays allocated while any member lives, so it can
 * only be reused once the group is gone: then a new process leads it with a different start time.
 */
function ownGroupAlive(t: ProcessTree): boolean {
  if (!groupAlive(t.pgid)) return false;
  if (t.start === undefined) return true;
  const leader = procStat(t.pgid);
  return !leader || leader.start === t.start;
}

/** True while the group or any tagged process of the tree is alive. */
export function treeAlive(t: ProcessTree): boolean {
  return ownGroupAlive(t) || findTagged(t.tag).length > 0;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function survivorsOf(t: ProcessTree, procs: TaggedProcess[], group: boolean): Survivor[] {
  const pids = new Set(procs.map((p) => p.pid));
  if (group) for (const pid of liveMembersLinux(t.pgid) ?? [t.pgid]) pids.add(pid);
  return [...pids].map((pid) => ({ pid, command: commandOf(pid) }));
}

export interface StopOptions {
  pollMs?: number;
  /** How long to wait for SIGKILL to land before naming survivors (default 1000). */
  killWaitMs?: number;
  /** Processes never to signal, even when tagged (this host and its ancestors, when reaping). */
  exclude?: ReadonlySet<number>;
  /**
   * Signal the group only while its leader is the recorded shell (pid, start time) and carries
   * the tag. For trees read from a dead host's record, where nothing else vouches for the group.
   */
  groupNeedsTaggedLeader?: boolean;
}

/**
 * Stop a whole tree: SIGTERM to the group and every tagged process, SIGKILL at once to those
 * that ignore SIGTERM, SIGKILL to the rest after `graceMs`, re-scanning all along (a dying
 * process may fork). Resolves when nothing is left, or `killWaitMs` after the SIGKILL with the
 * survivors named.
 */
export async function stopTree(t: ProcessTree, graceMs: number, o: StopOptions = {}): Promise<TreeStop> {
  const pollMs = o.pollMs ?? 20;
  const exclude = o.exclude ?? new Set<number>();
  // Never signal a group that holds an excluded process (a host started from the tree's shell).
  const groupOk = ![...exclude].some((pid) => procStat(pid)?.pgrp === t.pgid);
  const leaderOk = () => !o.groupNeedsTaggedLeader || (t.start !== undefined && isSameProcess(t.pgid, t.start) && tagsOf(t.pgid).includes(t.tag));
  const scanGroup = () => groupOk && ownGroupAlive(t) && leaderOk();
  let procs = findTagged(t.tag, exclude);
  let group = scanGroup();
  const escaped = procs.filter((p) => p.pgrp !== t.pgid).length;
  if (!group && procs.length === 0) return { how: 'none', survivors: [], escaped };
  let killed = false;
  const termed = new Set<number>();
  if (group) {
    signalGroup(t.pgid, 'SIGTERM');
    // Members got it through the group; a second SIGTERM reads as "force quit" to some programs.
    for (const p of procs) if (p.pgrp === t.pgid) termed.add(p.pid);
  }
  const deadline = Date.now() + graceMs;
  for (;;) {
    for (const p of procs) {
      if (!termed.has(p.pid)) signal(p.pid, 'SIGTERM');
      termed.add(p.pid);
      if (ignoresTerm(p.pid)) {
        signal(p.pid, 'SIGKILL');
        killed = true;
      }
    }
    const left = deadline - Date.now();
    if (left <= 0) break;
    await sleep(Math.min(pollMs, left));
    procs = findTagged(t.tag, exclude);
    group = scanGroup();
    if (!group && procs.length === 0) return { how: killed ? 'killed' : 'terminated', survivors: [], escaped };
  }
  const killEnd = Date.now() + (o.killWaitMs ?? 1000);
  for (;;) {
    if (group) signalGroup(t.pgid, 'SIGKILL');
    for (const p of procs) signal(p.pid, 'SIGKILL');
    await sleep(Math.max(1, pollMs / 2));
    procs = findTagged(t.tag, exclude);
    group = scanGroup();
    if (!group && procs.length === 0) return { how: 'killed', survivors: [], escaped };
    if (Date.now() >= killEnd) return { how: 'killed', survivors: survivorsOf(t, procs, group), escaped };
  }
}

/**
 * SIGKILL trees at once, synchronously (process exit, unload: no event loop to wait on), with a
 * short synchronous wait for the kills to land. Returns the tags of the trees still alive.
 */
export function killTreesNow(trees: ProcessTree[], waitMs = 200): Set<string> {
  const end = Date.now() + waitMs;
  for (let round = 0; ; round++) {
    const procs = findTagged(new Set(trees.map((t) => t.tag)));
    const alive = new Set<string>();
    const groups: ProcessTree[] = [];
    for (const t of trees) {
      const group = ownGroupAlive(t);
      if (group) groups.push(t);
      if (group || procs.some((p) => p.tag === t.tag)) alive.add(t.tag);
    }
    if (alive.size === 0 || Date.now() >= end) return alive;
    for (const t of groups) signalGroup(t.pgid, 'SIGKILL');
    for (const p of procs) signal(p.pid, 'SIGKILL');
    sleepSync(round === 0 ? 5 : 20);
  }
}

/**
 * Stop a process group only: SIGTERM, wait up to `graceMs`, then SIGKILL. Kept for callers
 * without a tag; {@link stopTree} also reaches what left the group.
 */
export async function killGroup(pgid: number, graceMs: number, pollMs = 20): Promise<'terminated' | 'killed'> {
  signalGroup(pgid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (groupAlive(pgid)) {
    if (Date.now() >= deadline) {
      signalGroup(pgid, 'SIGKILL');
      const end = Date.now() + 1000;
      while (groupAlive(pgid) && Date.now() < end) await sleep(pollMs);
      return 'killed';
    }
    await sleep(Math.min(pollMs, Math.max(1, deadline - Date.now())));
  }
  return 'terminated';
}

/** Kill a group at once, synchronously (for unload paths that cannot wait). */
export function killGroupNow(pgid: number): void {
  signalGroup(pgid, 'SIGKILL');
}
