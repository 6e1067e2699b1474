/** Watching a stdio server's process by pid, without ever signalling a pid that may be reused. */

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export function terminate(pid: number): void {
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    /* already gone */
  }
}

/** The SDK's close escalates to SIGKILL itself; wait (never signal: the pid may be reused) until the pid is gone. */
export async function waitForExit(pid: number, ms: number): Promise<void> {
  const until = Date.now() + ms;
  while (isAlive(pid) && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
}
