/**
 * Hosted search for codex through the kernel, over the official `openai` SDK and the
 * wire-faithful mock, on both APIs: search blocks with their sources reach the transcript, and
 * the probe (`$LIVEAGENT_HOME/openai-search-probe.json`) remembers a refusal so later runs, in
 * this process or a new one, ask without search and the run goes on.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ContentBlock, LifecycleEvent, Message, Settings } from '../../plugin-api.js';
import { createKernel, type Kernel } from '../../core/kernel.js';
import openaiPlugin from '../../plugins/provider-openai/index.js';
import { chatCompletionReply, defaultOpenAIScript, loadOpenAIFixture, responsesReply, startMockOpenAI, type MockOpenAI } from '../fixtures/mock-openai.js';

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
beforeEach(() => {
  server.setScript(defaultOpenAIScript);
  server.rejectWebSearchFor([]);
});
afterEach(async () => {
  for (const k of kernels.splice(0)) await k.shutdown();
});

function tmpHome(): string {
  const h = fs.mkdtempSync(path.join(os.tmpdir(), 'la-openai-search-'));
  homes.push(h);
  return h;
}

async function boot(home: string, codex: Record<string, unknown>) {
  const settings: Settings = { providers: { codex: { apiKey: server.apiKey, baseUrl: `${server.url}/v1`, webSearch: true, ...codex } }, runtime: { retryBaseDelayMs: 1, retryMaxDelayMs: 50 } };
  const kernel = await createKernel({ home, plugins: [openaiPlugin], settings, thirdParty: false });
  kernels.push(kernel);
  expect(kernel.failures).toEqual([]);
  return kernel;
}

async function ask(kernel: Kernel, model: string, text = 'what is the weather in Paris?') {
  const run = kernel.runtime.startRun({ input: [{ type: 'text', text }], mode: 'text', provider: 'codex', model });
  const events: LifecycleEvent[] = [];
  for await (const e of run.events) events.push(e);
  const result = await run.result;
  const end = events.filter((e): e is Extract<LifecycleEvent, { type: 'message_end' }> => e.type === 'message_end').at(-1);
  return { result, events, message: end?.message as Message };
}

const probeFile = (home: string) => JSON.parse(fs.readFileSync(path.join(home, 'openai-search-probe.json'), 'utf8')).models as Record<string, { webSearch: boolean; reason?: string }>;
const bodies = (since: number, route: string) => server.requests.slice(since).filter((r) => r.path.startsWith(route)).map((r) => r.body as Record<string, any>);
const ofType = <T extends ContentBlock['type']>(m: Message, t: T) => m.content.filter((b): b is Extract<ContentBlock, { type: T }> => b.type === t);

const URL_A = 'https://example.com/weather?utm_source=openai';

describe('Responses: the hosted web_search tool', () => {
  it('a search reaches the transcript as a hosted_search block with its sources; the text carries citations', async () => {
    const kernel = await boot(tmpHome(), { api: 'responses' });
    server.setScript((req, i) => ({
      kind: 'sse',
      events: responsesReply({ text: 'Sunny today.', webSearch: { query: 'paris weather today', sources: [{ title: 'Paris weather', url: URL_A }], includeSources: true }, responseId: `resp_s${i}`, request: req.body }),
    }));
    const since = server.requests.length;
    const { result, message } = await ask(kernel, 'gpt-4.1');
    expect(result.status).toBe('completed');
    expect(bodies(since, '/v1/responses')[0]!.tools).toEqual([{ type: 'web_search' }]);
    const [search] = ofType(message, 'hosted_search');
    expect(search).toMatchObject({ provider: 'codex', queries: ['paris weather today'], sources: [{ title: 'Paris weather', url: URL_A }], status: 'completed' });
    expect(ofType(message, 'text')).toEqual([{ type: 'text', text: 'Sunny today.', citations: [{ url: URL_A, title: 'Paris weather' }] }]);
  });

  it('a refusal is remembered: the run goes on without search, and later runs (and a new process) never send the tool', async () => {
    const home = tmpHome();
    server.rejectWebSearchFor(['gpt-4.1-nano']);
    let kernel = await boot(home, { api: 'responses' });
    let since = server.requests.length;
    const first = await ask(kernel, 'gpt-4.1-nano');
    expect(first.result.status).toBe('completed');
    expect(ofType(first.message, 'text')[0]!.text).toBe('Mock reply to: what is the weather in Paris?');
    expect(bodies(since, '/v1/responses').map((b) => (b.tools ?? []).map((t: any) => t.type))).toEqual([['web_search'], []]);

    since = server.requests.length;
    expect((await ask(kernel, 'gpt-4.1-nano')).result.status).toBe('completed');
    expect(bodies(since, '/v1/responses').map((b) => b.tools)).toEqual([undefined]);
    await kernel.shutdown();
    expect(probeFile(home)['codex:gpt-4.1-nano']).toMatchObject({ webSearch: false, reason: expect.stringContaining('web_search') });

    kernel = await boot(home, { api: 'responses' });
    since = server.requests.length;
    expect((await ask(kernel, 'gpt-4.1-nano')).result.status).toBe('completed');
    expect(bodies(since, '/v1/responses').map((b) => b.tools)).toEqual([undefined]);
  });
});

describe('Chat Completions: web_search_options', () => {
  it('a search model answers with url_citation annotations: a hosted_search block with the sources, citations on the text', async () => {
    const kernel = await boot(tmpHome(), { api: 'chat' });
    server.setScript(() => ({ kind: 'sse', events: loadOpenAIFixture('chat-web-search').events }));
    const since = server.requests.length;
    const { result, message } = await ask(kernel, 'gpt-4o-search-preview');
    expect(result.status).toBe('completed');
    expect(bodies(since, '/v1/chat/completions').map((b) => b.web_search_options)).toEqual([{}]);
    const text = 'Paris is sunny today ([example.com](https://example.com/weather?utm_source=openai)).';
    expect(ofType(message, 'text')).toEqual([{ type: 'text', text, citations: [{ url: URL_A, title: 'Paris weather today' }] }]);
    expect(ofType(message, 'hosted_search')).toEqual([
      { type: 'hosted_search', provider: 'codex', id: 'chatcmpl-BGb1wp3aPcHH4kGyDjz5EY0Qx5Z4B', queries: [], sources: [{ title: 'Paris weather today', url: URL_A }], status: 'completed' },
    ]);
  });

  it('the builder streams the same shape: repeated annotations are counted once, several sources in order', async () => {
    const kernel = await boot(tmpHome(), { api: 'chat' });
    const sources = [
      { title: 'A', url: 'https://a.example/x', start_index: 0, end_index: 4 },
      { title: 'B', url: 'https://b.example/y', start_index: 5, end_index: 9 },
    ];
    server.setScript((req) => {
      const events = chatCompletionReply({ text: 'One. Two.', annotations: sources, model: (req.body as any).model, includeUsage: true });
      // A route that repeats the list on the finish chunk's message (seen on some proxies): no duplicates.
      const finish = events.find((e) => (e.data as any)?.choices?.[0]?.finish_reason)!;
      (finish.data as any).choices[0].message = { annotations: (events.find((e) => (e.data as any)?.choices?.[0]?.delta?.annotations)!.data as any).choices[0].delta.annotations };
      return { kind: 'sse', events };
    });
    const { message } = await ask(kernel, 'gpt-4o-mini-search-preview');
    expect(ofType(message, 'text')[0]!.citations).toEqual([{ url: 'https://a.example/x', title: 'A' }, { url: 'https://b.example/y', title: 'B' }]);
    expect(ofType(message, 'hosted_search')[0]!.sources).toEqual([{ title: 'A', url: 'https://a.example/x' }, { title: 'B', url: 'https://b.example/y' }]);
  });

  it('a refusal is remembered across runs and processes (the probe file); the run is retried once without search', async () => {
    const home = tmpHome();
    let kernel = await boot(home, { api: 'chat' });
    let since = server.requests.length;
    const first = await ask(kernel, 'gpt-4.1');
    expect(first.result.status).toBe('completed');
    expect(ofType(first.message, 'hosted_search')).toEqual([]);
    expect(bodies(since, '/v1/chat/completions').map((b) => 'web_search_options' in b)).toEqual([true, false]);

    // The gpt-5 family's refusal names the parameter instead.
    since = server.requests.length;
    expect((await ask(kernel, 'gpt-5')).result.status).toBe('completed');
    expect(bodies(since, '/v1/chat/completions').map((b) => 'web_search_options' in b)).toEqual([true, false]);

    since = server.requests.length;
    await ask(kernel, 'gpt-4.1');
    expect(bodies(since, '/v1/chat/completions').map((b) => 'web_search_options' in b)).toEqual([false]);
    await kernel.shutdown();
    const models = probeFile(home);
    expect(models['codex:chat:gpt-4.1']).toMatchObject({ webSearch: false, reason: expect.stringContaining('Web search options not supported') });
    expect(models['codex:chat:gpt-5']).toMatchObject({ webSearch: false, reason: expect.stringContaining("'web_search_options'") });

    kernel = await boot(home, { api: 'chat' });
    since = server.requests.length;
    expect((await ask(kernel, 'gpt-4.1')).result.status).toBe('completed');
    expect(bodies(since, '/v1/chat/completions').map((b) => 'web_search_options' in b)).toEqual([false]);
    // A search model is still asked, and its acceptance is remembered.
    await ask(kernel, 'gpt-4o-search-preview');
    await kernel.shutdown();
    expect(probeFile(home)['codex:chat:gpt-4o-search-preview']).toMatchObject({ webSearch: true });
  });

  it('after the Responses → Chat fallback the probe decides for Chat too', async () => {
    const home = tmpHome();
    // An endpoint without /v1/responses (vLLM-like 404), whose Chat route is the mock's.
    server.setScript((req, i) => (req.path.startsWith('/v1/responses') ? { kind: 'json', status: 404, body: { detail: 'Not Found' } } : defaultOpenAIScript(req, i)));
    const kernel = await boot(home, {});
    const since = server.requests.length;
    const { result } = await ask(kernel, 'gpt-4.1');
    expect(result.status).toBe('completed');
    const chat = bodies(since, '/v1/chat/completions');
    expect(chat.map((b) => 'web_search_options' in b)).toEqual([true, false]);
    expect(server.requests.slice(since).filter((r) => r.path.startsWith('/v1/responses')).length).toBe(1);
  });
});
