/**
 * The stream pipeline benchmark: N text deltas from a loopback server through the provider
 * plugin, the kernel's hooks and the SQLite history store, against the raw official SDK
 * iterating the same stream in the same process. Reports CPU (user+system) ratios and the
 * per-delta cost at 5k against 50k deltas. `benchGatewayStream` measures the same pipeline with
 * the gateway plugin loaded, with no client and with one WebSocket client (in a child process,
 * so its CPU is not counted) reading the stream.
 */
import { fork, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { LifecycleEvent, PluginModule, Settings } from '../plugin-api.js';
import { createKernel } from '../core/kernel.js';

export type BenchFormat = 'anthropic' | 'openai-chat' | 'openai-responses' | 'gemini';

interface FormatSpec {
  provider: string;
  plugin: () => Promise<PluginModule>;
  settings: (url: string) => Settings;
  raw: (url: string) => Promise<number>;
}

const KEY = 'bench-key';

/** Providers are loaded by folder name so the bench runs with whichever ones are built. */
async function pluginFrom(folder: string): Promise<PluginModule> {
  return (await import(new URL(`../plugins/${folder}/index.js`, import.meta.url).href)).default as PluginModule;
}

const SPECS: Record<BenchFormat, FormatSpec> = {
  anthropic: {
    provider: 'claude_code',
    plugin: () => pluginFrom('provider-anthropic'),
    settings: (url) => ({ providers: { claude_code: { apiKey: KEY, baseUrl: url } } }),
    raw: async (url) => {
      const { default: Anthropic } = await import('@anthropic-ai/sdk');
      const client = new Anthropic({ apiKey: KEY, baseURL: url, maxRetries: 0 });
      const stream = await client.messages.create({ model: 'claude-sonnet-4-6', max_tokens: 1024, messages: [{ role: 'user', content: 'go' }], stream: true });
      let n = 0;
      for await (const ev of stream) if (ev.type === 'content_block_delta') n++;
      return n;
    },
  },
  'openai-chat': {
    provider: 'codex',
    plugin: () => pluginFrom('provider-openai'),
    settings: (url) => ({ providers: { codex: { apiKey: KEY, baseUrl: `${url}/v1`, api: 'chat' } } }),
    raw: async (url) => {
      const { default: OpenAI } = await import('openai');
      const client = new OpenAI({ apiKey: KEY, baseURL: `${url}/v1`, maxRetries: 0 });
      const stream = await client.chat.completions.create({ model: 'gpt-5', messages: [{ role: 'user', content: 'go' }], stream: true, stream_options: { include_usage: true } });
      let n = 0;
      for await (const ch of stream) if (ch.choices[0]?.delta?.content) n++;
      return n;
    },
  },
  'openai-responses': {
    provider: 'codex',
    plugin: () => pluginFrom('provider-openai'),
    settings: (url) => ({ providers: { codex: { apiKey: KEY, baseUrl: `${url}/v1`, api: 'responses' } } }),
    raw: async (url) => {
      const { default: OpenAI } = await import('openai');
      const client = new OpenAI({ apiKey: KEY, baseURL: `${url}/v1`, maxRetries: 0 });
      const stream = await client.responses.create({ model: 'gpt-5', input: 'go', stream: true });
      let n = 0;
      for await (const ev of stream) if (ev.type === 'response.output_text.delta') n++;
      return n;
    },
  },
  gemini: {
    provider: 'gemini',
    plugin: () => pluginFrom('provider-gemini'),
    settings: (url) => ({ providers: { gemini: { apiKey: KEY, baseUrl: url } } }),
    raw: async (url) => {
      const { GoogleGenerativeAI } = await import('@google/generative-ai');
      const model = new GoogleGenerativeAI(KEY).getGenerativeModel({ model: 'gemini-2.5-flash' }, { baseUrl: url });
      const result = await model.generateContentStream('go');
      let n = 0;
      for await (const ch of result.stream) if (ch.candidates?.[0]?.content?.parts?.length) n++;
      return n;
    },
  },
};

export async function startBenchServer(): Promise<{ url: string; setN(n: number): Promise<void>; setLoop(rounds: number): Promise<void>; close(): void; child: ChildProcess }> {
  const entry = new URL('./sse-server.js', import.meta.url);
  const child = spawn(process.execPath, [entry.pathname], { stdio: ['pipe', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout!.once('data', (d) => resolve(Number(String(d).trim())));
    child.once('exit', (c) => reject(new Error(`bench server exited (${c})`)));
  });
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    child,
    async setN(n) {
      await fetch(`${url}/__config`, { method: 'POST', body: JSON.stringify({ n }) });
    },
    async setLoop(rounds) {
      await fetch(`${url}/__config`, { method: 'POST', body: JSON.stringify({ loop: rounds }) });
    },
    close: () => child.kill(),
  };
}

/** CPU (user + system) one call takes, in ms. */
export function cpuMs(fn: () => Promise<unknown>): Promise<number> {
  const start = process.cpuUsage();
  return fn().then(() => {
    const d = process.cpuUsage(start);
    return (d.user + d.system) / 1000;
  });
}

export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const REPEATS = Number(process.env.LIVEAGENT_BENCH_REPEATS ?? 5);

export interface PipelineResult {
  format: BenchFormat;
  n: number;
  rawMs: number;
  pipelineMs: number;
  ratio: number;
  perDeltaUs: number;
}

export async function benchStreamPipeline(format: BenchFormat, n: number, url: string, repeats = REPEATS): Promise<PipelineResult> {
  const spec = SPECS[format];
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'la-bench-'));
  const kernel = await createKernel({
    home,
    builtins: [await spec.plugin(), (await import('../plugins/history-sqlite/index.js')).default as PluginModule],
    settings: { ...spec.settings(url), runtime: { retryMaxAttempts: 1 } },
    thirdParty: false,
  });
  const pipeline = async () => {
    // Count deltas the way the hosts consume them: a runtime listener (the gateway's path).
    let deltas = 0;
    const sub = kernel.runtime.onEvent((e) => {
      if (e.type === 'message_update') deltas++;
    });
    const run = kernel.runtime.startRun({ input: [{ type: 'text', text: 'go' }], mode: 'text', provider: spec.provider, keepEvents: false });
    const r = await run.result;
    sub.dispose();
    if (r.status !== 'completed') throw new Error(`pipeline run failed: ${r.error?.message}`);
    if (deltas < n) throw new Error(`pipeline saw ${deltas} deltas, expected ${n}`);
  };
  const raw = async () => {
    const got = await spec.raw(url);
    if (got < n) throw new Error(`raw SDK saw ${got} deltas, expected ${n}`);
  };
  const { rawMs, pipelineMs, ratio } = await compareCpu(raw, pipeline, repeats);
  await kernel.shutdown();
  fs.rmSync(home, { recursive: true, force: true });
  return { format, n, rawMs, pipelineMs, ratio, perDeltaUs: (pipelineMs * 1000) / n };
}

/**
 * Warm both paths (JIT, lazy imports, files), then interleaved repeats of each: the median CPU of
 * each side, and `ratio`, the median of each pair's own ratio. A pair runs back to back, so load
 * from elsewhere on a shared machine mostly hits both halves alike; the order inside a pair
 * alternates, so neither side always pays the other's garbage collection.
 */
export async function compareCpu(raw: () => Promise<unknown>, pipeline: () => Promise<unknown>, repeats: number): Promise<{ rawMs: number; pipelineMs: number; ratio: number }> {
  await raw();
  await pipeline();
  const rawTimes: number[] = [];
  const pipeTimes: number[] = [];
  const ratios: number[] = [];
  for (let i = 0; i < repeats; i++) {
    let r: number;
    let p: number;
    if (i % 2 === 0) {
      r = await cpuMs(raw);
      p = await cpuMs(pipeline);
    } else {
      p = await cpuMs(pipeline);
      r = await cpuMs(raw);
    }
    rawTimes.push(r);
    pipeTimes.push(p);
    ratios.push(p / r);
  }
  return { rawMs: median(rawTimes), pipelineMs: median(pipeTimes), ratio: median(ratios) };
}

export interface GatewayStreamResult {
  format: BenchFormat;
  n: number;
  rawMs: number;
  /** The pipeline without the gateway plugin (the `stream` row's measurement, repeated here). */
  baseMs: number;
  /** With the gateway plugin loaded and no client. */
  noClientMs: number;
  /** With one subscribed WebSocket client reading every event. */
  oneClientMs: number;
}

const TOKEN = 'bench-token-0123456789abcdef0123456789';

/**
 * Stream CPU with the gateway plugin loaded: 0 clients (a run nobody follows: no per-delta
 * serialization) and 1 client (it sends the message, so it follows the new conversation from
 * its first event, as the WebUI does), against raw SDK iteration in the same run.
 */
export async function benchGatewayStream(format: BenchFormat, n: number, url: string, repeats = REPEATS, only?: Array<'raw' | 'base' | 'noClient' | 'oneClient'>): Promise<GatewayStreamResult> {
  const spec = SPECS[format];
  const history = (await import('../plugins/history-sqlite/index.js')).default as PluginModule;
  const gatewayPlugin = (await import('../plugins/gateway/index.js')).default as PluginModule;
  const homes: string[] = [];
  const boot = async (withGateway: boolean) => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'la-bench-gw-'));
    homes.push(home);
    return createKernel({
      home,
      builtins: [await spec.plugin(), history, ...(withGateway ? [gatewayPlugin] : [])],
      settings: { ...spec.settings(url), runtime: { retryMaxAttempts: 1 }, gateway: { heartbeatIntervalMs: 600_000 } },
      thirdParty: false,
    });
  };
  const base = await boot(false);
  const kernel = await boot(true);
  const gateway = kernel.services.get<{ attach(server: http.Server, o: { token: string; path?: string }): Promise<void> }>('gateway');
  if (!gateway) throw new Error('the gateway plugin did not load');
  const server = http.createServer();
  await gateway.attach(server, { token: TOKEN, path: '/ws' });
  const port = await new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
  const reader = await startReader(`ws://127.0.0.1:${port}/ws?token=${TOKEN}`);

  const runOn = (k: typeof kernel) => async () => {
    let deltas = 0;
    const sub = k.runtime.onEvent((e: LifecycleEvent) => {
      if (e.type === 'message_update') deltas++;
    });
    const r = await k.runtime.startRun({ input: [{ type: 'text', text: 'go' }], mode: 'text', provider: spec.provider, keepEvents: false }).result;
    sub.dispose();
    if (r.status !== 'completed') throw new Error(`pipeline run failed: ${r.error?.message}`);
    if (deltas < n) throw new Error(`pipeline saw ${deltas} deltas, expected ${n}`);
  };
  const oneClient = async () => {
    const got = await reader.run(spec.provider);
    if (got < n) throw new Error(`the WebSocket client got ${got} deltas, expected ${n}`);
  };
  const raw = async () => {
    const got = await spec.raw(url);
    if (got < n) throw new Error(`raw SDK saw ${got} deltas, expected ${n}`);
  };
  const all = { raw, base: runOn(base), noClient: runOn(kernel), oneClient };
  // `only` (profiling one path): the others are skipped and report NaN.
  const paths = Object.fromEntries(Object.entries(all).filter(([k]) => !only || only.includes(k as never))) as Partial<typeof all>;
  const times: Record<keyof typeof all, number[]> = { raw: [], base: [], noClient: [], oneClient: [] };
  try {
    for (const fn of Object.values(paths)) await fn(); // warm every path (JIT, lazy imports, SQLite)
    for (let i = 0; i < repeats; i++) for (const [name, fn] of Object.entries(paths)) times[name as keyof typeof all].push(await cpuMs(fn));
  } finally {
    reader.stop();
    server.close();
    await kernel.shutdown();
    await base.shutdown();
    for (const h of homes) fs.rmSync(h, { recursive: true, force: true });
  }
  const med = (xs: number[]) => (xs.length ? median(xs) : NaN);
  return { format, n, rawMs: med(times.raw), baseMs: med(times.base), noClientMs: med(times.noClient), oneClientMs: med(times.oneClient) };
}

/** The reading client, in a child process: `run(provider)` sends a message and resolves with the deltas it received once its run is done. */
async function startReader(wsUrl: string): Promise<{ run(provider: string): Promise<number>; stop(): void }> {
  const child = fork(fileURLToPath(import.meta.url), ['--gateway-reader', wsUrl], { stdio: 'inherit' });
  let waiting: { resolve: (n: number) => void; reject: (e: Error) => void } | undefined;
  child.on('message', (m: { done?: number; error?: string }) => {
    if (m.done !== undefined) waiting?.resolve(m.done);
    if (m.error) waiting?.reject(new Error(m.error));
  });
  await new Promise<void>((resolve, reject) => {
    child.once('message', (m: { ready?: boolean; error?: string }) => (m.ready ? resolve() : reject(new Error(m.error))));
    child.once('exit', (code) => reject(new Error(`the bench reader exited (${code})`)));
  });
  return {
    run: (provider) =>
      new Promise<number>((resolve, reject) => {
        waiting = { resolve, reject };
        child.send({ provider });
      }),
    stop: () => child.kill(),
  };
}

async function readerMain(wsUrl: string): Promise<void> {
  const { WebSocket } = await import('ws');
  const ws = new WebSocket(wsUrl);
  let deltas = 0;
  let current: string | undefined;
  let count = 0;
  ws.on('message', (data: Buffer) => {
    for (const m of JSON.parse(data.toString()) as Array<{ type: string; id?: string; ok?: boolean; coalesced?: number; conversationId?: string; data?: { conversationId?: string }; error?: { message: string } }>) {
      // A coalesced message stands for that many deltas (docs/gateway-protocol.md).
      if (m.type === 'token' || m.type === 'thinking') deltas += m.coalesced ?? 1;
      else if (m.type === 'reply' && m.ok === false) process.send!({ error: m.error?.message ?? 'refused' });
      else if (m.type === 'reply' && m.data?.conversationId) current = m.data.conversationId;
      else if ((m.type === 'done' || m.type === 'error') && (current === undefined || m.conversationId === current)) {
        process.send!({ done: deltas });
        // Stop following it, so later runs do not fan out to an idle subscription.
        if (m.conversationId) ws.send(JSON.stringify({ type: 'unsubscribe', conversationId: m.conversationId }));
      }
    }
  });
  ws.on('open', () => process.send!({ ready: true }));
  ws.on('error', (err) => process.send!({ error: err.message }));
  process.on('message', (m: { provider: string }) => {
    deltas = 0;
    current = undefined;
    ws.send(JSON.stringify({ type: 'chat_queue', id: `s${++count}`, item: { action: 'send', clientRequestId: `bench-${process.pid}-${count}`, text: 'go', mode: 'text', provider: m.provider } }));
  });
}

const isMain = process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href;
if (isMain) {
  const at = process.argv.indexOf('--gateway-reader');
  if (at >= 0) {
    readerMain(process.argv[at + 1]!).catch((err) => {
      process.stderr.write(`bench reader: ${(err as Error).message}\n`);
      process.exit(1);
    });
  }
}
