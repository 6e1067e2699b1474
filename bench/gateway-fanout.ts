/**
 * Gateway fan-out benchmark: server CPU to deliver N events of ~100 B to M clients through the
 * gateway's real fan-out path (runtime.onEvent → serialize once → per-client batches → one frame
 * per client per tick), against a raw `ws` loop that serializes each event once and sends it to
 * each client. Clients run in a child process so their CPU is not counted. Also reports the most
 * memory the gateway held for a client that stopped reading (and what the raw loop let pile up).
 *
 * Standalone: `node dist/bench/gateway-fanout.js [--events N] [--clients M] [--burst B]`.
 */
import { fork, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import type { LifecycleEvent, PluginContext, Settings } from '../plugin-api.js';
import { Gateway } from '../plugins/gateway/gateway.js';

export interface FanoutBenchOptions {
  /** Events to deliver (default 20,000). */
  events?: number;
  /** Reading clients (default 50). */
  clients?: number;
  /** Events emitted per tick, as a provider's chunks arrive (default 10). */
  burst?: number;
  /** Text per event; the serialized event is ~100 B more (default 40 characters). */
  textBytes?: number;
  /**
   * The gateway's per-client cap (default 16 MiB, the gateway's default). Clients in the child
   * process read more slowly than the server writes; a cap below what they lag by drops them.
   */
  capBytes?: number;
  log?: (line: string) => void;
}

export interface FanoutBenchResult {
  events: number;
  clients: number;
  eventBytes: number;
  gatewayCpuMs: number;
  rawCpuMs: number;
  /** gateway / raw server CPU: below 1 means the gateway is cheaper. */
  ratio: number;
  gatewayWallMs: number;
  rawWallMs: number;
  /** Most bytes the gateway ever held for the client that stopped reading. */
  stalledMaxHeldBytes: number;
  stalledDropped: boolean;
  /** What the raw loop had buffered for its stalled client at the end (it never drops). */
  rawStalledBufferedBytes: number;
}

const CONV = 'c_bench';
const RUN = 'r_bench';

function makeEvents(n: number, textBytes: number): LifecycleEvent[] {
  const text = 'x'.repeat(textBytes);
  const out: LifecycleEvent[] = [];
  for (let i = 0; i < n; i++) {
    out.push({ type: 'message_update', conversationId: CONV, runId: RUN, seq: i + 2, ts: 1_700_000_000_000 + i, messageId: 'm_bench', delta: { kind: 'text', index: 0, text } });
  }
  return out;
}

/** Child process: connect clients, report when each reading client has every event. */
async function clientMain(argv: string[]): Promise<void> {
  const [url, mode, countStr, expectStr, stalledStr] = argv;
  const { WebSocket } = await import('ws');
  const count = Number(countStr);
  const expected = Number(expectStr);
  let finished = 0;
  const sockets: InstanceType<typeof WebSocket>[] = [];
  const open = (stalled: boolean) =>
    new Promise<void>((resolve, reject) => {
      const ws = new WebSocket(url!);
      sockets.push(ws);
      let got = 0;
      ws.on('message', (data: Buffer) => {
        if (mode === 'raw') got++;
        // A coalesced message stands for that many deltas (docs/gateway-protocol.md).
        else for (const m of JSON.parse(data.toString()) as Array<{ type: string; coalesced?: number }>) if (m.type === 'token') got += m.coalesced ?? 1;
        if (got === expected) if (++finished === count) process.send!({ done: true });
        if (mode === 'gateway' && got === 0 && data.includes('"type":"reply"')) {
          if (stalled) (ws as unknown as { _socket: Socket })._socket.pause();
          resolve();
        }
      });
      ws.on('open', () => {
        if (mode === 'gateway') ws.send(JSON.stringify({ type: 'subscribe', id: 's', conversationId: CONV, lastSeq: 1 }));
        else {
          if (stalled) (ws as unknown as { _socket: Socket })._socket.pause();
          resolve();
        }
      });
      ws.on('error', reject);
      ws.on('close', () => {
        if (!stalled && got < expected) process.send!({ lost: true });
      });
    });
  await Promise.all(Array.from({ length: count }, () => open(false)));
  if (stalledStr === '1') await open(true);
  process.send!({ ready: true });
  process.on('message', (m: { exit?: boolean }) => {
    if (m.exit) {
      for (const s of sockets) s.terminate();
      process.exit(0);
    }
  });
}

function startClients(url: string, mode: 'raw' | 'gateway', count: number, expected: number): Promise<{ child: ChildProcess; done: Promise<void> }> {
  const child = fork(fileURLToPath(import.meta.url), ['--bench-clients', url, mode, String(count), String(expected), '1'], { stdio: 'inherit' });
  let doneResolve!: () => void;
  let doneReject!: (err: Error) => void;
  const done = new Promise<void>((resolve, reject) => ((doneResolve = resolve), (doneReject = reject)));
  done.catch(() => undefined); // reported through drive()
  return new Promise((resolve, reject) => {
    child.on('message', (m: { ready?: boolean; done?: boolean; lost?: boolean }) => {
      if (m.ready) resolve({ child, done });
      if (m.done) doneResolve();
      if (m.lost) doneReject(new Error('a reading client was dropped before it had every event (raise capBytes)'));
    });
    child.once('error', reject);
    child.once('exit', (code) => code && reject(new Error(`bench clients exited with ${code}`)));
  });
}

function stopClients(child: ChildProcess): void {
  if (child.connected) child.send({ exit: true });
  setTimeout(() => child.kill(), 2000).unref();
}

/** Emit `events` in bursts, one burst per setImmediate, and time until every client has them. */
async function drive(emit: (e: LifecycleEvent) => void, events: LifecycleEvent[], burst: number, done: Promise<void>) {
  const wall = performance.now();
  const cpu = process.cpuUsage();
  await new Promise<void>((resolve) => {
    let i = 0;
    const step = () => {
      const end = Math.min(events.length, i + burst);
      for (; i < end; i++) emit(events[i]!);
      if (i < events.length) setImmediate(step);
      else resolve();
    };
    step();
  });
  await done;
  const used = process.cpuUsage(cpu);
  return { cpuMs: (used.user + used.system) / 1000, wallMs: performance.now() - wall };
}

function listen(server: http.Server): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
}

async function benchRaw(events: LifecycleEvent[], clients: number, burst: number) {
  const { WebSocketServer } = await import('ws');
  const server = http.createServer();
  const wss = new WebSocketServer({ server, perMessageDeflate: false });
  const port = await listen(server);
  const sockets: Array<import('ws').WebSocket> = [];
  wss.on('connection', (ws) => sockets.push(ws));
  const { child, done } = await startClients(`ws://127.0.0.1:${port}/`, 'raw', clients, events.length);
  const stalled = sockets.at(-1)!;
  try {
    const r = await drive(
      (e) => {
        const buf = Buffer.from(JSON.stringify(e));
        for (const ws of sockets) ws.send(buf);
      },
      events,
      burst,
      done,
    );
    return { ...r, stalledBuffered: stalled.bufferedAmount };
  } finally {
    stopClients(child);
    for (const ws of sockets) ws.terminate();
    wss.close();
    server.close();
  }
}

async function benchGateway(events: LifecycleEvent[], clients: number, burst: number, capBytes: number) {
  let listener: (e: LifecycleEvent) => void = () => undefined;
  const settings: Settings = { gateway: { maxClientBufferBytes: capBytes, heartbeatIntervalMs: 600_000 } };
  const quiet = { debug() {}, info() {}, warn() {}, error() {} };
  // Only what the gateway touches: the real fan-out path fed by a stand-in runtime.
  const ctx = {
    runtime: {
      onEvent: (l: (e: LifecycleEvent) => void) => ((listener = l), { dispose() {} }),
      activeRun: () => undefined,
      providers: () => [],
      provider: () => undefined,
    },
    settings: { get: () => settings, set: async (s: Settings) => s, update: async (s: Settings) => s, onChange: () => ({ dispose() {} }) },
    logger: quiet,
    service: () => undefined,
    subscriptions: [],
  } as unknown as PluginContext;
  const gateway = new Gateway(ctx);
  const server = http.createServer();
  await gateway.attach(server, { token: 'bench-token-0123456789abcdef0123456789', path: '/ws' });
  const port = await listen(server);
  listener({ type: 'agent_start', conversationId: CONV, runId: RUN, seq: 1, ts: Date.now(), mode: 'text', provider: 'bench', model: 'bench' });
  const { child, done } = await startClients(`ws://127.0.0.1:${port}/ws?token=bench-token-0123456789abcdef0123456789`, 'gateway', clients, events.length);
  try {
    const r = await drive((e) => listener(e), events, burst, done);
    const stats = gateway.stats();
    return { ...r, stalledMaxHeld: stats.peakHeldBytes, stalledDropped: stats.dropped > 0 };
  } finally {
    stopClients(child);
    await gateway.close();
    server.close();
  }
}

export async function benchGatewayFanout(opts: FanoutBenchOptions = {}): Promise<FanoutBenchResult> {
  const n = opts.events ?? 20_000;
  const clients = opts.clients ?? 50;
  const burst = opts.burst ?? 10;
  const capBytes = opts.capBytes ?? 16 * 1024 * 1024;
  const log = opts.log ?? ((l: string) => void process.stdout.write(`${l}\n`));
  const events = makeEvents(n, opts.textBytes ?? 40);
  const eventBytes = Buffer.byteLength(JSON.stringify(events[0]));
  // Warm both paths once (JIT, sockets), then measure.
  await benchRaw(events.slice(0, 2000), 5, burst);
  await benchGateway(events.slice(0, 2000), 5, burst, capBytes);
  const raw = await benchRaw(events, clients, burst);
  const gw = await benchGateway(events, clients, burst, capBytes);
  const result: FanoutBenchResult = {
    events: n,
    clients,
    eventBytes,
    gatewayCpuMs: round(gw.cpuMs),
    rawCpuMs: round(raw.cpuMs),
    ratio: round(gw.cpuMs / raw.cpuMs, 3),
    gatewayWallMs: round(gw.wallMs),
    rawWallMs: round(raw.wallMs),
    stalledMaxHeldBytes: gw.stalledMaxHeld,
    stalledDropped: gw.stalledDropped,
    rawStalledBufferedBytes: raw.stalledBuffered,
  };
  log(`gateway fan-out: ${n} events of ${eventBytes} B to ${clients} clients (bursts of ${burst}), plus one client that stops reading`);
  log(`  server CPU: gateway ${result.gatewayCpuMs} ms, raw ws loop ${result.rawCpuMs} ms → ratio ${result.ratio}× (wall ${result.gatewayWallMs} vs ${result.rawWallMs} ms)`);
  log(`  stalled client: gateway held at most ${result.stalledMaxHeldBytes} B (cap ${capBytes} B, dropped: ${result.stalledDropped}); raw loop had ${result.rawStalledBufferedBytes} B buffered and never drops`);
  return result;
}

function round(v: number, digits = 1): number {
  const f = 10 ** digits;
  return Math.round(v * f) / f;
}

const isMain = process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href;
if (isMain) {
  const at = process.argv.indexOf('--bench-clients');
  if (at >= 0) {
    clientMain(process.argv.slice(at + 1)).catch((err) => {
      process.stderr.write(`bench clients: ${(err as Error).message}\n`);
      process.exit(1);
    });
  } else {
    const { values } = parseArgs({ options: { events: { type: 'string' }, clients: { type: 'string' }, burst: { type: 'string' } } });
    benchGatewayFanout({
      ...(values.events ? { events: Number(values.events) } : {}),
      ...(values.clients ? { clients: Number(values.clients) } : {}),
      ...(values.burst ? { burst: Number(values.burst) } : {}),
    }).then(
      () => process.exit(0),
      (err) => {
        process.stderr.write(`bench failed: ${(err as Error).stack ?? err}\n`);
        process.exit(1);
      },
    );
  }
}
