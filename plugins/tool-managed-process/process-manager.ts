/**
 * The long-running processes ManagedProcess started, process-wide. Each runs `bash -c` in its
 * own process group, tagged so that what leaves the group (setsid, daemons) is found too, with
 * its output kept in a bounded log; stopping signals the whole tree. Entries outlive runs and
 * conversations until stopped, and everything is stopped at shutdown. The host's process
 * record (process-records.ts) lists each tree until it is confirmed dead.
 */
import type { ChildProcess } from 'node:child_process';
import type { Socket } from 'node:net';
import { TailBuffer } from '../../lib/tool-shared/output-buffer.js';
import { killTreesNow, spawnShell, stopTree, treeAlive, type ProcessTree, type Survivor } from '../../lib/tool-shared/process-group.js';
import type { HostProcesses } from '../../lib/tool-shared/process-records.js';
import { newTag, procStat } from '../../lib/tool-shared/process-scan.js';

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
  tree: ProcessTree;
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

export type StopHow = 'terminated' | 'killed' | 'already-exited';

export interface StopOutcome {
  how: StopHow;
  info: ManagedProcessInfo;
  /** Processes still alive after SIGKILL: the stop did not fully happen. */
  survivors: Survivor[];
  /** Processes of the tree that had left its process group. */
  escaped: number;
}

export class ProcessManager {
  private entries = new Map<string, Entry>();
  private seq = 0;

  /** `records`: the host's record of running trees (the plugin passes it). */
  constructor(private readonly records?: HostProcesses) {}

  /** Start a command; resolves once it is spawned (rejects when it cannot be). */
  async start(command: string, o: StartOptions): Promise<ManagedProcessInfo> {
    const tag = newTag();
    const child = spawnShell(command, { cwd: o.cwd, tag });
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', reject);
    });
    const start = procStat(child.pid!)?.start;
    const tree: ProcessTree = { pgid: child.pid!, tag, ...(start !== undefined ? { start } : {}) };
    this.records?.add(tree);
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
      tree,
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

  /**
   * Stop the tree (SIGTERM, then SIGKILL after the grace; at once for what ignores SIGTERM) and
   * wait for the exit. Even after the shell exited, what it left behind is stopped too.
   */
  async stop(id: string, graceMs: number): Promise<StopOutcome> {
    const e = this.entries.get(id)!;
    const wasRunning = e.status === 'running';
    if (wasRunning) e.status = 'stopped';
    const r = await stopTree(e.tree, graceMs);
    if (r.survivors.length === 0) this.records?.remove(e.tree.tag);
    await Promise.race([e.exited, delay(1000)]);
    const how: StopHow = !wasRunning || r.how === 'none' ? 'already-exited' : r.how;
    return { how, info: this.info(e), survivors: r.survivors, escaped: r.escaped };
  }

  /** Stop everything (shutdown). */
  async stopAll(graceMs: number): Promise<void> {
    await Promise.all([...this.entries.keys()].map((id) => this.stop(id, graceMs).catch(() => undefined)));
  }

  /** Kill everything at once (unload, process exit): no waiting possible there. */
  killAllNow(): void {
    for (const e of this.entries.values()) if (e.status === 'running') e.status = 'stopped';
    const alive = killTreesNow([...this.entries.values()].map((e) => e.tree));
    for (const e of this.entries.values()) if (!alive.has(e.tree.tag)) this.records?.remove(e.tree.tag);
  }

  private prune(keepExited: number): void {
    const ended = [...this.entries.values()].filter((e) => e.status !== 'running');
    for (const e of ended.slice(0, Math.max(0, ended.length - keepExited))) {
      // An entry leaves only once nothing of its tree runs: until then `stop` must reach it.
      if (treeAlive(e.tree)) continue;
      this.entries.delete(e.id);
      this.records?.remove(e.tree.tag);
    }
  }

  private info(e: Entry): ManagedProcessInfo {
    const { child: _c, log: _l, exited: _x, tree: _t, ...info } = e;
    return { ...info };
  }
}
