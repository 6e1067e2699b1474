/**
 * One shell command, start to finish: its own process group, a timeout and an abort that stop
 * the whole group, output kept head-and-tail within a byte limit, throttled progress. Resolves
 * only once the group is dead, so nothing the command started outlives the call.
 */
import type { ChildProcess } from 'node:child_process';
import { HeadTailBuffer } from '../tool-shared/output-buffer.js';
import { groupAlive, killGroup, spawnShell } from '../tool-shared/process-group.js';
import type { BashSettings } from '../tool-shared/settings.js';

export interface CommandOptions {
  cwd: string;
  timeoutMs: number;
  signal: AbortSignal;
  settings: BashSettings;
  /** Throttled to `settings.progressIntervalMs`; gets the newest output. */
  onProgress?(recent: string, outputBytes: number, elapsedMs: number): void;
}

export interface CommandOutcome {
  output: string;
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  aborted: boolean;
  /** Processes still running in the group after the shell exited were stopped. */
  backgroundStopped: boolean;
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
  const base = { timedOut: false, aborted: false, backgroundStopped: false };
  let child: ChildProcess;
  try {
    child = spawnShell(command, { cwd: o.cwd });
  } catch (err) {
    return { ...base, output: '', exitCode: null, signal: null, outputBytes: 0, omittedBytes: 0, durationMs: 0, pid: null, spawnError: (err as Error).message };
  }
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null } | { error: Error }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
    child.once('error', (error) => resolve({ error }));
  });
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));

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

  const pid = child.pid;
  let reason: 'timeout' | 'aborted' | undefined;
  let killing: Promise<unknown> | undefined;
  const stop = (why: 'timeout' | 'aborted') => {
    if (pid === undefined) return;
    reason ??= why;
    killing ??= killGroup(pid, o.settings.killGraceMs);
  };
  const timer = setTimeout(() => stop('timeout'), o.timeoutMs);
  const onAbort = () => stop('aborted');
  if (o.signal.aborted) onAbort();
  else o.signal.addEventListener('abort', onAbort, { once: true });

  const exit = await exited;
  clearTimeout(timer);
  o.signal.removeEventListener('abort', onAbort);
  let backgroundStopped = false;
  if (pid !== undefined) {
    if (!killing) {
      // Give the pipes a moment to drain; then whatever is still running in the group was left
      // behind in the background, and is stopped so the call leaves no orphans.
      await Promise.race([closed, delay(o.settings.exitDrainMs)]);
      if (groupAlive(pid)) {
        backgroundStopped = true;
        killing = killGroup(pid, o.settings.killGraceMs);
      }
    }
    await killing;
    // A process that escaped the group (setsid) may still hold the pipes: do not wait for it.
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
    outputBytes: out.total,
    omittedBytes: out.omitted,
    durationMs: Date.now() - started,
    pid: pid ?? null,
  };
  if ('error' in exit) outcome.spawnError = exit.error.message;
  return outcome;
}
