/**
 * Real processes, found through /proc: the tests of process escapes and host signals start
 * uniquely named `sleep`s and look for them by command line (killing leftovers by pid, never by name).
 */
import fs from 'node:fs';

/** A process's state letter and start time (clock ticks since boot), from /proc/<pid>/stat. */
export function statOf(pid: number): { state: string; start: number } | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { state: f[0]!, start: Number(f[19]) };
  } catch {
    return undefined;
  }
}

/** Live (non-zombie) pids whose command line is exactly `cmd`. */
export function running(cmd: string): number[] {
  const out: number[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (fs.readFileSync(`/proc/${name}/cmdline`, 'utf8').replace(/\0+$/, '').replace(/\0/g, ' ') !== cmd) continue;
    } catch {
      continue;
    }
    const s = statOf(Number(name));
    if (s && s.state !== 'Z' && s.state !== 'X') out.push(Number(name));
  }
  return out;
}

/** Command lines handed out by `sleeper()`, for the cleanup of what a failing test left running. */
export const sleepersUsed: string[] = [];

/** A `sleep` command line no other process has: the process's name in the checks. */
export function sleeper(): string {
  const cmd = `sleep ${1000 + Math.floor(Math.random() * 9000)}.${String(process.pid).slice(-3)}${String(sleepersUsed.length).padStart(3, '0')}`;
  sleepersUsed.push(cmd);
  return cmd;
}

/** Kill (by pid) every process still running one of the handed-out sleeps. */
export function killSleepers(): void {
  for (const cmd of sleepersUsed.splice(0)) for (const pid of running(cmd)) process.kill(pid, 'SIGKILL');
}

export async function until(check: () => boolean, ms = 10_000, what = 'condition'): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`${what} not met in time`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
