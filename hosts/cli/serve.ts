/**
 * `liveagent serve`: the server host (WebUI + gateway on an embedded SQLite store, or PostgreSQL for a team). SIGINT,
 * SIGTERM and SIGHUP shut it down gracefully (runs stopped, every process the tools started
 * stopped, writes finished), then it exits 128 + the signal's number; a second signal exits
 * at once.
 */
import { onStopSignal, signalExitCode, type StopSignal } from './exit-codes.js';

export async function runServe(opts: { port: number; host: string }): Promise<number> {
  const { startServer } = await import('../server/start-server.js');
  let early: StopSignal | undefined;
  // Handled before the kernel boots, so a signal then still shuts down cleanly.
  let stop: (signal: StopSignal) => void = (signal) => (early = signal);
  const signals = onStopSignal((signal) => stop(signal));
  try {
    const server = await startServer(opts);
    const signal = early ?? (await new Promise<StopSignal>((resolve) => (stop = resolve)));
    await server.close();
    return signalExitCode(signal);
  } finally {
    signals.dispose();
  }
}
