/**
 * How the CLI ends: exit codes (an external contract), failures reported before a run (one line
 * on stderr; with --json also one JSON line on stdout, since stdout carries only JSON there),
 * and the stop signals every long-running command handles alike.
 */
import { constants } from 'node:os';
import type { RuntimeErrorInfo } from '../../plugin-api.js';
import { describeError, RuntimeError, toErrorInfo } from '../../core/errors.js';
import { CliUsageError } from './args.js';

/** The CLI's exit codes (external contract). A stop signal exits 128 + its number (shell convention). */
export const EXIT = { ok: 0, failure: 1, usage: 2 } as const;

/** The signals that stop a command the way Ctrl-C does. */
export const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
export type StopSignal = (typeof STOP_SIGNALS)[number];

/** 128 + the signal's number: 130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP. */
export function signalExitCode(signal: StopSignal): number {
  return 128 + constants.signals[signal];
}

export function exitCodeFor(err: unknown): number {
  if (err instanceof CliUsageError) return EXIT.usage;
  if (err instanceof RuntimeError && (err.code === 'usage' || err.code === 'config' || err.code === 'dependency')) return EXIT.usage;
  return EXIT.failure;
}

function errorInfo(err: unknown): RuntimeErrorInfo {
  if (err instanceof CliUsageError) return { code: 'usage', message: err.message };
  const info = toErrorInfo(err);
  return { ...info, message: info.message.replace(/\s*\n\s*/g, ' ') };
}

export interface FailureIo {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
}

/**
 * Report a failure that happened before (or instead of) a run and return its exit code. With
 * `json`, stdout also gets `{"type":"error","error":{code,message},"exitCode":N}`.
 */
export function reportFailure(err: unknown, io: FailureIo, json: boolean): number {
  const code = exitCodeFor(err);
  io.stderr.write(`liveagent: ${describeError(err)}\n`);
  if (json) io.stdout.write(`${JSON.stringify({ type: 'error', error: errorInfo(err), exitCode: code })}\n`);
  return code;
}

/**
 * Call `onStop` on the first SIGINT, SIGTERM or SIGHUP (the host stops its runs and children,
 * then exits with {@link signalExitCode}); a second one exits at once (the process `exit`
 * handlers still SIGKILL the recorded children). Without a handler, SIGTERM and SIGHUP would
 * kill the host outright and leave its children orphaned. Dispose to restore the defaults.
 */
export function onStopSignal(onStop: (signal: StopSignal) => void): { dispose(): void } {
  let first: StopSignal | undefined;
  const handlers = STOP_SIGNALS.map((signal) => {
    const handler = () => {
      if (first) process.exit(signalExitCode(first));
      first = signal;
      onStop(signal);
    };
    process.on(signal, handler);
    return [signal, handler] as const;
  });
  return {
    dispose() {
      for (const [signal, handler] of handlers) process.removeListener(signal, handler);
    },
  };
}
