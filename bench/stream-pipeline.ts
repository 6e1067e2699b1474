/**
 * The stream pipeline benchmark: N text deltas from a loopback server through the provider
 * plugin, the kernel's hooks and the SQLite history store, against the raw official SDK
 * iterating the same stream in the same process. Reports CPU (user+system) ratios and the
 * per-delta cost at 5k against 50k deltas.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { PluginModule, Settings } from '../plugin-api.js';
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
  const { rawMs, pipelineMs } = await compareCpu(raw, pipeline, repeats);
  await kernel.shutdown();
  fs.rmSync(home, { recursive: true, force: true });
  return { format, n, rawMs, pipelineMs, ratio: pipelineMs / rawMs, perDeltaUs: (pipelineMs * 1000) / n };
}

/** Warm both paths (JIT, lazy imports, files), then the median CPU of interleaved repeats of each. */
export async function compareCpu(raw: () => Promise<unknown>, pipeline: () => Promise<unknown>, repeats: number): Promise<{ rawMs: number; pipelineMs: number }> {
  await raw();
  await pipeline();
  const rawTimes: number[] = [];
  const pipeTimes: number[] = [];
  for (let i = 0; i < repeats; i++) {
    rawTimes.push(await cpuMs(raw));
    pipeTimes.push(await cpuMs(pipeline));
  }
  return { rawMs: median(rawTimes), pipelineMs: median(pipeTimes) };
}
