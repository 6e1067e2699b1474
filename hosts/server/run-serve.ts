/**
 * `serve [--port N] [--host H]` as a function the CLI can call: starts the server, then shuts it
 * down gracefully on SIGINT, SIGTERM or SIGHUP (a second signal exits at once). Resolves to the
 * exit code: 128 + the signal's number, as `liveagent serve` (hosts/cli/serve.ts) does.
 */
import { parseArgs } from 'node:util';
import { onStopSignal, signalExitCode, type StopSignal } from '../cli/exit-codes.js';
import { startServer, type StartServerOptions } from './start-server.js';

export function parseServeArgv(argv: string[]): { port: number; host: string } {
  const { values, positionals } = parseArgs({ args: argv, options: { port: { type: 'string' }, host: { type: 'string' } }, allowPositionals: true, strict: true });
  if (positionals.length) throw new Error(`unexpected argument "${positionals[0]}"`);
  const port = values.port === undefined ? 7420 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--port must be a number from 0 to 65535, got "${values.port}"`);
  return { port, host: values.host ?? '127.0.0.1' };
}

export async function runServe(argv: string[], extra: Omit<StartServerOptions, 'port' | 'host'> = {}): Promise<number> {
  let opts: { port: number; host: string };
  try {
    opts = parseServeArgv(argv);
  } catch (err) {
    process.stderr.write(`liveagent serve: ${String((err as Error).message).split('\n')[0]}\n`);
    return 2;
  }
  let early: StopSignal | undefined;
  let stop: (signal: StopSignal) => void = (signal) => (early = signal);
  const signals = onStopSignal((signal) => stop(signal));
  try {
    const server = await startServer({ ...extra, ...opts });
    const signal = early ?? (await new Promise<StopSignal>((resolve) => (stop = resolve)));
    await server.close();
    return signalExitCode(signal);
  } finally {
    signals.dispose();
  }
}
