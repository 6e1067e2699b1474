/**
 * One shell command, start to finish: its own process group and tag, a timeout and an abort that
 * stop the whole tree (what left the group too: setsid, double forks), output kept head-and-tail
 * within a byte limit, throttled progress. Resolves only once the tree is dead, or with the
 * processes that survived SIGKILL named: nothing is claimed stopped that was not.
 */
import type { ChildProcess } from 'node:child_process';
import { HeadTailBuffer } from './output-buffer.js';
import { spawnShell, stopTree, treeAlive, type ProcessTree, type Survivor, type TreeStop } from './process-group.js';
import type { HostProcesses } from './process-records.js';
import { newTag, procStat } from './process-scan.js';
import type { BashSettings } from './settings.js';

export interface CommandOptions {
  cwd: string;
  timeoutMs: number;
  signal: AbortSignal;
  settings: BashSettings;
  /** Where the host records running trees, so a crashed host's leftovers are stopped at the next start. */
  records?: HostProcesses;
  /** Throttled to `settings.progressIntervalMs`; gets the newest output. */
  onProgress?(recent: string, outputBytes: number, elapsedMs: number): void;
}

export interface CommandOutcome {
  output: string;
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  aborted: boolean;
  /** Processes still running after the shell exited (in the group or out of it) were stopped. */
  backgroundStopped: boolean;
  /** Processes of the tree that had left the process group when it was stopped. */
  escaped: number;
  /** Processes still alive after SIGKILL. Empty means the whole tree is gone. */
  survivors: Survivor[];
  outputBytes: number;
  omittedBytes: number;
  durationMs: number;
  /** The shell's pid, which is also the process group id. */
  pid: number | null;
  spawnError?: string;
}

const PROGRESS_TAIL_BYTES = 4096;
const delay = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export async function runCommand(command: string, o: CommandOptions): Promise<CommandOutcome> {
  const started = Date.now();
  const out = new HeadTailBuffer(o.settings.outputLimitBytes);
  const base = { timedOut: false, aborted: false, backgroundStopped: false, escaped: 0, survivors: [] as Survivor[] };
  const tag = newTag();
  let child: ChildProcess;
  try {
    child = spawnShell(command, { cwd: o.cwd, tag });
  } catch (err) {
    return { ...base, output: '', exitCode: null, signal: null, outputBytes: 0, omittedBytes: 0, durationMs: 0, pid: null, spawnError: (err as Error).message };
  }
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null } | { error: Error }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
    child.once('error', (error) => resolve({ error }));
  });
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  const pid = child.pid;
  const tree: ProcessTree | undefined = pid === undefined ? undefined : { pgid: pid, tag, ...startOf(pid) };
  if (tree) o.records?.add(tree);

  let lastProgress = 0;
  let progressTimer: NodeJS.Timeout | undefined;
  const progress = () => {
    progressTimer = undefined;
    lastProgress = Date.now();
    try {
      o.onProgress?.(out.recent(PROGRESS_TAIL_BYTES), out.total, lastProgress - started);
    } catch {
      /* progress is best effort */
    }
  };
  const onData = (chunk: Buffer) => {
    out.push(chunk);
    if (!o.onProgress || progressTimer) return;
    const wait = o.settings.progressIntervalMs - (Date.now() - lastProgress);
    if (wait <= 0) progress();
    else progressTimer = setTimeout(progress, wait);
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);

  let reason: 'timeout' | 'aborted' | undefined;
  let killing: Promise<TreeStop> | undefined;
  const stop = (why: 'timeout' | 'aborted') => {
    if (!tree) return;
    reason ??= why;
    killing ??= stopTree(tree, o.settings.killGraceMs);
  };
  const timer = setTimeout(() => stop('timeout'), o.timeoutMs);
  const onAbort = () => stop('aborted');
  if (o.signal.aborted) onAbort();
  else o.signal.addEventListener('abort', onAbort, { once: true });

  const exit = await exited;
  clearTimeout(timer);
  o.signal.removeEventListener('abort', onAbort);
  let backgroundStopped = false;
  let stopped: TreeStop | undefined;
  if (tree) {
    if (!killing) {
      // Give the pipes a moment to drain; then whatever still runs (in the group or escaped from
      // it) was left behind in the background, and is stopped so the call leaves no orphans.
      await Promise.race([closed, delay(o.settings.exitDrainMs)]);
      if (treeAlive(tree)) {
        backgroundStopped = true;
        killing = stopTree(tree, o.settings.killGraceMs);
      }
    }
    stopped = await killing;
    if (!stopped?.survivors.length) o.records?.remove(tag);
    // A survivor may still hold the pipes: do not wait for it.
    await Promise.race([closed, delay(o.settings.exitDrainMs)]);
  }
  if (progressTimer) clearTimeout(progressTimer);
  child.stdout?.destroy();
  child.stderr?.destroy();
  const outcome: CommandOutcome = {
    ...base,
    output: out.text(),
    exitCode: 'error' in exit ? null : exit.code,
    signal: 'error' in exit ? null : exit.signal,
    timedOut: reason === 'timeout',
    aborted: reason === 'aborted',
    backgroundStopped,
    escaped: stopped?.escaped ?? 0,
    survivors: stopped?.survivors ?? [],
    outputBytes: out.total,
    omittedBytes: out.omitted,
    durationMs: Date.now() - started,
    pid: pid ?? null,
  };
  if ('error' in exit) outcome.spawnError = exit.error.message;
  return outcome;
}

function startOf(pid: number): { start?: number } {
  const s = procStat(pid);
  return s ? { start: s.start } : {};
}
