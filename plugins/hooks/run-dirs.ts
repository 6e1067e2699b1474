/**
 * The workdir of each run, learned from the taps that are given it. Lifecycle events carry no
 * workdir (plugin-api.d.ts `EventBase`), and `agent_start` is emitted before any tap that knows
 * it runs, so an observing hook's delivery waits for it: `saveUserMessage` (which follows
 * `agent_start` at once), the `messages` request tap, `beforeToolCall` and, for a run that
 * failed before any of them, `turnEnd`. A run nothing told us about within the wait (it
 * cannot happen with the kernel as it is) falls back to the host's folder.
 */
const KEEP = 512;

export class RunDirs {
  private readonly known = new Map<string, string>();
  private readonly waiting = new Map<string, Array<(dir: string) => void>>();

  constructor(private readonly waitMs = 10_000) {}

  learn(runId: string, workdir: string): void {
    if (this.known.has(runId)) return;
    this.known.set(runId, workdir);
    if (this.known.size > KEEP) this.known.delete(this.known.keys().next().value!);
    const waiters = this.waiting.get(runId);
    if (waiters) {
      this.waiting.delete(runId);
      for (const w of waiters) w(workdir);
    }
  }

  get(runId: string): string | Promise<string> {
    const dir = this.known.get(runId);
    if (dir !== undefined) return dir;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        const list = this.waiting.get(runId);
        const i = list?.indexOf(done) ?? -1;
        if (list && i >= 0) list.splice(i, 1);
        if (list && !list.length) this.waiting.delete(runId);
        resolve(process.cwd());
      }, this.waitMs);
      const done = (d: string) => {
        clearTimeout(timer);
        resolve(d);
      };
      const list = this.waiting.get(runId) ?? [];
      list.push(done);
      this.waiting.set(runId, list);
    });
  }
}
