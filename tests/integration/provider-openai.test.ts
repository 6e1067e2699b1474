/**
 * The codex provider streamed directly (provider.stream) against the wire-faithful OpenAI mock:
 * every documented fixture and builder sequence maps to the right normalized events, identically
 * under every byte split, CRLF and unknown events; failures end with exactly one error event.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ContentBlock, ProviderEvent, ProviderRequest } from '../../plugin-api.js';
import { createOpenAIProvider, type OpenAIProviderOptions } from '../../plugins/provider-openai/index.js';
import { HANDLED_CHAT_FIELDS } from '../../plugins/provider-openai/chat-stream.js';
import { HANDLED_RESPONSES_EVENTS } from '../../plugins/provider-openai/responses-stream.js';
import { encodeSse, type DeliveryOptions, type SseEvent } from '../fixtures/mock-http.js';
import {
  chatCompletionReply,
  chatStreamError,
  defaultOpenAIScript,
  loadOpenAIFixture,
  listOpenAIFixtures,
  openaiError,
  rateLimited,
  responsesEvent,
  responsesReply,
  startMockOpenAI,
  type MockOpenAI,
} from '../fixtures/mock-openai.js';

let server: MockOpenAI;
beforeAll(async () => {
  server = await startMockOpenAI();
});
afterAll(() => server.close());
beforeEach(() => server.setScript(defaultOpenAIScript));

function provider(api: 'responses' | 'chat', extra: Partial<OpenAIProviderOptions> = {}) {
  return createOpenAIProvider({ apiKey: server.apiKey, baseUrl: `${server.url}/v1`, api, envNames: null, ...extra });
}

function request(over: Partial<ProviderRequest> = {}): ProviderRequest {
  return {
    model: 'gpt-4.1',
    system: [{ id: 'base', text: 'Be brief.' }],
    messages: [{ id: 'u1', role: 'user', content: [{ type: 'text', text: 'hi' }], createdAt: 1 }],
    tools: [],
    options: {},
    conversationId: 'conv-1',
    ...over,
  };
}

async function collect(p: ReturnType<typeof provider>, r = request(), signal = new AbortController().signal): Promise<ProviderEvent[]> {
  const out: ProviderEvent[] = [];
  // The body sent (an observer's event) aside: tests of it read wire_request themselves.
  for await (const e of p.stream(r, signal)) if (e.type !== 'wire_request') out.push(e);
  return out;
}

/** Final blocks by index, the streamed text per index, and the terminal events. */
function summary(events: ProviderEvent[]) {
  const blocks: ContentBlock[] = [];
  const streamed: Record<number, string> = {};
  for (const e of events) {
    if (e.type === 'block_end') blocks[e.index] = e.block;
    if (e.type === 'text_delta' || e.type === 'thinking_delta') streamed[e.index] = (streamed[e.index] ?? '') + e.text;
  }
  return {
    blocks,
    streamed,
    usage: events.filter((e) => e.type === 'usage').map((e) => (e as { usage: unknown }).usage),
    done: events.filter((e) => e.type === 'done'),
    errors: events.filter((e) => e.type === 'error').map((e) => (e as Extract<ProviderEvent, { type: 'error' }>).error),
  };
}

const sse = (events: SseEvent[], delivery: DeliveryOptions = {}) => () => ({ kind: 'sse' as const, events, ...delivery });

// ─── Scenarios: every sequence the mock sends in this file, so coverage can be checked ────────

const refusalEvents: SseEvent[] = (() => {
  const at = { item_id: 'msg_r', output_index: 0, content_index: 0 };
  const e = (type: string, fields: Record<string, unknown>) => responsesEvent(type, 0, fields);
  const base = responsesReply({ text: [], responseId: 'resp_refusal' });
  return [
    base[0]!,
    e('response.output_item.added', { output_index: 0, item: { id: 'msg_r', type: 'message', status: 'in_progress', role: 'assistant', content: [] } }),
    e('response.content_part.added', { ...at, part: { type: 'refusal', refusal: '' } }),
    e('response.refusal.delta', { ...at, delta: "I can't" }),
    e('response.refusal.delta', { ...at, delta: ' help with that.' }),
    e('response.refusal.done', { ...at, refusal: "I can't help with that." }),
    e('response.content_part.done', { ...at, part: { type: 'refusal', refusal: "I can't help with that." } }),
    e('response.output_item.done', { output_index: 0, item: { id: 'msg_r', type: 'message', status: 'completed', role: 'assistant', content: [{ type: 'refusal', refusal: "I can't help with that." }] } }),
    base.at(-1)!,
  ];
})();

/** Raw reasoning text (open-weight models served through Responses) and two summary parts. */
const reasoningTextEvents: SseEvent[] = (() => {
  const base = responsesReply({ text: 'Done.', responseId: 'resp_rt' });
  const at = { item_id: 'rs_rt', output_index: 0 };
  const e = (type: string, fields: Record<string, unknown>) => responsesEvent(type, 0, fields);
  return [
    base[0]!,
    e('response.output_item.added', { output_index: 0, item: { id: 'rs_rt', type: 'reasoning', summary: [] } }),
    e('response.reasoning_text.delta', { ...at, content_index: 0, delta: 'raw ' }),
    e('response.reasoning_text.delta', { ...at, content_index: 0, delta: 'thought' }),
    e('response.output_item.done', { output_index: 0, item: { id: 'rs_rt', type: 'reasoning', summary: [], content: [{ type: 'reasoning_text', text: 'raw thought' }], encrypted_content: 'gAAAA-enc' } }),
    e('response.output_item.added', { output_index: 1, item: { id: 'rs_two', type: 'reasoning', summary: [] } }),
    e('response.reasoning_summary_text.delta', { item_id: 'rs_two', output_index: 1, summary_index: 0, delta: 'Part one.' }),
    e('response.reasoning_summary_text.delta', { item_id: 'rs_two', output_index: 1, summary_index: 1, delta: 'Part two.' }),
    e('response.output_item.done', { output_index: 1, item: { id: 'rs_two', type: 'reasoning', summary: [{ type: 'summary_text', text: 'Part one.' }, { type: 'summary_text', text: 'Part two.' }] } }),
    ...base.slice(2),
  ];
})();

const builderAll = responsesReply({
  reasoningSummary: ['Need ', 'fresh data.'],
  webSearch: { query: 'paris weather', sources: [{ title: 'Météo', url: 'https://example.com/m' }], includeSources: true },
  text: ['Sunny ☀', ' in Paris.'],
  functionCalls: [{ call_id: 'call_1', name: 'save', args: { note: 'sunny 東京' } }],
  usage: { input_tokens: 100, output_tokens: 20, cached_tokens: 64, reasoning_tokens: 10 },
  responseId: 'resp_all',
  obfuscation: true,
});

const RESPONSES: Record<string, SseEvent[]> = {
  ...Object.fromEntries(listOpenAIFixtures().filter((n) => n.startsWith('responses-')).map((n) => [n, loadOpenAIFixture(n).events])),
  'builder-all': builderAll,
  refusal: refusalEvents,
  'reasoning-text': reasoningTextEvents,
  incomplete: responsesReply({ text: 'cut', incomplete: 'max_output_tokens', responseId: 'resp_inc' }),
};

const vllmReasoning: SseEvent[] = chatCompletionReply({ text: ['ok'] }).map((e, i) => {
  if (i !== 1 || typeof e.data !== 'object') return e;
  const d = structuredClone(e.data) as any;
  d.choices[0].delta = { reasoning: 'vllm thinks', content: null };
  return { data: d };
});
const chatRefusal: SseEvent[] = chatCompletionReply({ text: ['x'] }).map((e, i) => {
  if (i !== 1 || typeof e.data !== 'object') return e;
  const d = structuredClone(e.data) as any;
  d.choices[0].delta = { refusal: 'No.' };
  return { data: d };
});

const CHAT: Record<string, SseEvent[]> = {
  ...Object.fromEntries(listOpenAIFixtures().filter((n) => n.startsWith('chat-')).map((n) => [n, loadOpenAIFixture(n).events])),
  'builder-tools': chatCompletionReply({
    text: 'Let me check ✓ 東京.',
    toolCalls: [
      { id: 'call_a', name: 'get_weather', args: { city: 'Tōkyō' } },
      { id: 'call_b', name: 'get_time', args: { tz: 'Asia/Tokyo' }, pieces: ['{"tz":', '"Asia/Tokyo"}'] },
    ],
    includeUsage: true,
    usage: { prompt_tokens: 30, completion_tokens: 12, cached_tokens: 8 },
  }),
  'vllm-reasoning': vllmReasoning,
  refusal: chatRefusal,
};

const apiOf = (name: string) => (name in RESPONSES ? 'responses' : 'chat');
const scenario = (name: string) => RESPONSES[name] ?? CHAT[name]!;

describe('coverage of the mock', () => {
  it('every Responses event type the plugin handles is sent by some scenario', () => {
    const sent = new Set(Object.values(RESPONSES).flatMap((evs) => evs.map((e) => (e.data as { type?: string }).type)));
    const missing = HANDLED_RESPONSES_EVENTS.filter((t) => !sent.has(t));
    expect(missing).toEqual([]);
  });

  it('every Chat delta field the plugin reads is sent by some scenario', () => {
    const sent = new Set<string>();
    for (const evs of Object.values(CHAT))
      for (const e of evs) {
        const d = e.data as any;
        if (typeof d !== 'object') continue;
        if (d.usage) sent.add('usage');
        for (const c of d.choices ?? []) {
          if (c.finish_reason) sent.add('finish_reason');
          for (const [k, v] of Object.entries(c.delta ?? {})) if (v) sent.add(k);
        }
      }
    expect(HANDLED_CHAT_FIELDS.filter((f) => !sent.has(f))).toEqual([]);
  });
});

describe('fixtures replay to the right blocks', () => {
  it('responses-text: one text block, usage and done with the response id', async () => {
    server.setScript(sse(RESPONSES['responses-text']!));
    const s = summary(await collect(provider('responses')));
    expect(s.blocks).toEqual([{ type: 'text', text: 'Hi there! How can I help?' }]);
    expect(s.streamed[0]).toBe('Hi there! How can I help?');
    expect(s.done).toEqual([{ type: 'done', stopReason: 'end', responseId: 'resp_67ccfcdd16748190a91872c75d38539e09e4d4aac714747c' }]);
    expect(s.usage).toHaveLength(1);
  });

  it('responses-function-call: streamed arguments become a parsed tool call', async () => {
    server.setScript(sse(RESPONSES['responses-function-call']!));
    const events = await collect(provider('responses'));
    expect(events[0]).toEqual({ type: 'block_start', index: 0, block: { type: 'tool_call', id: 'call_1234xyz', name: 'get_weather' } });
    expect(events.filter((e) => e.type === 'tool_input_delta').map((e) => (e as { json: string }).json).join('')).toBe('{"location":"Paris, France"}');
    const s = summary(events);
    expect(s.blocks).toEqual([{ type: 'tool_call', id: 'call_1234xyz', name: 'get_weather', input: { location: 'Paris, France' } }]);
    expect(s.done[0]).toMatchObject({ stopReason: 'tool_use' });
  });

  it('responses-reasoning-summary: a codex thinking block keeps the reasoning item, then text; reasoning tokens counted', async () => {
    server.setScript(sse(RESPONSES['responses-reasoning-summary']!));
    const s = summary(await collect(provider('responses')));
    const text = '**Answering a greeting**\n\nThe user said hello; reply briefly and offer help.';
    expect(s.blocks[0]).toEqual({
      type: 'thinking',
      thinking: text,
      provider: 'codex',
      providerData: { api: 'responses', id: 'rs_6806bfca0b2481918a5748308061a2600d3ce51bdffd5476', summary: [{ type: 'summary_text', text }] },
    });
    expect(s.streamed[0]).toBe(text);
    expect(s.blocks[1]).toEqual({ type: 'text', text: 'Hello! How can I help today?' });
    expect(s.usage[0]).toEqual({ inputTokens: 8, outputTokens: 140, reasoningTokens: 128 });
  });

  it('responses-web-search: one hosted_search block with the query and cited source; text carries citations', async () => {
    server.setScript(sse(RESPONSES['responses-web-search']!));
    const s = summary(await collect(provider('responses')));
    const url = 'https://example.com/weather?utm_source=openai';
    expect(s.blocks[0]).toMatchObject({
      type: 'hosted_search',
      provider: 'codex',
      id: 'ws_67c9fa0502748190b7dd390736892e100be649c1a5ff9609',
      queries: ['weather Paris today'],
      sources: [{ title: 'Paris weather today', url }],
      status: 'completed',
    });
    expect(s.blocks[1]).toEqual({ type: 'text', text: 'Paris will be sunny today ([example.com](https://example.com/weather?utm_source=openai)).', citations: [{ url, title: 'Paris weather today' }] });
  });

  it('builder: reasoning, search with action.sources, text, function call, cached usage in one response', async () => {
    server.setScript(sse(builderAll));
    const s = summary(await collect(provider('responses')));
    expect(s.blocks.map((b) => b.type)).toEqual(['thinking', 'hosted_search', 'text', 'tool_call']);
    expect(s.blocks[1]).toMatchObject({ queries: ['paris weather'], sources: [{ url: 'https://example.com/m', title: 'Météo' }] });
    expect(s.blocks[3]).toMatchObject({ input: { note: 'sunny 東京' } });
    expect(s.usage[0]).toEqual({ inputTokens: 36, outputTokens: 20, cacheReadTokens: 64, reasoningTokens: 10 });
    expect(s.done[0]).toMatchObject({ stopReason: 'tool_use', responseId: 'resp_all' });
  });

  it('refusal parts are text with a refusal stop; raw reasoning text and multi-part summaries are thinking', async () => {
    server.setScript(sse(refusalEvents));
    let s = summary(await collect(provider('responses')));
    expect(s.blocks).toEqual([{ type: 'text', text: "I can't help with that." }]);
    expect(s.done[0]).toMatchObject({ stopReason: 'refusal' });
    server.setScript(sse(reasoningTextEvents));
    s = summary(await collect(provider('responses')));
    expect(s.blocks[0]).toMatchObject({ type: 'thinking', thinking: 'raw thought', providerData: { encrypted_content: 'gAAAA-enc' } });
    expect(s.blocks[1]).toMatchObject({ type: 'thinking', thinking: 'Part one.\n\nPart two.' });
    expect(s.blocks[2]).toEqual({ type: 'text', text: 'Done.' });
  });

  it('chat fixtures: text, usage from include_usage, tool call by index, DeepSeek reasoning_content', async () => {
    const p = provider('chat');
    server.setScript(sse(CHAT['chat-text']!));
    expect(summary(await collect(p)).blocks).toEqual([{ type: 'text', text: 'Hello!' }]);
    server.setScript(sse(CHAT['chat-include-usage']!));
    const u = summary(await collect(p));
    expect(u.usage).toEqual([{ inputTokens: 19, outputTokens: 10 }]);
    expect(u.done).toEqual([{ type: 'done', stopReason: 'end', responseId: 'chatcmpl-123' }]);
    server.setScript(sse(CHAT['chat-tool-call']!));
    const t = summary(await collect(p));
    expect(t.blocks).toEqual([{ type: 'tool_call', id: 'call_DdmO9pD3xa9XTPNJ32zg2hcA', name: 'get_weather', input: { location: 'Paris, France' } }]);
    expect(t.done[0]).toMatchObject({ stopReason: 'tool_use' });
    server.setScript(sse(CHAT['chat-deepseek-reasoning']!));
    const d = summary(await collect(p));
    expect(d.blocks).toEqual([
      { type: 'thinking', thinking: 'Compare 9.11 and 9.8.', provider: 'codex' },
      { type: 'text', text: '9.8 is greater.' },
    ]);
  });

  it('chat builder: text, then two tool calls, usage with cached tokens', async () => {
    server.setScript(sse(CHAT['builder-tools']!));
    const s = summary(await collect(provider('chat')));
    expect(s.blocks).toEqual([
      { type: 'text', text: 'Let me check ✓ 東京.' },
      { type: 'tool_call', id: 'call_a', name: 'get_weather', input: { city: 'Tōkyō' } },
      { type: 'tool_call', id: 'call_b', name: 'get_time', input: { tz: 'Asia/Tokyo' } },
    ]);
    expect(s.usage).toEqual([{ inputTokens: 22, outputTokens: 12, cacheReadTokens: 8 }]);
  });
});

describe('delivery does not change the result', () => {
  const modes: Array<[string, DeliveryOptions]> = [
    ['random splits', { split: 'random', seed: 5 }],
    ['bytewise', { split: 'bytewise' }],
    ['CRLF + random', { crlf: true, split: 'random', seed: 9 }],
  ];
  const names = [...Object.keys(RESPONSES), ...Object.keys(CHAT)];
  for (const name of names) {
    it(`${name}: identical events for every split, CRLF and with unknown events`, async () => {
      const api = apiOf(name);
      const events = scenario(name);
      const p = provider(api);
      server.setScript(sse(events));
      const baseline = await collect(p);
      expect(baseline.filter((e) => e.type === 'error' || e.type === 'done')).toHaveLength(1);
      for (const [, delivery] of modes) {
        server.setScript(sse(events, delivery));
        expect(await collect(p)).toEqual(baseline);
      }
      const unknown: SseEvent[] =
        api === 'responses'
          ? [responsesEvent('response.future_feature', 0, { payload: { x: 1 } }), { data: { type: 'response.no_event_line', sequence_number: 1 } }]
          : [{ data: { id: 'chatcmpl-x', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { x_new: 1 }, finish_reason: null }], vendor: 'v' } }];
      const withUnknown = events.flatMap((e, i) => (i === 1 || i === Math.floor(events.length / 2) ? [...unknown, e] : [e]));
      server.setScript(sse(withUnknown, { split: 'random', seed: 13 }));
      expect(await collect(p)).toEqual(baseline);
    });
  }
});

/** Bytes of the encoded stream up to (and a few bytes into) event `k`. */
function bytesThrough(events: SseEvent[], k: number): number {
  return Buffer.byteLength(encodeSse(events).slice(0, k).join(''), 'utf8') + 12;
}

describe('failures end with exactly one error event, partial text kept', () => {
  const textReply = () => responsesReply({ text: ['Hello', ' there', ' world', ' again'], responseId: 'resp_p' });
  const firstTwo = 'Hello there';

  for (const api of ['responses', 'chat'] as const) {
    const reply = () => (api === 'responses' ? textReply() : chatCompletionReply({ text: ['Hello', ' there', ' world', ' again'], includeUsage: true }));
    const cutAt = (events: SseEvent[]) => events.findIndex((e) => JSON.stringify(e.data).includes('" world"'));

    it(`${api}: malformed JSON mid-stream`, async () => {
      const events = reply();
      const k = cutAt(events);
      server.setScript(sse([...events.slice(0, k), { data: '{"type": "response.output_text.delta", "delta": ' }, ...events.slice(k)]));
      const s = summary(await collect(provider(api)));
      expect(s.errors).toHaveLength(1);
      expect(s.errors[0]).toMatchObject({ code: 'malformed', retryable: false });
      expect(s.done).toEqual([]);
      expect(Object.values(s.streamed).join('')).toBe(firstTwo);
    });

    it(`${api}: socket closed mid-stream (early EOF)`, async () => {
      const events = reply();
      server.setScript(sse(events, { truncateAfterBytes: bytesThrough(events, cutAt(events)) }));
      const s = summary(await collect(provider(api)));
      expect(s.errors).toEqual([expect.objectContaining({ code: 'network', retryable: false })]);
      expect(Object.values(s.streamed).join('')).toBe(firstTwo);
    });

    it(`${api}: clean end before the terminal event`, async () => {
      const events = reply();
      server.setScript(sse(events.slice(0, cutAt(events))));
      const s = summary(await collect(provider(api)));
      expect(s.errors).toEqual([expect.objectContaining({ code: 'network', message: 'the stream ended before the response was complete' })]);
      expect(Object.values(s.streamed).join('')).toBe(firstTwo);
      expect(s.done).toEqual([]);
    });
  }

  it('chat: an error chunk mid-stream is classified by its type', async () => {
    const events = chatCompletionReply({ text: ['partial'], done: false }).slice(0, 2);
    server.setScript(sse([...events, chatStreamError('The server had an error.', 'server_error')]));
    const s = summary(await collect(provider('chat')));
    expect(s.errors).toEqual([{ code: 'server', retryable: true, message: 'The server had an error. (server_error)' }]);
    expect(s.streamed[0]).toBe('partial');
  });

  it('responses: failed, error events (documented and live) and incomplete each give one error', async () => {
    const p = provider('responses');
    server.setScript(sse(RESPONSES['responses-failed']!));
    expect(summary(await collect(p)).errors).toEqual([{ code: 'server', retryable: true, message: 'The model failed to generate a response. (server_error)' }]);
    server.setScript(sse(RESPONSES['responses-error-documented']!));
    expect(summary(await collect(p)).errors).toEqual([{ code: 'stream', retryable: false, message: 'Something went wrong (ERR_SOMETHING)' }]);
    server.setScript(sse(RESPONSES['responses-error-live']!));
    expect(summary(await collect(p)).errors).toEqual([{ code: 'rate_limited', retryable: true, message: 'Too Many Requests (too_many_requests)' }]);
    server.setScript(sse(RESPONSES.incomplete!));
    const inc = summary(await collect(p));
    expect(inc.errors).toEqual([{ code: 'max_tokens', retryable: false, message: 'the response is incomplete (max_output_tokens)' }]);
    expect(inc.usage).toHaveLength(1);
    expect(inc.streamed[0]).toBe('cut');
  });

  it('HTTP errors: 429 retryable with retry-after; quota, 400, 401, 403 not; 5xx retryable', async () => {
    const p = provider('responses');
    const cases: Array<[() => any, object]> = [
      [() => rateLimited(7), { code: 'rate_limited', retryable: true, retryAfterMs: 7000, status: 429 }],
      [() => openaiError(429, 'insufficient_quota', 'You exceeded your current quota, please check your plan and billing details.', 'insufficient_quota'), { code: 'quota', retryable: false, status: 429 }],
      [() => openaiError(400, 'invalid_request_error', 'Bad thing.'), { code: 'bad_request', retryable: false, status: 400 }],
      [() => openaiError(403, 'invalid_request_error', 'Not allowed.'), { code: 'forbidden', retryable: false, status: 403 }],
      [() => openaiError(500, 'server_error', 'Oops.'), { code: 'server', retryable: true, status: 500 }],
    ];
    for (const [reply, expected] of cases) {
      server.setScript(reply);
      const events = await collect(p);
      expect(events).toHaveLength(1);
      expect(summary(events).errors[0]).toMatchObject(expected);
    }
    const bad = createOpenAIProvider({ apiKey: 'sk-wrong-key-123456', baseUrl: `${server.url}/v1`, api: 'chat', envNames: null });
    expect(summary(await collect(bad)).errors[0]).toMatchObject({ code: 'auth', status: 401, retryable: false });
  });

  it('no key for the official endpoint, a bad setting, and an unreachable server are errors, not throws', async () => {
    const noKey = createOpenAIProvider({ envNames: null });
    expect(summary(await collect(noKey as any)).errors[0]).toMatchObject({ code: 'auth', message: expect.stringContaining('OPENAI_API_KEY') });
    const badSettings = createOpenAIProvider({ apiKey: 'k', envNames: null, settings: () => ({ providers: { codex: { store: 'yes' } } }) });
    expect(summary(await collect(badSettings as any)).errors[0]).toMatchObject({ code: 'config', message: expect.stringContaining('providers.codex.store') });
    const typo = createOpenAIProvider({ apiKey: 'k', envNames: null, settings: () => ({ providers: { codex: { webserach: true } } }) });
    expect(summary(await collect(typo as any)).errors[0]!.message).toBe('settings for provider "codex": providers.codex: unknown key(s) "webserach"');
    const down = createOpenAIProvider({ apiKey: 'k', baseUrl: 'http://127.0.0.1:9/v1', api: 'chat', envNames: null });
    expect(summary(await collect(down as any)).errors[0]).toMatchObject({ code: 'network', retryable: true });
  });

  it('aborting a stalled stream ends it with one aborted error', async () => {
    server.setScript(sse(responsesReply({ text: ['a', 'b', 'c'] }), { stallAfterEvents: 5 }));
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 150);
    const s = summary(await collect(provider('responses'), request(), ac.signal));
    expect(s.errors).toEqual([expect.objectContaining({ code: 'aborted' })]);
  });
});
