/**
 * Server retry hints through the real provider plugins, against the wire-faithful mocks: Gemini's
 * 429 told apart as a rate limit (QuotaFailure per minute, RetryInfo) or a spent quota (per day,
 * billing), `RetryInfo.retryDelay` (Gemini) and HTTP `Retry-After` (seconds or HTTP-date) honoured on every
 * provider, and a hint longer than `runtime.retryMaxDelayMs` failing at once with the time to
 * try again instead of being retried early into another refusal.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { LifecycleEvent, PluginModule, ProviderErrorInfo, Settings } from '../../plugin-api.js';
import { createKernel, type Kernel } from '../../core/kernel.js';
import anthropicPlugin from '../../plugins/provider-anthropic/index.js';
import geminiPlugin from '../../plugins/provider-gemini/index.js';
import openaiPlugin from '../../plugins/provider-openai/index.js';
import { anthropicError, anthropicReply, startMockAnthropic, type AnthropicScript } from '../fixtures/mock-anthropic.js';
import { geminiError, geminiErrors, geminiReply, geminiStream } from '../fixtures/mock-gemini.js';
import { chatCompletionReply, rateLimited, responsesReply, startMockOpenAI } from '../fixtures/mock-openai.js';
import { KEY as GEMINI_KEY, closeMocks, collect, errorsOf, mock, providerFor } from './provider-gemini-harness.js';

const ANTHROPIC_KEY = 'sk-ant-test-key';
const kernels: Kernel[] = [];
const homes: string[] = [];
const closers: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const k of kernels.splice(0)) await k.shutdown();
  for (const c of closers.splice(0)) await c();
  for (const h of homes.splice(0)) fs.rmSync(h, { recursive: true, force: true });
  await closeMocks();
});

const FAST = { retryBaseDelayMs: 1, retryMaxDelayMs: 1000, retryMaxAttempts: 3 };

async function boot(plugin: PluginModule, settings: Settings): Promise<Kernel> {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'la-retry-'));
  homes.push(home);
  const kernel = await createKernel({ home, plugins: [plugin], settings: { runtime: FAST, ...settings }, thirdParty: false });
  kernels.push(kernel);
  return kernel;
}

async function run(kernel: Kernel, provider: string) {
  const handle = kernel.runtime.startRun({ input: [{ type: 'text', text: 'Hello' }], mode: 'text', provider });
  const events: LifecycleEvent[] = [];
  for await (const e of handle.events) events.push(e);
  return { result: await handle.result, notices: events.filter((e) => e.type === 'notice') };
}

const geminiAt = (url: string): Settings => ({ providers: { gemini: { baseUrl: url, apiKey: GEMINI_KEY } } });

/** The ISO time in an error's "try again after ..." and how far ahead of `from` it is. */
function retryAt(message: string, from: number): number {
  const m = /try again after (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)/.exec(message);
  expect(m, message).not.toBeNull();
  return Date.parse(m![1]!) - from;
}

describe('Gemini 429: a rate limit is waited out, a spent quota is final', () => {
  it('a per-minute limit (QuotaFailure PerMinute + RetryInfo, under the quota wording) is retried after retryDelay', async () => {
    const s = await mock((_req, i) => (i === 0 ? geminiErrors.rateLimited('0.05s') : geminiStream(geminiReply({ text: 'ok' }))));
    const kernel = await boot(geminiPlugin, geminiAt(s.url));
    const { result, notices } = await run(kernel, 'gemini');
    expect(result.status).toBe('completed');
    expect(s.requests).toHaveLength(2);
    expect(notices[0]).toMatchObject({ payload: { kind: 'retry', status: 429, delayMs: 50 } });
  });

  it('a per-minute limit on the token quota is a rate limit too, with the wait from RetryInfo', async () => {
    const s = await mock(() => geminiErrors.rateLimited('26s', 'GenerateContentInputTokensPerModelPerMinute-FreeTier'));
    const [e] = errorsOf(await collect(providerFor(s, { retryMaxDelayMs: () => 60_000 })));
    expect(e).toMatchObject({ code: 'rate_limited', status: 429, retryable: true, retryAfterMs: 26_000 });
  });

  it('a used-up daily quota is final even with a RetryInfo: one request, and the error names the daily quota', async () => {
    const s = await mock(() => geminiErrors.dailyQuota('0.05s'));
    const kernel = await boot(geminiPlugin, geminiAt(s.url));
    const { result, notices } = await run(kernel, 'gemini');
    expect(result.status).toBe('error');
    expect(s.requests).toHaveLength(1);
    expect(notices).toEqual([]);
    expect(result.error?.details).toMatchObject({ code: 'quota', status: 429 });
    expect(result.error?.message).toContain('daily quota GenerateRequestsPerDayPerProjectPerModel-FreeTier is used up');
  });

  it('the billing wording without QuotaFailure or RetryInfo is a spent quota; a bare "Resource has been exhausted" is transient', async () => {
    const s = await mock((_req, i) => (i === 0 ? geminiErrors.quotaExhausted() : geminiError(429, 'RESOURCE_EXHAUSTED', 'Resource has been exhausted (e.g. check quota).')));
    const [quota] = errorsOf(await collect(providerFor(s)));
    expect(quota).toMatchObject({ code: 'quota', retryable: false, status: 429 });
    const [transient] = errorsOf(await collect(providerFor(s)));
    expect(transient).toMatchObject({ code: 'rate_limited', retryable: true, status: 429 });
  });

  it('a tier without access (limit 0) is final', async () => {
    const zero = geminiErrors.rateLimited('25s', 'GenerateRequestsPerMinutePerProjectPerModel-FreeTier', 'gemini-2.5-pro');
    const body = zero.kind === 'json' ? (zero.body as { error: { details: Array<{ violations?: Array<{ quotaValue: string }> }> } }) : undefined;
    body!.error.details[0]!.violations![0]!.quotaValue = '0';
    const s = await mock(() => zero);
    const [e] = errorsOf(await collect(providerFor(s)));
    expect(e).toMatchObject({ code: 'quota', retryable: false });
    expect(e!.message).toContain('limit of 0');
  });

  it('a RetryInfo longer than runtime.retryMaxDelayMs fails at once, saying when to try again', async () => {
    const s = await mock(() => geminiErrors.rateLimited('120s'));
    const kernel = await boot(geminiPlugin, geminiAt(s.url));
    const before = Date.now();
    const { result, notices } = await run(kernel, 'gemini');
    expect(result.status).toBe('error');
    expect(s.requests).toHaveLength(1);
    expect(notices).toEqual([]);
    expect(result.error?.message).toContain('the server asks to wait 120 s before retrying, longer than the 1 s runtime.retryMaxDelayMs allows');
    const ahead = retryAt(result.error!.message, before);
    expect(ahead).toBeGreaterThanOrEqual(119_000);
    expect(ahead).toBeLessThanOrEqual(122_000);
  });

  it('the wait in the message ("Please retry in 2.5s.") counts when RetryInfo is missing', async () => {
    const s = await mock(() => geminiError(429, 'RESOURCE_EXHAUSTED', 'Quota exceeded for metric: x, limit: 10, model: m\nPlease retry in 2.5s.'));
    const [e] = errorsOf(await collect(providerFor(s)));
    expect(e).toMatchObject({ code: 'rate_limited', retryable: true, retryAfterMs: 2500 });
  });
});

describe('Retry-After on Anthropic and OpenAI', () => {
  async function anthropicMock(script: AnthropicScript) {
    const s = await startMockAnthropic({ apiKey: ANTHROPIC_KEY, script });
    closers.push(() => s.close());
    return s;
  }

  it('Anthropic: a retry-after under the cap is honoured by the kernel', async () => {
    const s = await anthropicMock((_req, i) => (i === 0 ? anthropicError(429, 'rate_limit_error', 'Number of request tokens has exceeded your per-minute rate limit', { 'retry-after': '0.04' }) : anthropicReply({ text: 'ok' })));
    const kernel = await boot(anthropicPlugin, { providers: { claude_code: { baseUrl: s.url, apiKey: ANTHROPIC_KEY } } });
    const { result, notices } = await run(kernel, 'claude_code');
    expect(result.status).toBe('completed');
    expect(notices[0]).toMatchObject({ payload: { kind: 'retry', status: 429, delayMs: 40 } });
  });

  it('Anthropic: a retry-after over runtime.retryMaxDelayMs is not retried early: one request, the error says when', async () => {
    const s = await anthropicMock(() => anthropicError(429, 'rate_limit_error', 'Number of request tokens has exceeded your per-minute rate limit', { 'retry-after': '90' }));
    const kernel = await boot(anthropicPlugin, { providers: { claude_code: { baseUrl: s.url, apiKey: ANTHROPIC_KEY } } });
    const before = Date.now();
    const { result, notices } = await run(kernel, 'claude_code');
    expect(result.status).toBe('error');
    expect(s.requests).toHaveLength(1);
    expect(notices).toEqual([]);
    expect(result.error?.message).toContain('429 rate_limit_error');
    expect(result.error?.message).toContain('wait 90 s before retrying');
    expect(retryAt(result.error!.message, before)).toBeGreaterThanOrEqual(89_000);
  });

  for (const api of ['chat', 'responses'] as const) {
    it(`OpenAI ${api}: an HTTP-date retry-after over the cap fails with that time; one under it is retried`, async () => {
      const server = await startMockOpenAI();
      closers.push(() => server.close());
      const until = new Date(Math.ceil((Date.now() + 3_600_000) / 1000) * 1000);
      let n = 0;
      server.setScript(() => {
        n++;
        if (n === 1) return rateLimited(1, { 'retry-after': until.toUTCString() });
        if (n === 2) return rateLimited(0.03);
        return { kind: 'sse', events: api === 'chat' ? chatCompletionReply({ text: 'ok' }) : responsesReply({ text: 'ok' }) };
      });
      const kernel = await boot(openaiPlugin, { providers: { codex: { apiKey: server.apiKey, baseUrl: `${server.url}/v1`, api } } });
      const first = await run(kernel, 'codex');
      expect(first.result.status).toBe('error');
      expect(n).toBe(1);
      expect(first.result.error?.message).toContain('wait 60 min before retrying');
      expect(first.result.error?.message).toContain(`try again after ${until.toISOString().replace('.000Z', 'Z')}`);
      const second = await run(kernel, 'codex');
      expect(second.result.status).toBe('completed');
      expect(second.notices[0]).toMatchObject({ payload: { kind: 'retry', status: 429, delayMs: 30 } });
    });
  }

  it('the cap follows settings: raising runtime.retryMaxDelayMs lets the same hint be waited for', async () => {
    const s = await mock(() => geminiErrors.rateLimited('45s'));
    const low: ProviderErrorInfo[] = errorsOf(await collect(providerFor(s, { retryMaxDelayMs: () => 30_000 })));
    const high: ProviderErrorInfo[] = errorsOf(await collect(providerFor(s, { retryMaxDelayMs: () => 60_000 })));
    expect(low[0]).toMatchObject({ retryable: false, retryAfterMs: 45_000 });
    expect(high[0]).toMatchObject({ retryable: true, retryAfterMs: 45_000 });
  });
});
