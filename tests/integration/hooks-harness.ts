/**
 * What the hooks tests share: a kernel with the scripted provider, the real builtin tools and
 * the hooks plugin, in `la-hooks-` temp folders; the hooks service; every reported failure;
 * small local HTTP servers (recording, or black holes) closed after each test.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach } from 'vitest';
import type { LifecycleEvent, Plugin, ProviderRequest, RuntimeErrorInfo, Settings } from '../../plugin-api.js';
import { createKernel, type Kernel } from '../../core/kernel.js';
import hooksPlugin, { HOOKS_SERVICE, type HooksService } from '../../plugins/hooks/index.js';
import { builtinToolPlugins } from '../../hosts/builtins.js';
import { fakeProvider, type FakeStep } from '../helpers/fake-provider.js';
import { killSleepers } from '../helpers/processes.js';
import { collectAll } from '../helpers/streams.js';

const kernels: Kernel[] = [];
const dirs: string[] = [];
const servers: http.Server[] = [];
afterEach(async () => {
  for (const k of kernels.splice(0)) await k.shutdown();
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
  killSleepers();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

export function tmp(prefix = 'la-hooks-'): string {
  const d = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), prefix)));
  dirs.push(d);
  return d;
}

export interface Booted {
  kernel: Kernel;
  provider: ReturnType<typeof fakeProvider>;
  hooks: HooksService;
  /** Everything reported to the kernel's `failed` hook. */
  failures: RuntimeErrorInfo[];
  home: string;
  work: string;
}

export async function boot(steps: FakeStep[] | ((req: ProviderRequest, i: number) => FakeStep), settings: Settings, extra: Plugin[] = []): Promise<Booted> {
  const provider = fakeProvider(steps);
  const failures: RuntimeErrorInfo[] = [];
  let hooks: HooksService | undefined;
  const probe: Plugin = {
    name: 'test-probe',
    apply(ctx) {
      ctx.registerProvider(provider);
      ctx.hooks.failed.tap((info) => void failures.push(info));
      ctx.hooks.ready.tap(() => void (hooks = ctx.service<HooksService>(HOOKS_SERVICE)));
    },
  };
  const home = tmp();
  const work = tmp();
  const kernel = await createKernel({
    home,
    plugins: [probe, ...builtinToolPlugins, hooksPlugin, ...extra],
    settings: { runtime: { retryMaxAttempts: 1 }, ...settings },
    thirdParty: false,
    logSink: () => undefined,
  });
  kernels.push(kernel);
  if (kernel.failures.length) throw new Error(`plugins failed: ${kernel.failures.map((f) => f.message).join('; ')}`);
  return { kernel, provider, hooks: hooks!, failures, home, work };
}

export async function runOnce(b: Booted, text = 'go', mode: 'text' | 'tools' = 'tools') {
  const run = b.kernel.runtime.startRun({ input: [{ type: 'text', text }], mode, workdir: b.work });
  const events = await collectAll<LifecycleEvent>(run.events);
  return { events, result: await run.result };
}

export interface Recorder {
  url: string;
  bodies: Array<Record<string, unknown>>;
  headers: http.IncomingHttpHeaders[];
}

/** An HTTP server that records each JSON body and answers with `answer(body)` (default 200, empty). */
export async function recorder(answer?: (body: Record<string, unknown>) => { status?: number; body?: string; delayMs?: number }): Promise<Recorder> {
  const rec: Recorder = { url: '', bodies: [], headers: [] };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
      rec.bodies.push(body);
      rec.headers.push(req.headers);
      const a = answer?.(body) ?? {};
      setTimeout(() => res.writeHead(a.status ?? 200, { 'content-type': 'application/json' }).end(a.body ?? ''), a.delayMs ?? 0);
    });
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  rec.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return rec;
}

/** A server that accepts connections and never answers. */
export async function blackHole(): Promise<string> {
  const server = http.createServer(() => {
    /* never answers */
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
}

/** Text of a tool result block's content. */
export function resultText(events: LifecycleEvent[], toolCallId: string): { text: string; isError: boolean; details?: unknown } {
  const end = events.find((e) => e.type === 'tool_execution_end' && e.toolCallId === toolCallId);
  if (!end || end.type !== 'tool_execution_end') throw new Error(`no tool_execution_end for ${toolCallId}`);
  return { text: end.result.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n'), isError: end.result.isError, details: end.result.details };
}

/** Read JSON lines a hook appended to a file. */
export function jsonLines(file: string): Array<Record<string, unknown>> {
  if (!fs.existsSync(file)) return [];
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

export async function until(check: () => boolean, ms = 10_000, what = 'condition'): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`${what} not met in time`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
