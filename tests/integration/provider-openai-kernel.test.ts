/**
 * The provider-openai plugin inside a real kernel: codex over both APIs with a tool round trip,
 * storage chaining across rounds and runs, retries (429 with retry-after) against failures that
 * must not be retried, partial text kept on a broken stream, the environment, the hosted-search
 * probe file under $LIVEAGENT_HOME, and custom providers from settings (re-registered on change).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { LifecycleEvent, PluginModule, Settings } from '../../plugin-api.js';
import { createKernel, type Kernel } from '../../core/kernel.js';
import openaiPlugin, { createOpenAIPlugin } from '../../plugins/provider-openai/index.js';
import { encodeSse, startMockServer, type MockServer } from '../fixtures/mock-http.js';
import {
  chatCompletionReply,
  defaultOpenAIScript,
  openaiError,
  rateLimited,
  responsesReply,
  startMockOpenAI,
  type MockOpenAI,
} from '../fixtures/mock-openai.js';
import { echoToolPlugin } from '../helpers/echo-tool.js';

let server: MockOpenAI;
const kernels: Kernel[] = [];
const homes: string[] = [];
beforeAll(async () => {
  server = await startMockOpenAI();
});
afterAll(async () => {
  await server.close();
  for (const h of homes) fs.rmSync(h, { recursive: true, force: true });
});
beforeEach(() => server.setScript(defaultOpenAIScript));
afterEach(async () => {
  for (const k of kernels.splice(0)) await k.shutdown();
});

const echoTool = echoToolPlugin;

function tmpHome(): string {
  const h = fs.mkdtempSync(path.join(os.tmpdir(), 'la-openai-kernel-'));
  homes.push(h);
  return h;
}

async function boot(codex: Record<string, unknown>, extra: Partial<Settings> = {}, plugin: PluginModule = openaiPlugin, home = tmpHome()) {
  const settings: Settings = {
    providers: { codex: { apiKey: server.apiKey, baseUrl: `${server.url}/v1`, ...codex } },
    runtime: { retryBaseDelayMs: 1, retryMaxDelayMs: 50 },
    ...extra,
  };
  const kernel = await createKernel({ home, plugins: [plugin, echoTool], settings, thirdParty: false });
  kernels.push(kernel);
  expect(kernel.failures).toEqual([]);
  return kernel;
}

async function runTo(kernel: Kernel, opts: Parameters<Kernel['runtime']['startRun']>[0]) {
  const run = kernel.runtime.startRun(opts);
  const events: LifecycleEvent[] = [];
  for await (const e of run.events) events.push(e);
  return { events, result: await run.result, conversationId: run.conversationId };
}

const bodiesSince = (n: number) => server.requests.slice(n).map((r) => r.body);

describe('codex through the kernel', () => {
  it('Responses: a tool call round trip (function_call → Echo → function_call_output → final text)', async () => {
    const kernel = await boot({ api: 'responses' });
    server.setScript((req, i) => {
      const hasOutput = (req.body.input as any[]).some((x) => x.type === 'function_call_output');
      return hasOutput
        ? { kind: 'sse', events: responsesReply({ text: 'All done.', responseId: `resp_k${i}`, request: req.body }) }
        : { kind: 'sse', events: responsesReply({ functionCalls: [{ call_id: 'call_e1', name: 'Echo', args: { text: 'hi' } }], responseId: `resp_k${i}`, request: req.body }) };
    });
    const before = server.requests.length;
    const { events, result } = await runTo(kernel, { input: [{ type: 'text', text: 'echo hi' }], provider: 'openai', model: 'gpt-4.1' });
    expect(result.status).toBe('completed');
    const [first, second] = bodiesSince(before);
    expect(first.tools).toEqual([expect.objectContaining({ type: 'function', name: 'Echo' })]);
    expect(second.input.slice(-2)).toEqual([
      { type: 'function_call', call_id: 'call_e1', name: 'Echo', arguments: '{"text":"hi"}' },
      { type: 'function_call_output', call_id: 'call_e1', output: 'echo:hi' },
    ]);
    expect(result.messages.map((m) => m.role)).toEqual(['assistant', 'tool', 'assistant']);
    expect(result.messages[2]!.content).toEqual([{ type: 'text', text: 'All done.' }]);
    expect(events.filter((e) => e.type === 'tool_execution_end')).toHaveLength(1);
    expect(result.messages[0]!).toMatchObject({ provider: 'codex', stopReason: 'tool_use' });
  });

  it('Chat Completions: the same round trip with tool_calls and a tool message', async () => {
    const kernel = await boot({ api: 'chat' });
    server.setScript((req) => {
      const done = (req.body.messages as any[]).some((m) => m.role === 'tool');
      return { kind: 'sse', events: done ? chatCompletionReply({ text: 'Finished.', includeUsage: true }) : chatCompletionReply({ toolCalls: [{ id: 'call_c1', name: 'Echo', args: { text: 'yo' } }], includeUsage: true }) };
    });
    const before = server.requests.length;
    const { result } = await runTo(kernel, { input: [{ type: 'text', text: 'echo yo' }], provider: 'codex', model: 'gpt-4.1' });
    expect(result.status).toBe('completed');
    const second = bodiesSince(before)[1];
    expect(second.messages.slice(-2)).toEqual([
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_c1', type: 'function', function: { name: 'Echo', arguments: '{"text":"yo"}' } }] },
      { role: 'tool', tool_call_id: 'call_c1', content: 'echo:yo' },
    ]);
    expect(result.usage.inputTokens).toBeGreaterThan(0);
  });

  it('store on: rounds and runs chain on the last response and send only what is new', async () => {
    const kernel = await boot({ api: 'responses', store: true });
    server.setScript((req, i) => {
      // Only the very first round (full input holding "one") calls the tool.
      const first = (req.body.input as any[]).some((x) => x.role === 'user' && x.content?.[0]?.text === 'one');
      const opts = first ? { functionCalls: [{ call_id: `call_s${i}`, name: 'Echo', args: { text: 's' } }] } : { text: 'ok' };
      return { kind: 'sse', events: responsesReply({ ...opts, responseId: `resp_s${i}`, request: req.body }) };
    });
    const before = server.responsesCalls.length;
    const first = await runTo(kernel, { input: [{ type: 'text', text: 'one' }], model: 'gpt-4.1' });
    expect(first.result.status).toBe('completed');
    const second = await runTo(kernel, { conversationId: first.conversationId, input: [{ type: 'text', text: 'two' }], model: 'gpt-4.1' });
    expect(second.result.status).toBe('completed');
    const calls = server.responsesCalls.slice(before);
    expect(calls.every((c) => c.store)).toBe(true);
    expect(calls.map((c) => c.previous_response_id)).toEqual([null, calls[0]!.responseId, calls[1]!.responseId]);
    const inputs = calls.map((c) => server.requests[c.requestIndex]!.body.input as any[]);
    expect(inputs[1]).toEqual([{ type: 'function_call_output', call_id: expect.any(String), output: 'echo:s' }]);
    expect(inputs[2]).toEqual([{ role: 'user', content: [{ type: 'input_text', text: 'two' }] }]);
  });

  it('store off: store false and the full history each round', async () => {
    const kernel = await boot({ api: 'responses' });
    const before = server.responsesCalls.length;
    const first = await runTo(kernel, { input: [{ type: 'text', text: 'one' }], mode: 'text' });
    await runTo(kernel, { conversationId: first.conversationId, input: [{ type: 'text', text: 'two' }], mode: 'text' });
    const calls = server.responsesCalls.slice(before);
    expect(calls.map((c) => [c.store, c.previous_response_id])).toEqual([
      [false, null],
      [false, null],
    ]);
    expect((server.requests[calls[1]!.requestIndex]!.body.input as unknown[]).length).toBe(3);
  });

  it('a 429 with retry-after is retried by the kernel; insufficient_quota and 401 are not', async () => {
    const kernel = await boot({ api: 'responses' });
    let n = 0;
    server.setScript((req, i) => (n++ === 0 ? rateLimited(0) : { kind: 'sse', events: responsesReply({ text: 'after retry', responseId: `resp_r${i}` }) }));
    const ok = await runTo(kernel, { input: [{ type: 'text', text: 'go' }], mode: 'text' });
    expect(ok.result.status).toBe('completed');
    expect(n).toBe(2);
    expect(ok.events.filter((e) => e.type === 'notice')).toHaveLength(1);

    n = 0;
    server.setScript(() => {
      n++;
      return openaiError(429, 'insufficient_quota', 'You exceeded your current quota, please check your plan and billing details.', 'insufficient_quota');
    });
    const quota = await runTo(kernel, { input: [{ type: 'text', text: 'go' }], mode: 'text' });
    expect(quota.result.status).toBe('error');
    expect(n).toBe(1);
    expect(quota.result.error?.details).toMatchObject({ provider: 'codex', code: 'quota', status: 429 });

    const wrongKey = await boot({ api: 'responses', apiKey: 'sk-wrong-key-123456' });
    const before = server.requests.length;
    const auth = await runTo(wrongKey, { input: [{ type: 'text', text: 'go' }], mode: 'text' });
    expect(auth.result.status).toBe('error');
    expect(server.requests.length - before).toBe(1);
  });

  it('a broken stream keeps the partial text in the message and reports one error', async () => {
    const kernel = await boot({ api: 'responses' });
    const events = responsesReply({ text: ['Partial', ' answer', ' lost'], responseId: 'resp_cut' });
    const k = events.findIndex((e) => JSON.stringify(e.data).includes('" lost"'));
    const bytes = Buffer.byteLength(encodeSse(events).slice(0, k).join(''), 'utf8') + 12;
    server.setScript(() => ({ kind: 'sse', events, truncateAfterBytes: bytes }));
    const r = await runTo(kernel, { input: [{ type: 'text', text: 'go' }], mode: 'text' });
    expect(r.result.status).toBe('error');
    expect(r.events.filter((e) => e.type === 'error')).toHaveLength(1);
    const msg = r.result.messages[0]!;
    expect(msg.content).toEqual([{ type: 'text', text: 'Partial answer' }]);
    expect(msg).toMatchObject({ stopReason: 'error', errorMessage: expect.stringContaining('closed early') });
  });

  it('reads OPENAI_API_KEY / OPENAI_BASE_URL, and settings override them', async () => {
    const env = { OPENAI_API_KEY: server.apiKey, OPENAI_BASE_URL: `${server.url}/v1` };
    const home = tmpHome();
    const kernel = await createKernel({ home, plugins: [createOpenAIPlugin({ env })], settings: { providers: { codex: { api: 'responses' } } }, thirdParty: false });
    kernels.push(kernel);
    expect(kernel.runtime.provider('codex')!.isConfigured(kernel.settings.get())).toBe(true);
    const r = await runTo(kernel, { input: [{ type: 'text', text: 'from env' }], mode: 'text', model: 'gpt-4.1' });
    expect(r.result.status).toBe('completed');
    expect(r.result.messages[0]!.content).toEqual([{ type: 'text', text: 'Mock reply to: from env' }]);

    const overridden = await boot({ api: 'responses' }, {}, createOpenAIPlugin({ env: { OPENAI_API_KEY: 'sk-env-is-wrong', OPENAI_BASE_URL: 'http://127.0.0.1:9/v1' } }));
    const r2 = await runTo(overridden, { input: [{ type: 'text', text: 'from settings' }], mode: 'text', model: 'gpt-4.1' });
    expect(r2.result.status).toBe('completed');

    const none = await createKernel({ home: tmpHome(), plugins: [createOpenAIPlugin({ env: {} })], settings: {}, thirdParty: false });
    kernels.push(none);
    expect(none.runtime.provider('openai')!.isConfigured(none.settings.get())).toBe(false);
  });

  it('the hosted-search probe answer lands in $LIVEAGENT_HOME/openai-search-probe.json', async () => {
    const home = tmpHome();
    server.rejectWebSearchFor(['gpt-4o-mini']);
    try {
      const kernel = await boot({ api: 'responses', webSearch: true }, {}, openaiPlugin, home);
      const before = server.responsesCalls.length;
      const r = await runTo(kernel, { input: [{ type: 'text', text: 'search' }], mode: 'text', model: 'gpt-4o-mini' });
      expect(r.result.status).toBe('completed');
      expect(server.responsesCalls.length - before).toBe(2);
      await kernel.shutdown();
      const file = JSON.parse(fs.readFileSync(path.join(home, 'openai-search-probe.json'), 'utf8'));
      expect(file.models['codex:gpt-4o-mini'].webSearch).toBe(false);
    } finally {
      server.rejectWebSearchFor([]);
    }
  });
});

describe('custom providers from settings', () => {
  let open: MockServer;
  beforeAll(async () => {
    // An Ollama/vLLM-like endpoint: no auth at all.
    open = await startMockServer(defaultOpenAIScript);
  });
  afterAll(() => open.close());

  it('an openai-chat provider needs only baseUrl and a model (a placeholder key is sent)', async () => {
    const kernel = await boot({}, { customProviders: [{ id: 'local', name: 'Local LLM', format: 'openai-chat', baseUrl: `${open.url}/v1`, defaultModel: 'llama3.2' }] });
    const p = kernel.runtime.provider('local')!;
    expect(p).toMatchObject({ displayName: 'Local LLM', defaultModel: 'llama3.2' });
    expect(p.isConfigured(kernel.settings.get())).toBe(true);
    const r = await runTo(kernel, { input: [{ type: 'text', text: 'hello' }], mode: 'text', provider: 'local' });
    expect(r.result.status).toBe('completed');
    expect(r.result.messages[0]!.content).toEqual([{ type: 'text', text: 'Mock reply to: hello' }]);
    const req = open.requests.at(-1)!;
    expect(req.path).toBe('/v1/chat/completions');
    expect(req.body.model).toBe('llama3.2');
    expect(req.headers.authorization).toMatch(/^Bearer \S+$/);
    expect(req.body.max_completion_tokens).toBeUndefined();
  });

  it('re-registers on settings change; an openai-responses entry speaks Responses; a bad entry fails its requests by name', async () => {
    const kernel = await boot({}, { customProviders: [{ id: 'local', format: 'openai-chat', baseUrl: `${open.url}/v1`, defaultModel: 'm1' }] });
    await kernel.settings.update({
      customProviders: [
        { id: 'proxy', format: 'openai-responses', baseUrl: `${server.url}/v1`, apiKey: server.apiKey, defaultModel: 'gpt-4.1' },
        { id: 'broken', format: 'openai-chat', baseUrl: `${open.url}/v1`, defaultModel: 'm', store: 'sometimes' } as never,
        { id: 'claude-proxy', format: 'anthropic', baseUrl: 'https://example.test' },
      ],
    });
    expect(kernel.runtime.provider('local')).toBeUndefined();
    expect(kernel.runtime.provider('claude-proxy')).toBeUndefined();
    const before = server.responsesCalls.length;
    const r = await runTo(kernel, { input: [{ type: 'text', text: 'via proxy' }], mode: 'text', provider: 'proxy' });
    expect(r.result.status).toBe('completed');
    expect(server.responsesCalls.length - before).toBe(1);
    const bad = await runTo(kernel, { input: [{ type: 'text', text: 'x' }], mode: 'text', provider: 'broken' });
    expect(bad.result.status).toBe('error');
    expect(bad.result.error?.message).toContain('customProviders[1] (provider "broken").store');
  });
});
