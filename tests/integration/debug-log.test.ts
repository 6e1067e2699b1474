/**
 * The debug-log plugin inside a kernel, with the real Anthropic provider plugin talking to the
 * wire mock and the key in ANTHROPIC_API_KEY: what an agent-dev run writes (the request as sent,
 * coalesced events, tools, correlation ids), what it never writes (the key, base64 payloads),
 * when nothing is written, and that a broken debug folder never fails a run.
 */
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { ContentBlock, LifecycleEvent, Plugin, RunOptions, RuntimeErrorInfo, Settings } from '../../plugin-api.js';
import { createKernel, type Kernel } from '../../core/kernel.js';
import debugLogPlugin, { DEBUG_LOG_SERVICE, type DebugLogService } from '../../plugins/debug-log/index.js';
import anthropicPlugin from '../../plugins/provider-anthropic/index.js';
import { anthropicReply, anthropicTextStream, startMockAnthropic, type AnthropicScript, type MockAnthropicServer } from '../fixtures/mock-anthropic.js';
import { trackResources } from '../helpers/cleanup.js';

const t = trackResources();
// Shaped like a real Anthropic key, so the value patterns would catch it too.
const KEY = `sk-ant-api03-${randomBytes(40).toString('base64url')}AA`;
const saved = { key: process.env.ANTHROPIC_API_KEY, url: process.env.ANTHROPIC_BASE_URL };
beforeEach(() => {
  process.env.ANTHROPIC_API_KEY = KEY;
  delete process.env.ANTHROPIC_BASE_URL;
});
afterEach(() => {
  if (saved.key === undefined) delete process.env.ANTHROPIC_API_KEY;
  else process.env.ANTHROPIC_API_KEY = saved.key;
  if (saved.url !== undefined) process.env.ANTHROPIC_BASE_URL = saved.url;
});

const FAST = { retryBaseDelayMs: 1, retryMaxDelayMs: 20, retryMaxAttempts: 3 };

async function mock(script: AnthropicScript): Promise<MockAnthropicServer> {
  const s = await startMockAnthropic({ apiKey: KEY, script });
  t.closers.push(s);
  return s;
}

interface Booted {
  kernel: Kernel;
  home: string;
  failures: RuntimeErrorInfo[];
  service: DebugLogService;
}

async function boot(server: MockAnthropicServer, debugLog: Record<string, unknown> | undefined, extra: Plugin[] = [], home = t.tmp('la-debuglog-')): Promise<Booted> {
  const failures: RuntimeErrorInfo[] = [];
  const watcher: Plugin = { name: 'test-failures', apply: (ctx) => void ctx.hooks.failed.tap((e) => void failures.push(e)) };
  // Only the base URL in settings: the key comes from the environment, as for a real user.
  const settings: Settings = { providers: { claude_code: { baseUrl: server.url } }, runtime: FAST, ...(debugLog ? { debugLog } : {}) };
  const kernel = await createKernel({ home, plugins: [watcher, anthropicPlugin, debugLogPlugin, ...extra], settings, thirdParty: false, logSink: () => {} });
  t.kernels.push(kernel);
  return { kernel, home, failures, service: kernel.services.get<DebugLogService>(DEBUG_LOG_SERVICE)! };
}

async function run(b: Booted, opts: Partial<RunOptions>) {
  const handle = b.kernel.runtime.startRun({ input: [{ type: 'text', text: 'Weather in Paris?' }], mode: 'agent-dev', provider: 'claude_code', ...opts });
  const events: LifecycleEvent[] = [];
  for await (const e of handle.events) events.push(e);
  const result = await handle.result;
  await b.service.flush();
  return { result, events, file: b.service.fileFor(result.conversationId) };
}

type Rec = Record<string, any>;
const read = (file: string): Rec[] => fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
const sha = (s: string) => createHash('sha256').update(s).digest('hex').slice(0, 12);

/** A real PNG of random pixels (it does not compress): providers check the header before sending. */
function noisePng(side: number): Buffer {
  const chunk = (type: string, body: Buffer) => {
    const head = Buffer.alloc(4);
    head.writeUInt32BE(body.length);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(zlib.crc32(Buffer.concat([Buffer.from(type), body])));
    return Buffer.concat([head, Buffer.from(type), body, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(side, 0);
  ihdr.writeUInt32BE(side, 4);
  ihdr.set([8, 2, 0, 0, 0], 8); // 8-bit RGB
  const rows = Buffer.concat(Array.from({ length: side }, () => Buffer.concat([Buffer.from([0]), randomBytes(side * 3)])));
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', ihdr), chunk('IDAT', zlib.deflateSync(rows)), chunk('IEND', Buffer.alloc(0))]);
}

const weatherTool: Plugin = {
  name: 'test-weather',
  apply(ctx) {
    ctx.registerTool({
      name: 'get_weather',
      description: 'Current weather for a city',
      parameters: z.object({ location: z.string() }),
      async execute(args) {
        return { content: [{ type: 'text', text: `${args.location}: 21°C` }] };
      },
    });
  },
};

/** Changes the request at a normal stage and at a late one: the log must show both changes. */
const requestChanger: Plugin = {
  name: 'test-request-changer',
  apply(ctx) {
    ctx.sessionHooks.providerRequest.tap((req) => ({ ...req, system: [...req.system, { id: 'early-tap', text: 'Added at stage 0.' }] }));
    ctx.sessionHooks.providerRequest.tap((req) => ({ ...req, system: [...req.system, { id: 'late-tap', text: 'Added at stage 1e9.' }] }), { stage: 1e9 });
  },
};

describe('agent-dev runs write the debug log', () => {
  it('records the request as sent (after every providerRequest tap), the reply coalesced per block, and never the API key', async () => {
    const pieces = Array.from({ length: 50 }, (_, i) => `w${i} `);
    const s = await mock(() => anthropicReply({ thinking: { text: ['Let me ', 'think.'], signature: 'sig-1' }, text: pieces }));
    const b = await boot(s, undefined, [requestChanger]);
    const { result, file } = await run(b, { input: [{ type: 'text', text: `Here is my key ${KEY}, keep it safe.` }] });
    expect(result.status).toBe('completed');
    expect(file).toBe(path.join(b.home, 'debug', `${result.conversationId}.jsonl`));

    const text = fs.readFileSync(file, 'utf8');
    expect(text).not.toContain(KEY);
    expect(text).not.toContain(KEY.slice(0, 24));
    // The provider did get the key and the pasted text: redaction is the log's alone.
    expect(s.requests[0]!.headers['x-api-key'] ?? s.requests[0]!.headers.authorization).toContain(KEY);

    const recs = read(file);
    expect(recs.map((r) => r.kind)).toEqual([
      'agent_start',
      'turn_start',
      'provider_request',
      'message_start',
      'wire_request',
      ...Array(6).fill('provider_event'), // thinking start/end, text start/end, usage, done
      'message_end',
      'turn_end',
      'agent_end',
    ]);
    const req = recs.find((r) => r.kind === 'provider_request')!;
    expect(req.request.system.map((p: { id: string }) => p.id)).toEqual(['base', 'early-tap', 'late-tap']);
    expect(s.requests[0]!.body.system.map((p: { text: string }) => p.text).join('\n')).toContain('Added at stage 1e9.');
    expect(req.request.messages[0].content[0].text).toMatch(/^Here is my key \[REDACTED secret len=\d+\], keep it safe\.$/);
    expect(req).toMatchObject({ provider: 'claude_code', model: 'claude-sonnet-4-6', round: 1, requestId: `${result.runId}.1.1` });

    // The body exactly as the provider put it on the wire: its cache breakpoints and max_tokens included.
    const wire = recs.find((r) => r.kind === 'wire_request')!;
    expect(wire).toMatchObject({ api: 'messages', requestId: `${result.runId}.1.1`, body: { model: 'claude-sonnet-4-6', stream: true } });
    expect(wire.body.max_tokens).toBe(s.requests[0]!.body.max_tokens);
    expect(JSON.stringify(wire.body)).toContain('cache_control');
    expect(JSON.stringify(wire.body)).not.toContain(KEY.slice(0, 24));
    const events = recs.filter((r) => r.kind === 'provider_event');
    expect(events.map((r) => r.event.type)).toEqual(['block_start', 'block_end', 'block_start', 'block_end', 'usage', 'done']);
    expect(events[1]).toMatchObject({ deltas: 2, event: { block: { type: 'thinking', thinking: 'Let me think.', signature: 'sig-1' } } });
    expect(events[3]).toMatchObject({ deltas: 50, event: { block: { type: 'text', text: pieces.join('') } } });
    expect(events[3]).not.toHaveProperty('streamed');
    expect(recs.filter((r) => r.kind === 'message_update')).toEqual([]);
  });

  it('a 50,000-delta reply is one block record, not 50,000 lines', async () => {
    const s = await mock(() => anthropicTextStream(50_000));
    const b = await boot(s, undefined);
    const { result, file } = await run(b, {});
    expect(result.status).toBe('completed');
    const recs = read(file);
    expect(recs.length).toBeLessThan(15);
    const end = recs.find((r) => r.kind === 'provider_event' && r.event.type === 'block_end')!;
    expect(end.deltas).toBe(50_000);
    expect(end.event.block.text.startsWith('tok0 tok1 tok2')).toBe(true);
  }, 90_000); // 50,000 deltas through the real SDK: slow on a busy 2-core machine, not a threshold

  it('tool calls, results, turn ends and agent_end carry the run, the round and the request they belong to', async () => {
    const s = await mock((_req, i) =>
      i === 0 ? anthropicReply({ text: 'Checking.', toolUses: [{ id: 'toolu_01', name: 'get_weather', input: { location: 'Paris' } }] }) : anthropicReply({ text: 'It is 21°C.' }),
    );
    const b = await boot(s, undefined, [weatherTool]);
    const { result, file } = await run(b, {});
    expect(result.status).toBe('completed');
    const recs = read(file);
    for (const r of recs) {
      expect(typeof r.ts).toBe('number');
      expect(r).toMatchObject({ conversationId: result.conversationId, runId: result.runId });
      expect(typeof r.round).toBe('number');
    }
    const call = recs.find((r) => r.kind === 'tool_call')!;
    const res = recs.find((r) => r.kind === 'tool_result')!;
    expect(call).toMatchObject({ round: 1, requestId: `${result.runId}.1.1`, toolCallId: 'toolu_01', toolName: 'get_weather', args: { location: 'Paris' } });
    expect(res).toMatchObject({ round: 1, requestId: `${result.runId}.1.1`, toolCallId: 'toolu_01', isError: false, result: { content: [{ type: 'text', text: 'Paris: 21°C' }] } });
    expect(typeof res.durationMs).toBe('number');
    const requests = recs.filter((r) => r.kind === 'provider_request');
    expect(requests.map((r) => [r.round, r.requestId])).toEqual([
      [1, `${result.runId}.1.1`],
      [2, `${result.runId}.2.1`],
    ]);
    // Round 2's request carries the call and its result, as the provider got them.
    expect(requests[1]!.request.messages.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant', 'tool']);
    expect(recs.filter((r) => r.kind === 'turn_end').map((r) => [r.round, r.toolResults])).toEqual([
      [1, 1],
      [2, 0],
    ]);
    const end = recs.at(-1)!;
    expect(end).toMatchObject({ kind: 'agent_end', round: 2, status: 'completed', usage: { inputTokens: 50, outputTokens: expect.any(Number) } });
    expect(end.seq).toBe(Math.max(...recs.filter((r) => typeof r.seq === 'number').map((r) => r.seq)));
  });

  it('rawEvents writes every provider event and every message_update', async () => {
    const s = await mock(() => anthropicReply({ text: ['a', 'b', 'c'] }));
    const b = await boot(s, { rawEvents: true });
    const { file } = await run(b, {});
    const recs = read(file);
    expect(recs.filter((r) => r.kind === 'provider_event' && r.event.type === 'text_delta').map((r) => r.event.text)).toEqual(['a', 'b', 'c']);
    expect(recs.filter((r) => r.kind === 'message_update')).toHaveLength(4); // 3 text + the block
  });

  it('a blocked or failing tool-call hook leaves a `hook` record; a result changed by afterToolCall keeps what it was', async () => {
    const s = await mock((_req, i) =>
      i === 0 ? anthropicReply({ toolUses: [{ id: 'toolu_a', name: 'get_weather', input: { location: 'Paris' } }, { id: 'toolu_b', name: 'get_weather', input: { location: 'Oslo' } }] }) : anthropicReply({ text: 'ok' }),
    );
    const gate: Plugin = {
      name: 'test-gate',
      apply(ctx) {
        ctx.sessionHooks.beforeToolCall.tap((call) => (call.input.location === 'Oslo' ? { block: true, reason: 'no Oslo' } : undefined));
        ctx.sessionHooks.afterToolCall.tap((r) => ({ ...r, content: [{ type: 'text', text: 'rewritten' }] }));
      },
    };
    const b = await boot(s, undefined, [weatherTool, gate]);
    const { file } = await run(b, {});
    const hooks = read(file).filter((r) => r.kind === 'hook');
    expect(hooks).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ hook: 'beforeToolCall', outcome: 'blocked', toolCallId: 'toolu_b', reason: 'Tool call blocked: no Oslo' }),
        expect.objectContaining({ hook: 'afterToolCall', outcome: 'changed', toolCallId: 'toolu_a', before: { content: [{ type: 'text', text: 'Paris: 21°C' }] } }),
      ]),
    );
  });
});

describe('when nothing is written', () => {
  it('text and tools runs without debugLog.enabled write nothing (not even the folder); with it they are logged', async () => {
    const s = await mock(() => anthropicReply({ text: 'Hello!' }));
    const b = await boot(s, undefined);
    for (const mode of ['text', 'tools'] as const) expect((await run(b, { mode })).result.status).toBe('completed');
    expect(fs.existsSync(path.join(b.home, 'debug'))).toBe(false);

    const on = await boot(s, { enabled: true });
    const { result, file } = await run(on, { mode: 'text' });
    expect(read(file).at(-1)).toMatchObject({ kind: 'agent_end', runId: result.runId, status: 'completed' });
  });
});

describe('redaction on the way to disk', () => {
  it('a base64 image in the request becomes a marker with its length and sha256 prefix; the provider still gets it', async () => {
    const data = noisePng(40).toString('base64');
    expect(data.length).toBeGreaterThan(4000);
    const s = await mock(() => anthropicReply({ text: 'A red square.' }));
    const b = await boot(s, undefined);
    const input: ContentBlock[] = [
      { type: 'text', text: 'What is this?' },
      { type: 'image', mimeType: 'image/png', data },
    ];
    const { file } = await run(b, { input });
    const sent = s.requests[0]!.body.messages[0].content.find((c: { type: string }) => c.type === 'image');
    expect(sent.source.data).toBe(data);
    const text = fs.readFileSync(file, 'utf8');
    expect(text).not.toContain(data.slice(0, 64));
    const marker = `[REDACTED base64 len=${data.length} sha256=${sha(data)}]`;
    const recs = read(file);
    expect(recs.find((r) => r.kind === 'agent_start')!.userMessage.content[1]).toEqual({ type: 'image', mimeType: 'image/png', data: marker });
    expect(recs.find((r) => r.kind === 'provider_request')!.request.messages[0].content[1]).toEqual({ type: 'image', mimeType: 'image/png', data: marker });
  });
});

describe('files', () => {
  it('rotates a conversation file by size through the kernel, keeping maxFiles files', async () => {
    const s = await mock(() => anthropicReply({ text: 'x'.repeat(300) }));
    const b = await boot(s, { maxFileBytes: 4096, maxFiles: 2 });
    let conversationId: string | undefined;
    for (let i = 0; i < 6; i++) conversationId = (await run(b, conversationId ? { conversationId } : {})).result.conversationId;
    const names = fs.readdirSync(path.join(b.home, 'debug')).sort();
    expect(names).toEqual([`${conversationId}.1.jsonl`, `${conversationId}.jsonl`]);
    const last = read(path.join(b.home, 'debug', `${conversationId}.jsonl`));
    expect(last.at(-1)).toMatchObject({ kind: 'agent_end' });
  });

  it('deletes debug files older than retentionDays at start-up, and leaves others', async () => {
    const home = t.tmp('la-debuglog-');
    const dir = path.join(home, 'debug');
    fs.mkdirSync(dir);
    const old = (Date.now() - 20 * 86_400_000) / 1000;
    for (const name of ['c_old.jsonl', 'c_old.1.jsonl', 'c_new.jsonl', 'README.txt']) fs.writeFileSync(path.join(dir, name), '{}\n');
    for (const name of ['c_old.jsonl', 'c_old.1.jsonl', 'README.txt']) fs.utimesSync(path.join(dir, name), old, old);
    const s = await mock(() => anthropicReply({ text: 'hi' }));
    const b = await boot(s, undefined, [], home);
    expect(await b.service.collected).toBe(2);
    expect(fs.readdirSync(dir).sort()).toEqual(['README.txt', 'c_new.jsonl']);

    const keepAll = await boot(s, { retentionDays: 30 }, [], home);
    expect(await keepAll.service.collected).toBe(0);
  });

  it('a debug folder that cannot be written (a file in the way) fails no run and is reported once', async () => {
    const s = await mock(() => anthropicReply({ text: 'fine' }));
    const home = t.tmp('la-debuglog-');
    fs.writeFileSync(path.join(home, 'debug'), 'not a folder');
    const b = await boot(s, undefined, [], home);
    const first = await run(b, {});
    const second = await run(b, { conversationId: first.result.conversationId });
    expect([first.result.status, second.result.status]).toEqual(['completed', 'completed']);
    expect(second.events.filter((e) => e.type === 'error')).toEqual([]);
    const mine = b.failures.filter((f) => f.plugin === 'debug-log');
    expect(mine).toHaveLength(1);
    expect(mine[0]!.message).toContain(path.join(home, 'debug'));
    expect(fs.readFileSync(path.join(home, 'debug'), 'utf8')).toBe('not a folder');
  });

  it('shutdown flushes what is still queued', async () => {
    const s = await mock(() => anthropicReply({ text: 'bye' }));
    const b = await boot(s, undefined);
    const handle = b.kernel.runtime.startRun({ input: [{ type: 'text', text: 'hi' }], mode: 'agent-dev', provider: 'claude_code' });
    const result = await handle.result;
    await b.kernel.shutdown();
    expect(read(b.service.fileFor(result.conversationId)).at(-1)).toMatchObject({ kind: 'agent_end', status: 'completed' });
  });

  it('an invalid debugLog setting stops only this plugin, naming the key', async () => {
    const s = await mock(() => anthropicReply({ text: 'hi' }));
    const b = await boot(s, { maxFiles: 0 });
    const entry = b.kernel.loaded.find((p) => p.name === 'debug-log')!;
    expect(entry.status).toBe('failed');
    expect(entry.error!.message).toContain('debugLog.maxFiles');
  });
});
