/**
 * What the codex provider sends: history conversion for both APIs (images, tool results,
 * foreign thinking, our reasoning items), tool choice, reasoning and token limits, Responses
 * storage chaining with previous_response_id, and the hosted-search probe.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Message, ProviderEvent, ProviderRequest } from '../../plugin-api.js';
import { createOpenAIProvider, SearchProbe, type OpenAIProviderOptions } from '../../plugins/provider-openai/index.js';
import { buildChatBody } from '../../plugins/provider-openai/chat-request.js';
import { resolveConfig } from '../../plugins/provider-openai/config.js';
import { defaultOpenAIScript, openaiError, startMockOpenAI, type MockOpenAI } from '../fixtures/mock-openai.js';

let server: MockOpenAI;
const dirs: string[] = [];
beforeAll(async () => {
  server = await startMockOpenAI();
});
afterAll(async () => {
  await server.close();
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});
beforeEach(() => server.setScript(defaultOpenAIScript));

function provider(api: 'responses' | 'chat', extra: Partial<OpenAIProviderOptions> = {}) {
  return createOpenAIProvider({ apiKey: server.apiKey, baseUrl: `${server.url}/v1`, api, envNames: null, ...extra });
}

const user = (id: string, text: string): Message => ({ id, role: 'user', content: [{ type: 'text', text }], createdAt: 1 });

function request(over: Partial<ProviderRequest> = {}): ProviderRequest {
  return { model: 'gpt-4.1', system: [{ id: 'base', text: 'Be brief.' }, { id: 'user-settings', text: 'Answer in English.' }], messages: [user('u1', 'hi')], tools: [], options: {}, conversationId: 'conv-r', ...over };
}

async function run(p: ReturnType<typeof provider>, r = request()): Promise<ProviderEvent[]> {
  const out: ProviderEvent[] = [];
  // The body sent (an observer's event) aside; the wire test below reads it.
  for await (const e of p.stream(r, new AbortController().signal)) if (e.type !== 'wire_request') out.push(e);
  return out;
}

/** Every event, the wire_request ones included. */
async function runWire(p: ReturnType<typeof provider>, r = request()): Promise<ProviderEvent[]> {
  const out: ProviderEvent[] = [];
  for await (const e of p.stream(r, new AbortController().signal)) out.push(e);
  return out;
}

const lastBody = () => server.requests.at(-1)!.body;

/** A conversation exercising every conversion rule. */
const HISTORY: Message[] = [
  {
    id: 'u1',
    role: 'user',
    createdAt: 1,
    content: [
      { type: 'text', text: 'look' },
      { type: 'image', mimeType: 'image/png', data: 'AAAA' },
      { type: 'image', mimeType: 'image/png', path: '/tmp/old.png' },
    ],
  },
  {
    id: 'a1',
    role: 'assistant',
    provider: 'codex',
    createdAt: 2,
    content: [
      { type: 'thinking', thinking: 'plan', provider: 'codex', providerData: { api: 'responses', id: 'rs_1', summary: [{ type: 'summary_text', text: 'plan' }], encrypted_content: 'enc1' } },
      { type: 'text', text: 'Let me look.' },
      { type: 'tool_call', id: 'call_1', name: 'Read', input: { file_path: '/a' } },
    ],
  },
  {
    id: 't1',
    role: 'tool',
    createdAt: 3,
    content: [{ type: 'tool_result', toolCallId: 'call_1', toolName: 'Read', isError: false, content: [{ type: 'text', text: 'file body' }, { type: 'image', mimeType: 'image/jpeg', data: 'BBBB' }] }],
  },
  {
    id: 'a2',
    role: 'assistant',
    provider: 'claude_code',
    createdAt: 4,
    content: [
      { type: 'thinking', thinking: 'claude thoughts', signature: 'sig', provider: 'claude_code' },
      { type: 'text', text: 'From Claude.' },
      { type: 'tool_call', id: 'toolu_01/needs.cleaning-and-is-a-rather-long-identifier', name: 'Bash', input: { command: 'ls' } },
    ],
  },
  {
    id: 't2',
    role: 'tool',
    createdAt: 5,
    content: [{ type: 'tool_result', toolCallId: 'toolu_01/needs.cleaning-and-is-a-rather-long-identifier', toolName: 'Bash', isError: true, content: [{ type: 'text', text: 'boom' }] }],
  },
  {
    id: 'a3',
    role: 'assistant',
    provider: 'codex',
    createdAt: 6,
    content: [
      { type: 'hosted_search', provider: 'codex', queries: ['q'], sources: [], status: 'completed', providerData: { items: [{ type: 'web_search_call', id: 'ws_1', status: 'completed', action: { type: 'search', query: 'q', sources: [{ type: 'url', url: 'https://x.test' }] } }] } },
      { type: 'hosted_search', provider: 'claude_code', queries: ['other'], sources: [], status: 'completed' },
      { type: 'text', text: 'Found.' },
    ],
  },
  user('u2', 'next'),
];

describe('Responses request', () => {
  it('converts the whole history: images, our reasoning item, tool calls and outputs, searches; foreign thinking dropped', async () => {
    await run(provider('responses'), request({ model: 'gpt-5', messages: HISTORY }));
    const body = lastBody();
    const bashId = body.input[7].call_id as string;
    expect(bashId).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
    expect(body.input).toEqual([
      {
        role: 'user',
        content: [
          { type: 'input_text', text: 'look' },
          { type: 'input_image', image_url: 'data:image/png;base64,AAAA', detail: 'auto' },
          { type: 'input_text', text: '[image /tmp/old.png (image/png) is no longer attached]' },
        ],
      },
      { type: 'reasoning', summary: [{ type: 'summary_text', text: 'plan' }], encrypted_content: 'enc1' },
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Let me look.' }] },
      { type: 'function_call', call_id: 'call_1', name: 'Read', arguments: '{"file_path":"/a"}' },
      {
        type: 'function_call_output',
        call_id: 'call_1',
        output: [
          { type: 'input_text', text: 'file body' },
          { type: 'input_image', image_url: 'data:image/jpeg;base64,BBBB', detail: 'auto' },
        ],
      },
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'From Claude.' }] },
      { type: 'function_call', call_id: bashId, name: 'Bash', arguments: '{"command":"ls"}' },
      { type: 'function_call_output', call_id: bashId, output: 'Error: boom' },
      { type: 'web_search_call', status: 'completed', action: { type: 'search', query: 'q' } },
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Found.' }] },
      { role: 'user', content: [{ type: 'input_text', text: 'next' }] },
    ]);
    expect(body).toMatchObject({
      model: 'gpt-5',
      instructions: 'Be brief.\n\nAnswer in English.',
      stream: true,
      store: false,
      reasoning: { summary: 'auto' },
      include: ['reasoning.encrypted_content'],
    });
    expect(body.previous_response_id).toBeUndefined();
  });

  it('foreignThinking "text" sends another provider\'s thinking as marked text; a model without reasoning gets no reasoning items', async () => {
    await run(provider('responses', { foreignThinking: 'text' }), request({ model: 'gpt-4.1', messages: HISTORY }));
    const input = lastBody().input as any[];
    expect(input.some((i) => i.type === 'reasoning')).toBe(false);
    expect(input).toContainEqual({ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: '<thinking>\nclaude thoughts\n</thinking>' }] });
    expect(lastBody().reasoning).toBeUndefined();
    expect(lastBody().include).toBeUndefined();
  });

  it('tools, tool choice, effort and max output tokens', async () => {
    const tools = [{ name: 'Echo', description: 'Echo text', inputSchema: { type: 'object', properties: { text: { type: 'string' } } } }];
    const p = provider('responses', { reasoningEffort: 'high', maxOutputTokens: 999 });
    const choices: Array<[ProviderRequest['toolChoice'], unknown]> = [
      ['auto', 'auto'],
      ['any', 'required'],
      ['none', 'none'],
      [{ name: 'Echo' }, { type: 'function', name: 'Echo' }],
    ];
    for (const [choice, wire] of choices) {
      await run(p, request({ model: 'o4-mini', tools, toolChoice: choice }));
      expect(lastBody().tool_choice).toEqual(wire);
    }
    expect(lastBody()).toMatchObject({
      tools: [{ type: 'function', name: 'Echo', description: 'Echo text', parameters: tools[0]!.inputSchema, strict: false }],
      reasoning: { effort: 'high', summary: 'auto' },
      max_output_tokens: 999,
    });
    await run(p, request({ model: 'o4-mini', maxOutputTokens: 50 }));
    expect(lastBody().max_output_tokens).toBe(50);
    expect(lastBody().tools).toBeUndefined();
    expect(lastBody().tool_choice).toBeUndefined();
  });
});

describe('Chat Completions request', () => {
  it('converts the history: system first, images, tool_calls with cleaned ids, tool messages, tool images after them', async () => {
    await run(provider('chat'), request({ messages: HISTORY }));
    const body = lastBody();
    const bashId = body.messages[5].tool_calls[0].id as string;
    expect(bashId.length).toBeLessThanOrEqual(40);
    expect(bashId).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(body.messages).toEqual([
      { role: 'system', content: 'Be brief.\n\nAnswer in English.' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'look' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
          { type: 'text', text: '[image /tmp/old.png (image/png) is no longer attached]' },
        ],
      },
      { role: 'assistant', content: 'Let me look.', tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'Read', arguments: '{"file_path":"/a"}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: 'file body' },
      { role: 'user', content: [{ type: 'text', text: 'Images returned by the tool calls above:' }, { type: 'image_url', image_url: { url: 'data:image/jpeg;base64,BBBB' } }] },
      { role: 'assistant', content: 'From Claude.', tool_calls: [{ id: bashId, type: 'function', function: { name: 'Bash', arguments: '{"command":"ls"}' } }] },
      { role: 'tool', tool_call_id: bashId, content: 'Error: boom' },
      { role: 'assistant', content: 'Found.' },
      { role: 'user', content: 'next' },
    ]);
    expect(body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
  });

  it('tool choice, effort, and the token limit parameter per endpoint', async () => {
    const tools = [{ name: 'Echo', description: 'Echo text', inputSchema: { type: 'object' } }];
    const p = provider('chat', { reasoningEffort: 'low', maxOutputTokens: 321 });
    await run(p, request({ tools, toolChoice: 'any' }));
    expect(lastBody()).toMatchObject({ tool_choice: 'required', reasoning_effort: 'low', max_tokens: 321, tools: [{ type: 'function', function: { name: 'Echo', description: 'Echo text', parameters: { type: 'object' } } }] });
    await run(p, request({ tools, toolChoice: { name: 'Echo' } }));
    expect(lastBody().tool_choice).toEqual({ type: 'function', function: { name: 'Echo' } });
    // The official endpoint: max_completion_tokens (reasoning models refuse max_tokens) and a cache key.
    const official = resolveConfig({ id: 'codex', base: { apiKey: 'k', api: 'chat' }, settings: undefined, env: {}, keyOptional: false });
    if (!official.ok) throw new Error(official.error);
    const body = buildChatBody(request({ model: 'gpt-5', maxOutputTokens: 10, thinkingBudget: 20_000 }), { providerId: 'codex', config: official.config, reasoning: true });
    expect(body).toMatchObject({ max_completion_tokens: 10, reasoning_effort: 'high', prompt_cache_key: 'conv-r' });
    expect(body.max_tokens).toBeUndefined();
  });
});

describe('Responses storage', () => {
  const reply: Message = { id: 'a1', role: 'assistant', provider: 'codex', createdAt: 2, content: [{ type: 'tool_call', id: 'call_9', name: 'Echo', input: { text: 'x' } }] };
  const results: Message = { id: 't1', role: 'tool', createdAt: 3, content: [{ type: 'tool_result', toolCallId: 'call_9', toolName: 'Echo', isError: false, content: [{ type: 'text', text: 'echo:x' }] }] };

  it('store on: chains with previous_response_id and sends only the new items; a diverged history starts over', async () => {
    const p = provider('responses', { store: true });
    const conversationId = 'chain-1';
    await run(p, request({ conversationId }));
    const first = server.responsesCalls.at(-1)!;
    expect(first).toMatchObject({ store: true, previous_response_id: null });
    expect(p.chains.last(conversationId)).toBe(first.responseId);

    await run(p, request({ conversationId, messages: [user('u1', 'hi'), reply, results] }));
    expect(server.responsesCalls.at(-1)).toMatchObject({ store: true, previous_response_id: first.responseId });
    expect(lastBody().input).toEqual([{ type: 'function_call_output', call_id: 'call_9', output: 'echo:x' }]);
    expect(lastBody().instructions).toBe('Be brief.\n\nAnswer in English.');
    const second = server.responsesCalls.at(-1)!.responseId;

    await run(p, request({ conversationId, messages: [user('u1-edited', 'hello again')] }));
    expect(server.responsesCalls.at(-1)).toMatchObject({ previous_response_id: null });
    expect(lastBody().input).toEqual([{ role: 'user', content: [{ type: 'input_text', text: 'hello again' }] }]);
    expect(p.chains.last(conversationId)).not.toBe(second);
  });

  it('store on: an unknown previous response falls back once to the full input', async () => {
    const p = provider('responses', { store: true });
    p.chains.remember('chain-2', 'codex', 'resp_gone', 'gpt-4.1', [user('u1', 'hi')]);
    const before = server.responsesCalls.length;
    const events = await run(p, request({ conversationId: 'chain-2', messages: [user('u1', 'hi'), reply, results] }));
    expect(events.at(-1)).toMatchObject({ type: 'done' });
    const calls = server.responsesCalls.slice(before);
    expect(calls.map((c) => c.previous_response_id)).toEqual(['resp_gone', null]);
    expect((server.requests[calls[1]!.requestIndex]!.body.input as unknown[]).length).toBe(3);
  });

  it('store off (default): store false and the full input every round', async () => {
    const p = provider('responses');
    await run(p, request({ conversationId: 'nochain' }));
    await run(p, request({ conversationId: 'nochain', messages: [user('u1', 'hi'), reply, results] }));
    expect(server.responsesCalls.slice(-2).map((c) => [c.store, c.previous_response_id])).toEqual([
      [false, null],
      [false, null],
    ]);
    expect(lastBody().input).toHaveLength(3);
  });
});

describe('hosted-search probe', () => {
  it('a refusal naming web_search is remembered per model (memory and file); the round is retried once without search', async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'la-openai-probe-'));
    dirs.push(home);
    const file = path.join(home, 'openai-search-probe.json');
    server.rejectWebSearchFor(['gpt-4.1-nano']);
    try {
      const probe = new SearchProbe(file);
      const p = provider('responses', { webSearch: true, probe });
      let before = server.responsesCalls.length;
      const events = await run(p, request({ model: 'gpt-4.1-nano' }));
      expect(events.at(-1)).toMatchObject({ type: 'done' });
      let bodies = server.responsesCalls.slice(before).map((c) => server.requests[c.requestIndex]!.body);
      expect(bodies.map((b) => (b.tools ?? []).map((t: any) => t.type))).toEqual([['web_search'], []]);
      expect(bodies[0].include).toEqual(['web_search_call.action.sources']);
      await probe.flush();
      expect(JSON.parse(fs.readFileSync(file, 'utf8')).models['codex:gpt-4.1-nano']).toMatchObject({ webSearch: false, reason: expect.stringContaining('web_search') });

      before = server.responsesCalls.length;
      await run(p, request({ model: 'gpt-4.1-nano' }));
      expect(server.responsesCalls.slice(before)).toHaveLength(1);
      expect(lastBody().tools).toBeUndefined();

      // A new process reads the answer from the file.
      const fresh = provider('responses', { webSearch: true, probe: new SearchProbe(file) });
      before = server.responsesCalls.length;
      await run(fresh, request({ model: 'gpt-4.1-nano' }));
      expect(server.responsesCalls.slice(before)).toHaveLength(1);
      expect(lastBody().tools).toBeUndefined();

      // Another model still gets search, and its acceptance is remembered.
      await run(fresh, request({ model: 'gpt-4.1' }));
      expect(lastBody().tools).toEqual([{ type: 'web_search' }]);
      expect(fresh.probe.supported('codex', 'gpt-4.1')).toBe(true);
    } finally {
      server.rejectWebSearchFor([]);
    }
  });

  it('wire_request carries the body exactly as sent, for Responses and Chat Completions', async () => {
    for (const api of ['responses', 'chat'] as const) {
      const p = provider(api);
      const events = await runWire(p, request({ model: 'gpt-4.1' }));
      const wire = events.find((e) => e.type === 'wire_request') as Extract<ProviderEvent, { type: 'wire_request' }>;
      expect(wire.api).toBe(api === 'chat' ? 'chat.completions' : 'responses');
      expect(wire.body).toEqual(lastBody());
    }
  });

  it('a 400 that does not name the tool is an error, not a probe answer', async () => {
    const probe = new SearchProbe();
    const p = provider('responses', { webSearch: true, probe });
    server.setScript(() => openaiError(400, 'invalid_request_error', 'Invalid schema for function.'));
    const events = await run(p, request({ model: 'gpt-4.1' }));
    expect(events).toEqual([{ type: 'error', error: expect.objectContaining({ code: 'bad_request', status: 400 }) }]);
    expect(probe.supported('codex', 'gpt-4.1')).toBeUndefined();
  });
});
