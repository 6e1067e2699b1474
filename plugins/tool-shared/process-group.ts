/**
 * Shell commands in their own process group, and a stop that leaves nothing behind. The shell
 * is spawned detached so it leads a new group; stopping signals the whole group (SIGTERM, then
 * SIGKILL after a grace) so background jobs and processes that ignore SIGTERM die with it.
 *
 * "Alive" ignores zombies: an orphan killed with its group waits for init to reap it, and where
 * init does not reap (some containers) `kill(-pgid, 0)` would report the group alive forever.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';

export interface SpawnShellOptions {
  cwd: string;
  env?: NodeJS.ProcessEnv;
}

/** `bash -c <command>` leading its own process group, stdin closed, stdout and stderr piped. */
export function spawnShell(command: string, opts: SpawnShellOptions): ChildProcess {
  return spawn('bash', ['-c', command], {
    cwd: opts.cwd,
    env: opts.env ?? process.env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    /* already gone (ESRCH) */
  }
}

/** Live (non-zombie) members of a process group, from /proc. */
function liveMembersLinux(pgid: number): number {
  let count = 0;
  let entries: string[];
  try {
    entries = fs.readdirSync('/proc');
  } catch {
    return -1;
  }
  for (const name of entries) {
    const c = name.charCodeAt(0);
    if (c < 48 || c > 57) continue;
    let stat: string;
    try {
      stat = fs.readFileSync(`/proc/${name}/stat`, 'utf8');
    } catch {
      continue;
    }
    // Fields after the command name (which may hold spaces and parentheses): state ppid pgrp ...
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(fields[2]) === pgid && fields[0] !== 'Z' && fields[0] !== 'X') count++;
  }
  return count;
}

/** True while any process of the group is alive (zombies excluded). */
export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  if (process.platform === 'linux') {
    const n = liveMembersLinux(pgid);
    if (n >= 0) return n > 0;
  }
  return true;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

async function waitDead(pgid: number, ms: number, pollMs: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (!groupAlive(pgid)) return true;
    if (Date.now() >= deadline) return false;
    await sleep(Math.min(pollMs, Math.max(1, deadline - Date.now())));
  }
}

/**
 * Stop a process group: SIGTERM, wait up to `graceMs` for it to die, then SIGKILL and wait for
 * the kill to land. Resolves when the group is dead (or, in the worst case, a second after the
 * SIGKILL was sent). Returns how it ended.
 */
export async function killGroup(pgid: number, graceMs: number, pollMs = 20): Promise<'terminated' | 'killed'> {
  signalGroup(pgid, 'SIGTERM');
  if (await waitDead(pgid, graceMs, pollMs)) return 'terminated';
  signalGroup(pgid, 'SIGKILL');
  await waitDead(pgid, 1000, pollMs);
  return 'killed';
}

/** Kill a group at once, synchronously (for unload paths that cannot wait). */
export function killGroupNow(pgid: number): void {
  signalGroup(pgid, 'SIGKILL');
}
