/**
 * Which API codex speaks when `providers.codex.api` is unset: Responses at any base URL, and one
 * fallback to Chat Completions on an endpoint that answers it has no /responses route (the
 * bodies vLLM, Ollama, llama.cpp and LM Studio send), remembered per base URL in
 * $LIVEAGENT_HOME/openai-api-fallback.json across runs and kernel restarts. A forced `api` never
 * probes, and a 404 for an unknown model is an error, not a missing route.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { LifecycleEvent, ProviderEvent, ProviderRequest, Settings } from '../../plugin-api.js';
import { createKernel, type Kernel, type KernelOptions } from '../../core/kernel.js';
import { API_FALLBACK_FILE, ApiFallbacks, createOpenAIPlugin, createOpenAIProvider } from '../../plugins/provider-openai/index.js';
import type { MockResponse, RecordedRequest } from '../fixtures/mock-http.js';
import { defaultOpenAIScript, openaiError, startMockOpenAI, type MockOpenAI } from '../fixtures/mock-openai.js';

/** What a Chat-only server answers on POST /v1/responses (vLLM, FastAPI's default 404). */
const VLLM_404: MockResponse = { kind: 'json', status: 404, body: { detail: 'Not Found' } };
const OLLAMA_404: MockResponse = { kind: 'raw', status: 404, body: '404 page not found', headers: { 'content-type': 'text/plain' } };
const LLAMA_CPP_404: MockResponse = { kind: 'json', status: 404, body: { error: { code: 404, message: 'File Not Found', type: 'not_found_error' } } };
const METHOD_NOT_ALLOWED: MockResponse = { kind: 'json', status: 405, body: { detail: 'Method Not Allowed' } };
/** LM Studio: HTTP 200 and a JSON error for a route it does not know. */
const LM_STUDIO_200: MockResponse = { kind: 'raw', status: 200, body: '{"error":"Unexpected endpoint or method. (POST /v1/responses)"}', headers: { 'content-type': 'application/json; charset=utf-8' } };

const isResponses = (req: RecordedRequest) => req.method === 'POST' && req.path.split('?')[0] === '/v1/responses';
const chatOnly = (refusal: MockResponse) => (req: RecordedRequest, i: number) => (isResponses(req) ? refusal : defaultOpenAIScript(req, i));

let full: MockOpenAI;
let chat: MockOpenAI;
const homes: string[] = [];
const kernels: Kernel[] = [];
beforeAll(async () => {
  full = await startMockOpenAI();
  chat = await startMockOpenAI({ script: chatOnly(VLLM_404) });
});
afterEach(async () => {
  for (const k of kernels.splice(0)) await k.shutdown();
});
afterAll(async () => {
  await Promise.all([full.close(), chat.close()]);
  for (const h of homes) fs.rmSync(h, { recursive: true, force: true });
});

function tmpHome(): string {
  const h = fs.mkdtempSync(path.join(os.tmpdir(), 'la-prov-fallback-'));
  homes.push(h);
  return h;
}

interface Logged {
  level: string;
  message: string;
}

async function boot(home: string, codex: Record<string, unknown>, opts: { env?: NodeJS.ProcessEnv } = {}) {
  const logs: Logged[] = [];
  const settings: Settings = { providers: { codex }, runtime: { retryBaseDelayMs: 1, retryMaxDelayMs: 20 } };
  const logSink: KernelOptions['logSink'] = (level, _source, message) => void logs.push({ level, message });
  const kernel = await createKernel({ home, plugins: [createOpenAIPlugin({ env: opts.env ?? {} })], settings, thirdParty: false, logSink });
  kernels.push(kernel);
  expect(kernel.failures).toEqual([]);
  return { kernel, logs };
}

async function runTo(kernel: Kernel, text: string, conversationId?: string) {
  const run = kernel.runtime.startRun({ input: [{ type: 'text', text }], provider: 'codex', model: 'gpt-4.1', mode: 'text', ...(conversationId ? { conversationId } : {}) });
  const events: LifecycleEvent[] = [];
  for await (const e of run.events) events.push(e);
  return { events, result: await run.result, conversationId: run.conversationId };
}

const pathsSince = (server: MockOpenAI, n: number) => server.requests.slice(n).map((r) => r.path);
const fallbackWarnings = (logs: Logged[]) => logs.filter((l) => l.level === 'warn' && /has no Responses API/.test(l.message));

describe('codex with api unset', () => {
  it('OPENAI_BASE_URL at a Responses-capable endpoint: POST /v1/responses, nothing remembered', async () => {
    const home = tmpHome();
    const { kernel, logs } = await boot(home, {}, { env: { OPENAI_API_KEY: full.apiKey, OPENAI_BASE_URL: `${full.url}/v1` } });
    const before = full.requests.length;
    const r = await runTo(kernel, 'hello');
    expect(r.result.status).toBe('completed');
    expect(pathsSince(full, before)).toEqual(['/v1/responses']);
    await kernel.shutdown();
    expect(fs.existsSync(path.join(home, API_FALLBACK_FILE))).toBe(false);
    expect(fallbackWarnings(logs)).toEqual([]);
  });

  it('a Chat-only endpoint: one 404 then /chat/completions, warned once, remembered across runs and a restart', async () => {
    const home = tmpHome();
    const baseUrl = `${chat.url}/v1`;
    const codex = { apiKey: chat.apiKey, baseUrl };
    const first = await boot(home, codex);
    const before = chat.requests.length;
    const one = await runTo(first.kernel, 'one');
    expect(one.result.status).toBe('completed');
    expect(one.result.messages.at(-1)!.content).toEqual([{ type: 'text', text: 'Mock reply to: one' }]);
    const two = await runTo(first.kernel, 'two', one.conversationId);
    expect(two.result.status).toBe('completed');
    expect(pathsSince(chat, before)).toEqual(['/v1/responses', '/v1/chat/completions', '/v1/chat/completions']);
    const warned = fallbackWarnings(first.logs);
    expect(warned).toHaveLength(1);
    expect(warned[0]!.message).toContain(baseUrl);
    expect(warned[0]!.message).toContain('"chat"');
    await first.kernel.shutdown();

    const file = JSON.parse(fs.readFileSync(path.join(home, API_FALLBACK_FILE), 'utf8'));
    expect(file).toMatchObject({ version: 1, baseUrls: { [baseUrl]: { api: 'chat' } } });

    const second = await boot(home, codex);
    const mark = chat.requests.length;
    const three = await runTo(second.kernel, 'three');
    expect(three.result.status).toBe('completed');
    expect(pathsSince(chat, mark)).toEqual(['/v1/chat/completions']);
    expect(fallbackWarnings(second.logs)).toEqual([]);
  });

  it('api: "responses" forced: the 404 is the error, no fallback, nothing remembered', async () => {
    const home = tmpHome();
    const { kernel } = await boot(home, { apiKey: chat.apiKey, baseUrl: `${chat.url}/v1`, api: 'responses' });
    const before = chat.requests.length;
    const r = await runTo(kernel, 'forced');
    expect(r.result.status).toBe('error');
    expect(r.result.error).toMatchObject({ code: 'provider', details: { status: 404 } });
    expect(chat.requests.slice(before).every(isResponses)).toBe(true);
    await kernel.shutdown();
    expect(fs.existsSync(path.join(home, API_FALLBACK_FILE))).toBe(false);
  });

  it('api: "chat" forced: straight to /chat/completions, no probe', async () => {
    const { kernel } = await boot(tmpHome(), { apiKey: full.apiKey, baseUrl: `${full.url}/v1`, api: 'chat' });
    const before = full.requests.length;
    expect((await runTo(kernel, 'chat')).result.status).toBe('completed');
    expect(pathsSince(full, before)).toEqual(['/v1/chat/completions']);
  });

  it('an unreadable fallback file is reported and Responses is tried again', async () => {
    const home = tmpHome();
    fs.writeFileSync(path.join(home, API_FALLBACK_FILE), '{"version":1,"baseUrls":{"x":{"api":"carrier-pigeon"}}}');
    const { kernel, logs } = await boot(home, { apiKey: full.apiKey, baseUrl: `${full.url}/v1` });
    const before = full.requests.length;
    expect((await runTo(kernel, 'again')).result.status).toBe('completed');
    expect(pathsSince(full, before)).toEqual(['/v1/responses']);
    expect(logs.some((l) => l.level === 'warn' && l.message.includes(API_FALLBACK_FILE) && /trying the Responses API again/.test(l.message))).toBe(true);
  });
});

describe('what counts as "no Responses API"', () => {
  const request = (): ProviderRequest => ({
    model: 'gpt-4.1',
    system: [],
    messages: [{ id: 'u1', role: 'user', content: [{ type: 'text', text: 'hi' }], createdAt: 1 }],
    tools: [],
    options: {},
    conversationId: 'conv-probe',
  });
  async function collect(server: MockOpenAI, fallbacks = new ApiFallbacks()) {
    const p = createOpenAIProvider({ apiKey: server.apiKey, baseUrl: `${server.url}/v1`, envNames: null, fallbacks });
    const events: ProviderEvent[] = [];
    const before = server.requests.length;
    for await (const e of p.stream(request(), new AbortController().signal)) events.push(e);
    return { events, paths: pathsSince(server, before), fallbacks };
  }
  const errors = (events: ProviderEvent[]) => events.filter((e) => e.type === 'error');

  const refusals: Array<[string, MockResponse]> = [
    ['vLLM 404 {"detail":"Not Found"}', VLLM_404],
    ['Ollama 404 "404 page not found"', OLLAMA_404],
    ['llama.cpp 404 not_found_error', LLAMA_CPP_404],
    ['405 Method Not Allowed', METHOD_NOT_ALLOWED],
    ['LM Studio 200 "Unexpected endpoint or method"', LM_STUDIO_200],
    ['OpenAI-style 404 "Invalid URL (POST /v1/responses)"', openaiError(404, 'invalid_request_error', 'Invalid URL (POST /v1/responses)')],
  ];
  for (const [name, refusal] of refusals) {
    it(`${name}: falls back to Chat Completions before any output`, async () => {
      const server = await startMockOpenAI({ script: chatOnly(refusal) });
      try {
        const { events, paths, fallbacks } = await collect(server);
        expect(paths).toEqual(['/v1/responses', '/v1/chat/completions']);
        expect(errors(events)).toEqual([]);
        expect(events.at(-1)).toMatchObject({ type: 'done' });
        expect(fallbacks.chatOnly(`${server.url}/v1`)).toBe(true);
      } finally {
        await server.close();
      }
    });
  }

  it('a 404 for an unknown model (OpenAI model_not_found, Ollama "model ... not found") is an error, not a missing route', async () => {
    const bodies: MockResponse[] = [
      openaiError(404, 'invalid_request_error', 'The model `gpt-4.1` does not exist or you do not have access to it.', 'model_not_found'),
      { kind: 'json', status: 404, body: { error: { message: "model 'gpt-4.1' not found", type: 'api_error', param: null, code: null } } },
    ];
    for (const body of bodies) {
      const server = await startMockOpenAI({ script: chatOnly(body) });
      try {
        const { events, paths, fallbacks } = await collect(server);
        expect(paths).toEqual(['/v1/responses']);
        expect(errors(events)).toHaveLength(1);
        expect(errors(events)[0]).toMatchObject({ error: { status: 404 } });
        expect(fallbacks.chatOnly(`${server.url}/v1`)).toBe(false);
      } finally {
        await server.close();
      }
    }
  });

  it('a remembered endpoint goes straight to Chat; another base URL still gets Responses', async () => {
    const fallbacks = new ApiFallbacks();
    fallbacks.record(`${full.url}/v1`, 'test');
    expect((await collect(full, fallbacks)).paths).toEqual(['/v1/chat/completions']);
    const other = await startMockOpenAI();
    try {
      expect((await collect(other, fallbacks)).paths).toEqual(['/v1/responses']);
    } finally {
      await other.close();
    }
  });
});
