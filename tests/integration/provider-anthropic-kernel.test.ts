/**
 * The provider-anthropic plugin inside a kernel: settings pointing claude_code at the mock, runs
 * through `kernel.runtime.startRun`, a real tool round trip, the kernel's retry decisions on
 * our error events, custom providers from settings (and their errors), and the environment.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { LifecycleEvent, Plugin, Settings } from '../../plugin-api.js';
import { createKernel, type Kernel } from '../../core/kernel.js';
import anthropicPlugin from '../../plugins/provider-anthropic/index.js';
import { anthropicError, anthropicReply, loadAnthropicFixture, startMockAnthropic, type MockAnthropicServer } from '../fixtures/mock-anthropic.js';
import { KEY, closeMocks, mock } from './provider-anthropic-harness.js';

const kernels: Kernel[] = [];
const homes: string[] = [];
const savedEnv = { ...process.env };
afterEach(async () => {
  for (const k of kernels.splice(0)) await k.shutdown();
  for (const h of homes.splice(0)) fs.rmSync(h, { recursive: true, force: true });
  await closeMocks();
  for (const k of ['ANTHROPIC_API_KEY', 'ANTHROPIC_BASE_URL', 'ACME_KEY']) {
    if (savedEnv[k] === undefined) delete process.env[k];
    else process.env[k] = savedEnv[k];
  }
});

const FAST = { retryBaseDelayMs: 1, retryMaxDelayMs: 50, retryMaxAttempts: 3 };
type Log = Array<{ level: string; source: string; message: string }>;

async function boot(settings: Settings, extra: Plugin[] = []): Promise<{ kernel: Kernel; log: Log }> {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'la-anthropic-'));
  homes.push(home);
  const log: Log = [];
  const kernel = await createKernel({ home, plugins: [anthropicPlugin, ...extra], settings, thirdParty: false, logSink: (level, source, message) => void log.push({ level, source, message }) });
  kernels.push(kernel);
  return { kernel, log };
}

const claudeAt = (s: MockAnthropicServer, more: Record<string, unknown> = {}): Settings => ({ providers: { claude_code: { baseUrl: s.url, apiKey: KEY, ...more } }, runtime: FAST });

async function run(kernel: Kernel, opts: Parameters<Kernel['runtime']['startRun']>[0]) {
  const handle = kernel.runtime.startRun({ input: [{ type: 'text', text: 'Weather in Paris?' }], mode: 'tools', ...opts });
  const events: LifecycleEvent[] = [];
  for await (const e of handle.events) events.push(e);
  return { result: await handle.result, events };
}

const calls: unknown[] = [];
const weatherTool: Plugin = {
  name: 'test-weather',
  apply(ctx) {
    ctx.registerTool({
      name: 'get_weather',
      description: 'Current weather for a city',
      parameters: z.object({ location: z.string(), unit: z.enum(['celsius', 'fahrenheit']) }),
      async execute(args) {
        calls.push(args);
        return { content: [{ type: 'text', text: `${args.location}: 21°C` }] };
      },
    });
  },
};

describe('runs through the kernel', () => {
  it('streams a text reply; claude_code and its alias anthropic are one provider', async () => {
    const s = await mock(() => loadAnthropicFixture('text-basic'));
    const { kernel } = await boot(claudeAt(s));
    expect(kernel.runtime.provider('anthropic')).toBe(kernel.runtime.provider('claude_code'));
    const { result, events } = await run(kernel, { provider: 'anthropic', mode: 'text' });
    expect(result.status).toBe('completed');
    expect(result.messages[0]).toMatchObject({ role: 'assistant', provider: 'claude_code', model: 'claude-sonnet-4-6', stopReason: 'end', content: [{ type: 'text', text: 'Hello!' }], usage: { inputTokens: 25, outputTokens: 15 } });
    const deltas = events.flatMap((e) => (e.type === 'message_update' && e.delta.kind === 'text' ? [e.delta.text] : []));
    expect(deltas).toEqual(['Hello', '!']);
    expect(s.requests[0]!.body.system[0].text).toContain('LiveAgent');
  });

  it('a tool call round trip: the tool runs with the parsed input, and round 2 carries the signed thinking, the call and its result', async () => {
    calls.length = 0;
    const s = await mock((_req, i) =>
      i === 0
        ? anthropicReply({ thinking: { text: ['I need ', 'the weather.'], signature: 'sig-round-1' }, text: 'Checking.', toolUses: [{ id: 'toolu_01', name: 'get_weather', input: { location: 'Paris', unit: 'celsius' } }] })
        : anthropicReply({ text: 'It is 21°C in Paris.' }),
    );
    const { kernel } = await boot(claudeAt(s, { thinkingBudget: 2048 }), [weatherTool]);
    const { result, events } = await run(kernel, { provider: 'claude_code' });
    expect(result.status).toBe('completed');
    expect(calls).toEqual([{ location: 'Paris', unit: 'celsius' }]);
    expect(events.filter((e) => e.type === 'tool_execution_end')).toHaveLength(1);
    expect(s.requests).toHaveLength(2);
    const [first, second] = s.requests.map((r) => r.body);
    expect(first.tools).toEqual([expect.objectContaining({ name: 'get_weather', input_schema: expect.objectContaining({ type: 'object' }) })]);
    expect(first.thinking).toEqual({ type: 'enabled', budget_tokens: 2048 });
    expect(second.messages.map((m: any) => m.role)).toEqual(['user', 'assistant', 'user']);
    expect(second.messages[1].content).toEqual([
      { type: 'thinking', thinking: 'I need the weather.', signature: 'sig-round-1' },
      { type: 'text', text: 'Checking.' },
      { type: 'tool_use', id: 'toolu_01', name: 'get_weather', input: { location: 'Paris', unit: 'celsius' } },
    ]);
    expect(second.messages[2].content).toEqual([{ type: 'tool_result', tool_use_id: 'toolu_01', content: 'Paris: 21°C', cache_control: { type: 'ephemeral' } }]);
    expect(second.thinking).toEqual({ type: 'enabled', budget_tokens: 2048 });
    expect(result.messages.at(-1)).toMatchObject({ content: [{ type: 'text', text: 'It is 21°C in Paris.' }] });
  });
});

describe('kernel retries on our error events', () => {
  it('529 overloaded is retried, honouring retry-after', async () => {
    const s = await mock((_req, i) => (i === 0 ? anthropicError(529, 'overloaded_error', 'Overloaded', { 'retry-after': '0.02' }) : anthropicReply({ text: 'ok' })));
    const { kernel } = await boot(claudeAt(s));
    const { result, events } = await run(kernel, { provider: 'claude_code', mode: 'text' });
    expect(result.status).toBe('completed');
    expect(s.requests).toHaveLength(2);
    const notice = events.find((e) => e.type === 'notice') as any;
    expect(notice.payload).toMatchObject({ kind: 'retry', status: 529, delayMs: 20 });
  });

  it('429 with retry-after is retried; 401 is not', async () => {
    const s = await mock((_req, i) => (i === 0 ? anthropicError(429, 'rate_limit_error', 'slow down', { 'retry-after': '0.01' }) : anthropicReply({ text: 'ok' })));
    const { kernel } = await boot(claudeAt(s));
    expect((await run(kernel, { provider: 'claude_code', mode: 'text' })).result.status).toBe('completed');
    expect(s.requests).toHaveLength(2);

    const bad = await mock();
    const { kernel: k2 } = await boot({ providers: { claude_code: { baseUrl: bad.url, apiKey: 'wrong' } }, runtime: FAST });
    const { result } = await run(k2, { provider: 'claude_code', mode: 'text' });
    expect(result.status).toBe('error');
    expect(result.error?.message).toContain('401');
    expect(bad.requests).toHaveLength(1);
  });

  it('an overloaded error event after text is surfaced, not retried; the partial text is kept and flagged', async () => {
    const s = await mock(() => loadAnthropicFixture('error-overloaded'));
    const { kernel } = await boot(claudeAt(s));
    const { result } = await run(kernel, { provider: 'claude_code', mode: 'text' });
    expect(result.status).toBe('error');
    expect(s.requests).toHaveLength(1);
    expect(result.messages[0]).toMatchObject({ content: [{ type: 'text', text: 'Hello' }], stopReason: 'error', meta: { partial: true } });
    expect(result.error?.message).toContain('overloaded');
  });

  it('a stream without message_stop fails the run once, keeping the partial text', async () => {
    const events = anthropicReply({ text: ['Half', ' a reply'] });
    const s = await mock(() => events.slice(0, -3));
    const { kernel } = await boot(claudeAt(s));
    const { result } = await run(kernel, { provider: 'claude_code', mode: 'text' });
    expect(result.status).toBe('error');
    expect(s.requests).toHaveLength(1);
    expect(result.messages[0]).toMatchObject({ content: [{ type: 'text', text: 'Half a reply' }], meta: { partial: true } });
  });
});

describe('settings and environment', () => {
  it('reads ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL; settings override them', async () => {
    const s = await mock();
    delete process.env.ANTHROPIC_API_KEY;
    process.env.ANTHROPIC_BASE_URL = s.url;
    const { kernel } = await boot({ runtime: FAST });
    const provider = kernel.runtime.provider('claude_code')!;
    expect(provider.isConfigured(kernel.settings.get())).toBe(false);
    process.env.ANTHROPIC_API_KEY = KEY;
    expect(provider.isConfigured(kernel.settings.get())).toBe(true);
    expect((await run(kernel, { provider: 'claude_code', mode: 'text' })).result.status).toBe('completed');
    expect(s.requests).toHaveLength(1);

    process.env.ANTHROPIC_API_KEY = 'wrong-env-key';
    const { kernel: k2 } = await boot({ providers: { claude_code: { apiKey: KEY, defaultModel: 'claude-haiku-4-5' } }, runtime: FAST });
    expect((await run(k2, { provider: 'claude_code', mode: 'text' })).result.status).toBe('completed');
    expect(s.requests[1]!.body.model).toBe('claude-haiku-4-5');
  });

  it('no key: not configured, and a run fails with a message saying where to put one', async () => {
    delete process.env.ANTHROPIC_API_KEY;
    const { kernel } = await boot({ runtime: FAST });
    expect(kernel.runtime.provider('claude_code')!.isConfigured(kernel.settings.get())).toBe(false);
    const { result } = await run(kernel, { provider: 'claude_code', mode: 'text' });
    expect(result.status).toBe('error');
    expect(result.error?.message).toContain('ANTHROPIC_API_KEY');
  });

  it('bad claude_code settings give an error naming the provider and the field', async () => {
    const s = await mock();
    const { kernel, log } = await boot(claudeAt(s, { thinkingBudget: -5 }));
    expect(log.some((l) => l.level === 'error' && l.message.includes('claude_code') && l.message.includes('thinkingBudget'))).toBe(true);
    expect(kernel.runtime.provider('claude_code')!.isConfigured(kernel.settings.get())).toBe(false);
    const { result } = await run(kernel, { provider: 'claude_code', mode: 'text' });
    expect(result.error?.message).toMatch(/settings for provider "claude_code": providers\.claude_code\.thinkingBudget: /);
    expect(s.requests).toHaveLength(0);
  });

  it('catalog: claude_code lists current models with limits and prices', async () => {
    const { kernel } = await boot({});
    const p = kernel.runtime.provider('claude_code')!;
    expect(p.defaultModel).toBe('claude-sonnet-4-6');
    expect(p.models?.find((m) => m.id === 'claude-sonnet-4-6')).toMatchObject({ contextWindow: expect.any(Number), maxOutputTokens: expect.any(Number), thinking: true, price: { input: 3, output: 15 } });
  });

  it('the SDK is never imported at module top level', () => {
    const dir = path.resolve(import.meta.dirname, '../../plugins/provider-anthropic');
    for (const f of fs.readdirSync(dir).filter((n) => n.endsWith('.ts'))) {
      const src = fs.readFileSync(path.join(dir, f), 'utf8');
      expect(src, f).not.toMatch(/^import\s+(?!type\b)[^;]*['"]@anthropic-ai\/sdk['"]/m);
    }
  });
});

describe('custom providers with format anthropic', () => {
  const custom = (s: MockAnthropicServer, extra: Record<string, unknown> = {}) => ({
    id: 'acme',
    name: 'Acme Claude',
    format: 'anthropic' as const,
    baseUrl: s.url,
    apiKey: KEY,
    defaultModel: 'acme-large',
    models: [{ id: 'acme-large', maxOutputTokens: 1000, contextWindow: 100_000 }],
    ...extra,
  });

  it('registers one provider per entry, with its id, name, endpoint, key, default model and models', async () => {
    const s = await mock();
    const { kernel } = await boot({ customProviders: [custom(s), { id: 'other', format: 'openai-chat', baseUrl: 'http://127.0.0.1:1/v1' }], runtime: FAST });
    const p = kernel.runtime.provider('acme')!;
    expect(p).toMatchObject({ id: 'acme', displayName: 'Acme Claude', defaultModel: 'acme-large', models: [{ id: 'acme-large' }] });
    expect(kernel.runtime.provider('other')).toBeUndefined();
    const { result } = await run(kernel, { provider: 'acme', mode: 'text' });
    expect(result.status).toBe('completed');
    expect(result.messages[0]).toMatchObject({ provider: 'acme', model: 'acme-large' });
    expect(s.requests[0]!.body).toMatchObject({ model: 'acme-large', max_tokens: 1000 });
  });

  it('apiKeyEnv names the variable holding the key (read at request time)', async () => {
    const s = await mock();
    delete process.env.ACME_KEY;
    const { kernel } = await boot({ customProviders: [custom(s, { apiKey: undefined, apiKeyEnv: 'ACME_KEY' })], runtime: FAST });
    const p = kernel.runtime.provider('acme')!;
    expect(p.isConfigured(kernel.settings.get())).toBe(false);
    process.env.ACME_KEY = KEY;
    expect(p.isConfigured(kernel.settings.get())).toBe(true);
    expect((await run(kernel, { provider: 'acme', mode: 'text' })).result.status).toBe('completed');
  });

  it('an entry without apiKey or apiKeyEnv is a keyless endpoint: configured, and it works', async () => {
    const open = await startMockAnthropic();
    try {
      const { kernel } = await boot({ customProviders: [custom(open, { apiKey: undefined })], runtime: FAST });
      expect(kernel.runtime.provider('acme')!.isConfigured(kernel.settings.get())).toBe(true);
      expect((await run(kernel, { provider: 'acme', mode: 'text' })).result.status).toBe('completed');
    } finally {
      await open.close();
    }
  });

  it('re-registers when settings change: new entries appear, removed ones go', async () => {
    const s = await mock();
    const { kernel } = await boot({ customProviders: [custom(s)], runtime: FAST });
    await kernel.settings.update({ customProviders: [custom(s, { id: 'acme2', name: 'Acme Two' })] });
    expect(kernel.runtime.provider('acme')).toBeUndefined();
    expect(kernel.runtime.provider('acme2')?.displayName).toBe('Acme Two');
    expect(kernel.runtime.provider('claude_code')).toBeDefined();
    await kernel.settings.update({ customProviders: [] });
    expect(kernel.runtime.provider('acme2')).toBeUndefined();
  });

  it('bad custom provider settings give an error naming the provider and the field; the others still work', async () => {
    const s = await mock();
    const { kernel, log } = await boot({ customProviders: [custom(s, { id: 'broken', webSearch: 'sometimes' }), custom(s)], runtime: FAST });
    const errors = log.filter((l) => l.level === 'error').map((l) => l.message);
    expect(errors).toEqual([expect.stringMatching(/settings: customProviders\[0\] \(provider "broken"\)\.webSearch: /)]);
    const broken = kernel.runtime.provider('broken')!;
    expect(broken.isConfigured(kernel.settings.get())).toBe(false);
    const { result } = await run(kernel, { provider: 'broken', mode: 'text' });
    expect(result.status).toBe('error');
    expect(result.error?.message).toMatch(/"broken".*webSearch/);
    expect((await run(kernel, { provider: 'acme', mode: 'text' })).result.status).toBe('completed');
    expect(s.requests).toHaveLength(1);
  });

  it('a custom id that clashes with claude_code is refused by name, without breaking the rest', async () => {
    const s = await mock();
    const { kernel, log } = await boot({ customProviders: [custom(s, { id: 'anthropic' }), custom(s)], runtime: FAST });
    expect(log.some((l) => l.level === 'error' && l.message.includes('"anthropic"'))).toBe(true);
    expect(kernel.runtime.provider('anthropic')?.id).toBe('claude_code');
    expect(kernel.runtime.provider('acme')).toBeDefined();
  });
});
