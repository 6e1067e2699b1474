/**
 * One command hook: `/bin/sh -c <command>` in the conversation's workdir, the event as JSON on
 * stdin, a scrubbed environment, a timeout. The shell leads its own process group and carries
 * a process tag (lib/tool-shared), so a hook that hangs is stopped with its whole tree,
 * including what left the group (setsid, double forks); what a finished hook leaves running in
 * the background is stopped too. Resolves only once the tree is gone (or its survivors are
 * named), so "timed out" never means "still running somewhere".
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { stopTree, treeAlive, type ProcessTree, type TreeStop } from '../../lib/tool-shared/process-group.js';
import type { HostProcesses } from '../../lib/tool-shared/process-records.js';
import { newTag, procStat, taggedEnv } from '../../lib/tool-shared/process-scan.js';

export interface CommandHookOptions {
  command: string;
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** Written to stdin, which is then closed. */
  input: string;
  timeoutMs: number;
  killGraceMs: number;
  maxOutputBytes: number;
  /** Aborting stops the tree at once (the plugin unloads, the run is over). */
  signal?: AbortSignal;
  /** The host's record of running trees: a host killed mid-hook has them stopped at the next start. */
  records?: HostProcesses;
}

export interface CommandHookOutcome {
  kind: 'command';
  exitCode: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  aborted: boolean;
  /** The shell could not be started (a missing workdir, no /bin/sh). */
  spawnError?: string;
  /** Processes still alive after SIGKILL (pids). Empty: the whole tree is gone. */
  survivors: number[];
  /** The shell's pid (the process group id). */
  pid: number | null;
  durationMs: number;
}

/** Output kept up to a byte limit (the head: a decision is at the start). */
class Capped {
  private chunks: Buffer[] = [];
  private kept = 0;
  total = 0;
  constructor(private readonly limit: number) {}
  push(chunk: Buffer): void {
    this.total += chunk.length;
    if (this.kept >= this.limit) return;
    const part = chunk.length > this.limit - this.kept ? chunk.subarray(0, this.limit - this.kept) : chunk;
    this.chunks.push(part);
    this.kept += part.length;
  }
  text(): string {
    return Buffer.concat(this.chunks).toString('utf8');
  }
}

const EXIT_DRAIN_MS = 200;
const delay = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());

export async function runCommandHook(o: CommandHookOptions): Promise<CommandHookOutcome> {
  const started = Date.now();
  const out = new Capped(o.maxOutputBytes);
  const err = new Capped(o.maxOutputBytes);
  const tag = newTag();
  const base = { kind: 'command' as const, timedOut: false, aborted: false, survivors: [] as number[] };
  if (o.signal?.aborted) return { ...base, aborted: true, exitCode: null, signal: null, stdout: '', stderr: '', pid: null, durationMs: 0 };
  let child: ChildProcess;
  try {
    child = spawn('/bin/sh', ['-c', o.command], { cwd: o.cwd, env: taggedEnv(tag, o.env), detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
  } catch (e) {
    return { ...base, exitCode: null, signal: null, stdout: '', stderr: '', pid: null, durationMs: 0, spawnError: (e as Error).message };
  }
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null } | { error: Error }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
    child.once('error', (error) => resolve({ error }));
  });
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  const pid = child.pid;
  const stat = pid === undefined ? undefined : procStat(pid);
  const tree: ProcessTree | undefined = pid === undefined ? undefined : { pgid: pid, tag, ...(stat ? { start: stat.start } : {}) };
  if (tree) o.records?.add(tree);

  child.stdout?.on('data', (c: Buffer) => out.push(c));
  child.stderr?.on('data', (c: Buffer) => err.push(c));
  // A hook that never reads its stdin (or exits first) must not fail on EPIPE.
  child.stdin?.on('error', () => {});
  child.stdin?.end(o.input);

  let reason: 'timeout' | 'aborted' | undefined;
  let killing: Promise<TreeStop> | undefined;
  const stop = (why: 'timeout' | 'aborted') => {
    if (!tree) return;
    reason ??= why;
    killing ??= stopTree(tree, o.killGraceMs);
  };
  const timer = setTimeout(() => stop('timeout'), o.timeoutMs);
  const onAbort = () => stop('aborted');
  o.signal?.addEventListener('abort', onAbort, { once: true });

  const exit = await exited;
  clearTimeout(timer);
  o.signal?.removeEventListener('abort', onAbort);
  let stopped: TreeStop | undefined;
  if (tree) {
    if (!killing) {
      await Promise.race([closed, delay(EXIT_DRAIN_MS)]);
      // What the hook left running (in the group or escaped from it) is stopped: no orphans.
      if (treeAlive(tree)) killing = stopTree(tree, o.killGraceMs);
    }
    stopped = await killing;
    if (!stopped?.survivors.length) o.records?.remove(tag);
    await Promise.race([closed, delay(EXIT_DRAIN_MS)]);
  }
  child.stdout?.destroy();
  child.stderr?.destroy();
  const outcome: CommandHookOutcome = {
    ...base,
    exitCode: 'error' in exit ? null : exit.code,
    signal: 'error' in exit ? null : exit.signal,
    stdout: out.text(),
    stderr: err.text(),
    timedOut: reason === 'timeout',
    aborted: reason === 'aborted',
    survivors: stopped?.survivors.map((s) => s.pid) ?? [],
    pid: pid ?? null,
    durationMs: Date.now() - started,
  };
  if ('error' in exit) outcome.spawnError = exit.error.message;
  return outcome;
}
