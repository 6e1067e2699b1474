/**
 * The long-running processes ManagedProcess started, process-wide. Each runs `bash -c` in its
 * own process group with its output kept in a bounded log; stopping signals the whole group.
 * Entries outlive runs and conversations until stopped, and everything is stopped at shutdown.
 */
import type { ChildProcess } from 'node:child_process';
import type { Socket } from 'node:net';
import { TailBuffer } from '../tool-shared/output-buffer.js';
import { groupAlive, killGroup, killGroupNow, spawnShell } from '../tool-shared/process-group.js';

export type ProcessStatus = 'running' | 'exited' | 'stopped';

export interface ManagedProcessInfo {
  id: string;
  name: string;
  command: string;
  cwd: string;
  pid: number;
  status: ProcessStatus;
  exitCode: number | null;
  signal: string | null;
  startedAt: number;
  endedAt: number | null;
  conversationId: string;
}

interface Entry extends ManagedProcessInfo {
  child: ChildProcess;
  log: TailBuffer;
  exited: Promise<void>;
}

export interface StartOptions {
  cwd: string;
  name?: string;
  conversationId: string;
  logLimitBytes: number;
  keepExited: number;
}

const delay = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export class ProcessManager {
  private entries = new Map<string, Entry>();
  private seq = 0;

  /** Start a command; resolves once it is spawned (rejects when it cannot be). */
  async start(command: string, o: StartOptions): Promise<ManagedProcessInfo> {
    const child = spawnShell(command, { cwd: o.cwd });
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', reject);
    });
    const id = `p${++this.seq}`;
    const log = new TailBuffer(o.logLimitBytes);
    const entry: Entry = {
      id,
      name: o.name ?? command.slice(0, 40),
      command,
      cwd: o.cwd,
      pid: child.pid!,
      status: 'running',
      exitCode: null,
      signal: null,
      startedAt: Date.now(),
      endedAt: null,
      conversationId: o.conversationId,
      child,
      log,
      exited: new Promise<void>((resolve) => {
        child.once('exit', (code, signal) => {
          if (entry.status === 'running') entry.status = 'exited';
          entry.exitCode = code;
          entry.signal = signal;
          entry.endedAt = Date.now();
          resolve();
        });
      }),
    };
    const onData = (chunk: Buffer) => log.push(chunk);
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    // The host must be able to exit while these run; shutdown stops them.
    child.unref();
    (child.stdout as Socket | null)?.unref?.();
    (child.stderr as Socket | null)?.unref?.();
    this.entries.set(id, entry);
    this.prune(o.keepExited);
    return this.info(entry);
  }

  /** Wait up to `ms` for the process to exit; true when it did. */
  async settle(id: string, ms: number): Promise<boolean> {
    const e = this.entries.get(id);
    if (!e) return true;
    await Promise.race([e.exited, delay(ms)]);
    return e.status !== 'running';
  }

  list(): ManagedProcessInfo[] {
    return [...this.entries.values()].map((e) => this.info(e));
  }

  running(): number {
    return [...this.entries.values()].filter((e) => e.status === 'running').length;
  }

  /** By id, else by name (a running one first, then the newest). */
  find(idOrName: string): ManagedProcessInfo | undefined {
    const byId = this.entries.get(idOrName);
    if (byId) return this.info(byId);
    const named = [...this.entries.values()].filter((e) => e.name === idOrName).reverse();
    const e = named.find((x) => x.status === 'running') ?? named[0];
    return e && this.info(e);
  }

  /** The last `lines` lines of the log, and how many bytes fell out of it. */
  tail(id: string, lines: number): { text: string; droppedBytes: number; totalBytes: number } {
    const e = this.entries.get(id)!;
    const all = e.log.text().split('\n');
    if (all.at(-1) === '') all.pop();
    return { text: all.slice(-lines).join('\n'), droppedBytes: e.log.dropped, totalBytes: e.log.total };
  }

  /** Stop the process group (SIGTERM, then SIGKILL after the grace) and wait for the exit. */
  async stop(id: string, graceMs: number): Promise<{ how: 'terminated' | 'killed' | 'already-exited'; info: ManagedProcessInfo }> {
    const e = this.entries.get(id)!;
    const wasRunning = e.status === 'running';
    if (wasRunning) e.status = 'stopped';
    let how: 'terminated' | 'killed' | 'already-exited' = 'already-exited';
    // Even after the shell exited, what it left in its group is stopped too.
    if (wasRunning || groupAlive(e.pid)) how = await killGroup(e.pid, graceMs);
    if (!wasRunning && how !== 'already-exited') how = 'already-exited';
    await Promise.race([e.exited, delay(1000)]);
    return { how, info: this.info(e) };
  }

  /** Stop everything (shutdown). */
  async stopAll(graceMs: number): Promise<void> {
    await Promise.all([...this.entries.keys()].map((id) => this.stop(id, graceMs).catch(() => undefined)));
  }

  /** Kill everything at once (unload, process exit): no waiting possible there. */
  killAllNow(): void {
    for (const e of this.entries.values()) {
      const running = e.status === 'running';
      if (running) e.status = 'stopped';
      // An exited shell's group id may only be signalled while members remain (else it could be reused).
      if (running || groupAlive(e.pid)) killGroupNow(e.pid);
    }
  }

  private prune(keepExited: number): void {
    const ended = [...this.entries.values()].filter((e) => e.status !== 'running');
    for (const e of ended.slice(0, Math.max(0, ended.length - keepExited))) {
      if (!groupAlive(e.pid)) this.entries.delete(e.id);
    }
  }

  private info(e: Entry): ManagedProcessInfo {
    const { child: _c, log: _l, exited: _x, ...info } = e;
    return { ...info };
  }
}
