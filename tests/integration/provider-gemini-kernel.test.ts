/**
 * The provider-gemini plugin inside a kernel: settings pointing `gemini` at the mock, runs via
 * `kernel.runtime.startRun`, a function-call round trip with a real tool registered by a test
 * plugin, the kernel's retry decisions on our error events, grounding, the environment, and
 * custom providers from settings (and their errors).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { LifecycleEvent, Plugin, Settings } from '../../plugin-api.js';
import { createKernel, type Kernel } from '../../core/kernel.js';
import geminiPlugin, { createGeminiPlugin } from '../../plugins/provider-gemini/index.js';
import { MOCK_THOUGHT_SIGNATURE, fixtureEvents, geminiError, geminiErrors, geminiReply, geminiStream, googleJson, loadGeminiFixture, type GeminiMockServer } from '../fixtures/mock-gemini.js';
import { KEY, closeMocks, mock } from './provider-gemini-harness.js';

const kernels: Kernel[] = [];
const homes: string[] = [];
const ENV_KEYS = ['GEMINI_API_KEY', 'GEMINI_BASE_URL', 'ACME_GEMINI_KEY'];
const savedEnv = Object.fromEntries(ENV_KEYS.map((k) => [k, process.env[k]]));
afterEach(async () => {
  for (const k of kernels.splice(0)) await k.shutdown();
  for (const h of homes.splice(0)) fs.rmSync(h, { recursive: true, force: true });
  await closeMocks();
  for (const k of ENV_KEYS) {
    if (savedEnv[k] === undefined) delete process.env[k];
    else process.env[k] = savedEnv[k];
  }
});

const FAST = { retryBaseDelayMs: 1, retryMaxDelayMs: 200, retryMaxAttempts: 3 };
type Log = Array<{ level: string; source: string; message: string }>;

async function boot(settings: Settings, extra: Plugin[] = [], plugin: Plugin = geminiPlugin): Promise<{ kernel: Kernel; log: Log }> {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'la-gemini-'));
  homes.push(home);
  const log: Log = [];
  const kernel = await createKernel({ home, plugins: [plugin, ...extra], settings, thirdParty: false, logSink: (level, source, message) => void log.push({ level, source, message }) });
  kernels.push(kernel);
  return { kernel, log };
}

const geminiAt = (s: { url: string }, more: Record<string, unknown> = {}): Settings => ({ providers: { gemini: { baseUrl: s.url, apiKey: KEY, ...more } }, runtime: FAST });

async function run(kernel: Kernel, opts: Parameters<Kernel['runtime']['startRun']>[0] = {}) {
  const handle = kernel.runtime.startRun({ input: [{ type: 'text', text: 'Weather in Paris and London?' }], mode: 'tools', provider: 'gemini', ...opts });
  const events: LifecycleEvent[] = [];
  for await (const e of handle.events) events.push(e);
  return { result: await handle.result, events };
}

const calls: unknown[] = [];
const temperatureTool: Plugin = {
  name: 'test-temperature',
  apply(ctx) {
    ctx.registerTool({
      name: 'get_current_temperature',
      description: 'Current temperature for a city',
      parameters: z.object({ location: z.string().min(1), unit: z.enum(['celsius', 'fahrenheit']).optional() }),
      concurrency: 'parallel',
      async execute(args: { location: string }) {
        calls.push(args);
        return { content: [{ type: 'text', text: `${args.location}: 21°C` }] };
      },
    });
  },
};

describe('runs through the kernel', () => {
  it('streams a text reply with usage; the default model is gemini-2.5-flash', async () => {
    const s = await mock(() => geminiStream(fixtureEvents(loadGeminiFixture('text-stream'))));
    const { kernel } = await boot(geminiAt(s));
    const { result, events } = await run(kernel, { mode: 'text' });
    expect(result.status).toBe('completed');
    expect(result.messages[0]).toMatchObject({
      role: 'assistant',
      provider: 'gemini',
      model: 'gemini-2.5-flash',
      stopReason: 'end',
      content: [{ type: 'text', text: expect.stringContaining('Jambo 👋') }],
      usage: { inputTokens: 6, outputTokens: 148, reasoningTokens: 117 },
    });
    expect(events.filter((e) => e.type === 'message_update' && e.delta.kind === 'text')).toHaveLength(2);
    expect(s.requests[0]!.body.systemInstruction.parts[0].text).toContain('LiveAgent');
    expect(s.requests[0]!.headers['x-goog-api-key']).toBe(KEY);
  });

  it('a function-call round trip: the tool runs, and round 2 carries the signed calls and named function responses', async () => {
    calls.length = 0;
    const s = await mock((req, i) => {
      if (i === 0) return geminiStream(geminiReply({ thoughts: 'Two cities: call the tool twice.', functionCalls: [{ name: 'get_current_temperature', args: { location: 'Paris' } }, { name: 'get_current_temperature', args: { location: 'London' } }] }));
      // Round 2 must hold the calls (the first signed) and their responses, or the real API answers 400.
      const contents = req.body.contents;
      const ok =
        JSON.stringify(contents[1]) === JSON.stringify({ role: 'model', parts: [{ functionCall: { name: 'get_current_temperature', args: { location: 'Paris' } }, thoughtSignature: MOCK_THOUGHT_SIGNATURE }, { functionCall: { name: 'get_current_temperature', args: { location: 'London' } } }] }) &&
        JSON.stringify(contents[2]) === JSON.stringify({ role: 'user', parts: [{ functionResponse: { name: 'get_current_temperature', response: { output: 'Paris: 21°C' } } }, { functionResponse: { name: 'get_current_temperature', response: { output: 'London: 21°C' } } }] });
      return ok ? geminiStream(geminiReply({ text: 'Both are at 21°C.' })) : geminiError(400, 'INVALID_ARGUMENT', `bad round 2: ${googleJson(contents)}`);
    });
    const { kernel } = await boot(geminiAt(s), [temperatureTool]);
    const { result, events } = await run(kernel);
    expect(result.error).toBeUndefined();
    expect(result.status).toBe('completed');
    expect(calls).toEqual([{ location: 'Paris' }, { location: 'London' }]);
    expect(events.filter((e) => e.type === 'tool_execution_end')).toHaveLength(2);
    expect(s.requests).toHaveLength(2);
    const first = s.requests[0]!.body;
    expect(first.tools).toEqual([{ functionDeclarations: [{ name: 'get_current_temperature', description: 'Current temperature for a city', parameters: { type: 'object', properties: { location: { type: 'string', minLength: 1 }, unit: { type: 'string', format: 'enum', enum: ['celsius', 'fahrenheit'] } }, required: ['location'] } }] }]);
    // Our ids stay in our history: the stored calls and results pair by them.
    const [assistant, toolMsg] = result.messages;
    const ids = assistant!.content.flatMap((b) => (b.type === 'tool_call' ? [b.id] : []));
    expect(ids).toHaveLength(2);
    expect(toolMsg!.content.map((b) => (b.type === 'tool_result' ? b.toolCallId : ''))).toEqual(ids);
    expect(assistant!.stopReason).toBe('tool_use');
    expect(result.messages.at(-1)).toMatchObject({ content: [{ type: 'text', text: 'Both are at 21°C.' }], stopReason: 'end' });
  });

  it('grounding becomes a hosted_search block and text citations in the stored message', async () => {
    const s = await mock(() => geminiStream(fixtureEvents(loadGeminiFixture('grounding-google-search'))));
    const { kernel } = await boot(geminiAt(s, { webSearch: true }));
    const { result, events } = await run(kernel, { mode: 'text' });
    expect(result.status).toBe('completed');
    expect(s.requests[0]!.body.tools).toEqual([{ googleSearch: {} }]);
    const content = result.messages[0]!.content;
    expect(content[0]).toMatchObject({ type: 'text', citations: [{ title: 'aljazeera.com' }, { title: 'aljazeera.com' }, { title: 'uefa.com' }] });
    expect(content[1]).toMatchObject({ type: 'hosted_search', provider: 'gemini', queries: ['UEFA Euro 2024 winner', 'who won euro 2024'], status: 'completed', sources: [{ title: 'aljazeera.com' }, { title: 'uefa.com' }] });
    expect(events.some((e) => e.type === 'message_update' && e.delta.kind === 'block' && e.delta.block.type === 'hosted_search')).toBe(true);
  });

  it('thought summaries stream as thinking; the signature goes back on the next round', async () => {
    const s = await mock((_req, i) => geminiStream(i === 0 ? fixtureEvents(loadGeminiFixture('thinking-stream')) : geminiReply({ text: 'Still 51.' })));
    const { kernel } = await boot(geminiAt(s));
    const first = await run(kernel, { mode: 'text', input: [{ type: 'text', text: '17 × 3?' }] });
    expect(first.result.messages[0]!.content.map((b) => b.type)).toEqual(['thinking', 'text']);
    expect(first.events.some((e) => e.type === 'message_update' && e.delta.kind === 'thinking')).toBe(true);
    await run(kernel, { mode: 'text', conversationId: first.result.conversationId, input: [{ type: 'text', text: 'Sure?' }] });
    expect(s.requests[1]!.body.contents[1]).toEqual({ role: 'model', parts: [{ text: '17 × 3 = **51**.', thoughtSignature: 'Q2lJQk1vY2tUaG91Z2h0U2lnbmF0dXJlRm9yVGVzdHM=' }] });
  });
});

describe('kernel retries on our error events', () => {
  it('503 overloaded is retried by the kernel (the SDK never retries on its own)', async () => {
    const s = await mock((_req, i) => (i === 0 ? geminiErrors.overloaded() : geminiStream(geminiReply({ text: 'ok' }))));
    const { kernel } = await boot(geminiAt(s));
    const { result, events } = await run(kernel, { mode: 'text' });
    expect(result.status).toBe('completed');
    expect(s.requests).toHaveLength(2);
    expect(events.find((e) => e.type === 'notice')).toMatchObject({ payload: { kind: 'retry', status: 503 } });
  });

  it('429 without a quota message is retried honouring RetryInfo; 429 quota and 400 bad key are not', async () => {
    const limited = geminiError(429, 'RESOURCE_EXHAUSTED', 'Too many requests.', undefined, [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '0.03s' }]);
    const s = await mock((_req, i) => (i === 0 ? limited : geminiStream(geminiReply({ text: 'ok' }))));
    const { kernel } = await boot(geminiAt(s));
    const r1 = await run(kernel, { mode: 'text' });
    expect(r1.result.status).toBe('completed');
    expect(r1.events.find((e) => e.type === 'notice')).toMatchObject({ payload: { kind: 'retry', status: 429, delayMs: 30 } });

    const quota = await mock(() => geminiErrors.dailyQuota('0.01s'));
    const { kernel: k2 } = await boot(geminiAt(quota));
    const r2 = await run(k2, { mode: 'text' });
    expect(r2.result.status).toBe('error');
    expect(r2.result.error?.message).toContain('exceeded your current quota');
    expect(quota.requests).toHaveLength(1);

    const bad = await mock();
    const { kernel: k3 } = await boot({ providers: { gemini: { baseUrl: bad.url, apiKey: 'wrong' } }, runtime: FAST });
    const r3 = await run(k3, { mode: 'text' });
    expect(r3.result.error?.message).toContain('API key not valid');
    expect(bad.requests).toHaveLength(1);
  });

  it('an early EOF after text fails the run once, keeping the partial text', async () => {
    const events = geminiReply({ text: ['Half', ' a reply', ' never ends'] });
    const cut = events.slice(0, 2).reduce((n, e) => n + Buffer.byteLength(`data: ${googleJson(e.data)}\r\n\r\n`), 0) + 5;
    const s = await mock(() => geminiStream(events, { truncateAfterBytes: cut }));
    const { kernel } = await boot(geminiAt(s));
    const { result } = await run(kernel, { mode: 'text' });
    expect(result.status).toBe('error');
    expect(s.requests).toHaveLength(1);
    expect(result.messages[0]).toMatchObject({ content: [{ type: 'text', text: 'Half a reply' }], stopReason: 'error', meta: { partial: true } });
  });

  it('a blocked prompt fails the run with a clear message, without retry', async () => {
    const s = await mock(() => geminiStream(fixtureEvents(loadGeminiFixture('prompt-blocked'))));
    const { kernel } = await boot(geminiAt(s));
    const { result } = await run(kernel, { mode: 'text' });
    expect(result.status).toBe('error');
    expect(result.error?.message).toBe('Gemini: the prompt was blocked (blockReason SAFETY, DANGEROUS_CONTENT)');
    expect(s.requests).toHaveLength(1);
  });
});

describe('settings and environment', () => {
  it('reads GEMINI_API_KEY and GEMINI_BASE_URL; settings override them', async () => {
    const s = await mock();
    delete process.env.GEMINI_API_KEY;
    process.env.GEMINI_BASE_URL = s.url;
    const { kernel } = await boot({ runtime: FAST });
    const provider = kernel.runtime.provider('gemini')!;
    expect(provider.isConfigured(kernel.settings.get())).toBe(false);
    process.env.GEMINI_API_KEY = KEY;
    expect(provider.isConfigured(kernel.settings.get())).toBe(true);
    expect((await run(kernel, { mode: 'text' })).result.status).toBe('completed');
    expect(s.requests[0]!.headers['x-goog-api-key']).toBe(KEY);

    process.env.GEMINI_API_KEY = 'wrong-env-key';
    process.env.GEMINI_BASE_URL = 'http://127.0.0.1:1';
    const { kernel: k2 } = await boot({ providers: { gemini: { apiKey: KEY, baseUrl: s.url, defaultModel: 'gemini-2.5-pro' } }, runtime: FAST });
    expect((await run(k2, { mode: 'text' })).result.status).toBe('completed');
    expect(s.requests[1]!.path).toBe('/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse');
    expect(s.requests[1]!.headers['x-goog-api-key']).toBe(KEY);
  });

  it('apiKeyEnv names another variable; the plugin factory can take its own environment', async () => {
    const s = await mock();
    const env = { ACME_GEMINI_KEY: KEY, GEMINI_BASE_URL: s.url };
    const { kernel } = await boot({ providers: { gemini: { apiKeyEnv: 'ACME_GEMINI_KEY' } }, runtime: FAST }, [], createGeminiPlugin({ env }));
    expect((await run(kernel, { mode: 'text' })).result.status).toBe('completed');
  });

  it('no key: not configured, and a run fails with a message saying where to put one', async () => {
    delete process.env.GEMINI_API_KEY;
    const { kernel } = await boot({ runtime: FAST });
    expect(kernel.runtime.provider('gemini')!.isConfigured(kernel.settings.get())).toBe(false);
    const { result } = await run(kernel, { mode: 'text' });
    expect(result.status).toBe('error');
    expect(result.error?.message).toContain('GEMINI_API_KEY');
  });

  it('bad gemini settings give an error naming the provider and the field; unknown keys are warned about', async () => {
    const s = await mock();
    const { kernel, log } = await boot(geminiAt(s, { thinkingBudget: -5, webSearh: true }));
    expect(log.some((l) => l.level === 'error' && /provider "gemini": settings providers\.gemini\.thinkingBudget: /.test(l.message))).toBe(true);
    expect(log.some((l) => l.level === 'warn' && l.message.includes('providers.gemini.webSearh'))).toBe(true);
    expect(kernel.runtime.provider('gemini')!.isConfigured(kernel.settings.get())).toBe(false);
    const { result } = await run(kernel, { mode: 'text' });
    expect(result.error?.message).toMatch(/provider "gemini": settings providers\.gemini\.thinkingBudget: /);
    expect(s.requests).toHaveLength(0);
  });

  it('catalog: gemini lists its models with limits, thinking and prices', async () => {
    const { kernel } = await boot({});
    const p = kernel.runtime.provider('gemini')!;
    expect(p).toMatchObject({ displayName: 'Gemini', defaultModel: 'gemini-2.5-flash' });
    expect(p.models?.map((m) => m.id)).toEqual(expect.arrayContaining(['gemini-2.5-pro', 'gemini-2.5-flash']));
    expect(p.models?.find((m) => m.id === 'gemini-2.5-pro')).toMatchObject({ contextWindow: 1_048_576, maxOutputTokens: 65_536, thinking: true, price: { input: 1.25, output: 10 } });
  });

  it('the SDK is imported lazily, never at module top level', () => {
    const dir = path.resolve(import.meta.dirname, '../../plugins/provider-gemini');
    for (const f of fs.readdirSync(dir).filter((n) => n.endsWith('.ts'))) {
      const src = fs.readFileSync(path.join(dir, f), 'utf8');
      // Static value imports (type-only ones are erased); the dynamic import() is the lazy one.
      expect(src, f).not.toMatch(/^(import|export)\s+(?!type\b)[^;]*?\bfrom\s*['"]@google\/generative-ai['"]/m);
      expect(src, f).not.toMatch(/^import\s+['"]@google\/generative-ai['"]/m);
    }
  });
});

describe('custom providers with format gemini', () => {
  const custom = (s: GeminiMockServer, extra: Record<string, unknown> = {}) => ({
    id: 'vertexish',
    name: 'My Gemini proxy',
    format: 'gemini' as const,
    baseUrl: s.url,
    apiKey: KEY,
    defaultModel: 'gemini-proxy-large',
    models: [{ id: 'gemini-proxy-large', maxOutputTokens: 1000, contextWindow: 100_000, thinking: false }],
    ...extra,
  });

  it('registers one provider per entry, with its id, name, endpoint, key, default model and models', async () => {
    const s = await mock();
    const { kernel } = await boot({ customProviders: [custom(s), { id: 'other', format: 'openai-chat', baseUrl: 'http://127.0.0.1:1/v1' }], runtime: FAST });
    const p = kernel.runtime.provider('vertexish')!;
    expect(p).toMatchObject({ id: 'vertexish', displayName: 'My Gemini proxy', defaultModel: 'gemini-proxy-large', models: [{ id: 'gemini-proxy-large' }] });
    expect(kernel.runtime.provider('other')).toBeUndefined();
    const { result } = await run(kernel, { provider: 'vertexish', mode: 'text' });
    expect(result.status).toBe('completed');
    expect(result.messages[0]).toMatchObject({ provider: 'vertexish', model: 'gemini-proxy-large' });
    expect(s.requests[0]!.path).toBe('/v1beta/models/gemini-proxy-large:streamGenerateContent?alt=sse');
    // Its catalog says no thinking: no thinkingConfig.
    expect(s.requests[0]!.body.generationConfig).toEqual({});
  });

  it('apiKeyEnv is read at request time, never GEMINI_API_KEY; an entry with neither key is keyless', async () => {
    const s = await mock();
    process.env.GEMINI_API_KEY = KEY;
    delete process.env.ACME_GEMINI_KEY;
    const { kernel } = await boot({ customProviders: [custom(s, { apiKey: undefined, apiKeyEnv: 'ACME_GEMINI_KEY' }), custom(s, { id: 'open', apiKey: undefined })], runtime: FAST });
    const p = kernel.runtime.provider('vertexish')!;
    expect(p.isConfigured(kernel.settings.get())).toBe(false);
    process.env.ACME_GEMINI_KEY = KEY;
    expect(p.isConfigured(kernel.settings.get())).toBe(true);
    expect((await run(kernel, { provider: 'vertexish', mode: 'text' })).result.status).toBe('completed');
    const open = kernel.runtime.provider('open')!;
    expect(open.isConfigured(kernel.settings.get())).toBe(true);
    await run(kernel, { provider: 'open', mode: 'text' });
    expect(s.requests.at(-1)!.headers['x-goog-api-key']).toBe('');
  });

  it('re-registers when settings change: new entries appear, removed ones go', async () => {
    const s = await mock();
    const { kernel } = await boot({ customProviders: [custom(s)], runtime: FAST });
    await kernel.settings.update({ customProviders: [custom(s, { id: 'second', name: 'Second' })] });
    expect(kernel.runtime.provider('vertexish')).toBeUndefined();
    expect(kernel.runtime.provider('second')?.displayName).toBe('Second');
    expect(kernel.runtime.provider('gemini')).toBeDefined();
    expect((await run(kernel, { provider: 'second', mode: 'text' })).result.status).toBe('completed');
    await kernel.settings.update({ customProviders: [] });
    expect(kernel.runtime.provider('second')).toBeUndefined();
  });

  it('a bad entry gives an error naming the provider and the field; the others still work; an id clash is refused by name', async () => {
    const s = await mock();
    const { kernel, log } = await boot({ customProviders: [custom(s, { id: 'broken', thinkingBudget: 'lots' }), custom(s), custom(s, { id: 'gemini' })], runtime: FAST });
    const errors = log.filter((l) => l.level === 'error').map((l) => l.message);
    expect(errors).toContainEqual(expect.stringMatching(/^provider "broken": settings customProviders\[0\]\.thinkingBudget: /));
    expect(errors).toContainEqual(expect.stringContaining('custom provider "gemini" was not registered'));
    const { result } = await run(kernel, { provider: 'broken', mode: 'text' });
    expect(result.error?.message).toMatch(/provider "broken": settings customProviders\[0\]\.thinkingBudget/);
    expect((await run(kernel, { provider: 'vertexish', mode: 'text' })).result.status).toBe('completed');
    expect(kernel.runtime.provider('gemini')?.displayName).toBe('Gemini');
    expect(s.requests).toHaveLength(1);
  });
});
