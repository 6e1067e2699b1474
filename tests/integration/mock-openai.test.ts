/**
 * Proves the official `openai` SDK (6.30.1) parses every mode of the OpenAI mock: the documented
 * fixtures, the builders, every byte-split/CRLF delivery, errors (HTTP and mid-stream), early
 * EOF, stalls and unknown events. These tests pin SDK behaviour the runtime relies on, so an SDK
 * upgrade that changes it fails here first.
 */
import OpenAI, { APIError } from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { DeliveryOptions, MockScript, SseEvent } from '../fixtures/mock-http.js';
import {
  chatCompletionReply,
  chatStreamError,
  chatTextStream,
  defaultOpenAIScript,
  expectedPayloads,
  fixtureReply,
  listOpenAIFixtures,
  loadOpenAIFixture,
  openaiError,
  rateLimited,
  responsesErrorEvent,
  responsesEvent,
  responsesFailed,
  responsesReply,
  responsesTextStream,
  startMockOpenAI,
  type MockOpenAI,
} from '../fixtures/mock-openai.js';

let server: MockOpenAI;
let client: OpenAI;
beforeAll(async () => {
  server = await startMockOpenAI();
  client = new OpenAI({ apiKey: server.apiKey, baseURL: `${server.url}/v1`, maxRetries: 0 });
});
afterAll(() => server.close());
beforeEach(() => server.setScript(defaultOpenAIScript));

const sse = (events: SseEvent[], delivery: DeliveryOptions = {}): MockScript => () => ({ kind: 'sse', events, ...delivery });
const raw = (body: string): MockScript => () => ({ kind: 'raw', body });

async function collect<T>(stream: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const e of stream) out.push(e);
  return out;
}
const chat = (c = client) =>
  c.chat.completions.create({
    model: 'gpt-4o-mini',
    messages: [{ role: 'user', content: 'hi' }],
    stream: true,
    stream_options: { include_usage: true },
  });
const responses = (extra: Record<string, unknown> = {}, c = client) =>
  c.responses.create({ model: 'gpt-4.1', input: 'hi', stream: true, ...extra } as any) as unknown as Promise<
    AsyncIterable<any>
  >;
const run = async (api: string) => collect<any>(api === 'responses' ? await responses() : await chat());

/** Stream invariants of the Responses wire: event line = data.type, sequence numbers 0..n-1. */
function assertResponsesWire(events: SseEvent[]) {
  events.forEach((e, i) => {
    const d = e.data as { type: string; sequence_number: number };
    expect(e.event).toBe(d.type);
    expect(d.sequence_number).toBe(i);
  });
}

/** Deltas must add up to the `.done` values and to the final response.completed output. */
function assertResponsesCoherent(events: any[]) {
  const texts = new Map<string, string>();
  for (const e of events) {
    const k = `${e.item_id}/${e.content_index ?? e.summary_index ?? ''}`;
    if (e.type.endsWith('.delta')) texts.set(k, (texts.get(k) ?? '') + e.delta);
    if (e.type === 'response.output_text.done' || e.type === 'response.reasoning_summary_text.done') {
      expect(e.text).toBe(texts.get(k) ?? '');
    }
    if (e.type === 'response.function_call_arguments.done') expect(e.arguments).toBe(texts.get(k) ?? '');
  }
  const done = events.filter((e) => e.type === 'response.output_item.done').map((e) => e.item);
  const final = events.at(-1);
  expect(['response.completed', 'response.incomplete']).toContain(final.type);
  expect(final.response.output).toEqual(done);
}

describe('documented fixtures', () => {
  const names = listOpenAIFixtures();
  it('every fixture names its documentation source', () => {
    expect(names.length).toBeGreaterThanOrEqual(10);
    for (const n of names) {
      const f = loadOpenAIFixture(n);
      expect(f.source).toMatch(/^https:\/\//);
      if (f.api === 'responses') assertResponsesWire(f.events);
      else expect(f.events.at(-1)!.data).toBe('[DONE]');
    }
  });

  const modes: Array<[string, DeliveryOptions]> = [
    ['one write per event', {}],
    ['random splits', { split: 'random', seed: 7 }],
    ['bytewise', { split: 'bytewise' }],
    ['CRLF + random', { crlf: true, split: 'random', seed: 3 }],
  ];
  for (const name of names) {
    it(`${name}: SDK yields exactly the documented payloads in every delivery mode`, async () => {
      const f = loadOpenAIFixture(name);
      const expected = expectedPayloads(f.events);
      if (name === 'responses-error-live') return; // throws by design, covered below
      for (const [, delivery] of modes) {
        server.setScript(() => fixtureReply(name, delivery));
        expect(await run(f.api)).toEqual(expected);
      }
      if (f.api === 'responses' && name !== 'responses-error-documented' && name !== 'responses-failed') {
        assertResponsesCoherent(expected);
      }
    });
  }
});

describe('builders', () => {
  it('chatCompletionReply: text + tool calls + usage accumulate in the SDK stream helper', async () => {
    const events = chatCompletionReply({
      text: 'Let me check ✓ 東京.',
      toolCalls: [
        { id: 'call_a', name: 'get_weather', args: { city: 'Tōkyō' } },
        { id: 'call_b', name: 'get_time', args: { tz: 'Asia/Tokyo' }, pieces: ['{"tz":', '"Asia/Tokyo"}'] },
      ],
      includeUsage: true,
      usage: { prompt_tokens: 30, completion_tokens: 12, cached_tokens: 8 },
    });
    server.setScript(sse(events));
    const final = await client.chat.completions
      .stream({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], stream_options: { include_usage: true } })
      .finalChatCompletion();
    const msg = final.choices[0]!.message;
    expect(msg.content).toBe('Let me check ✓ 東京.');
    expect(msg.tool_calls!.map((t: any) => [t.id, t.function.name, JSON.parse(t.function.arguments)])).toEqual([
      ['call_a', 'get_weather', { city: 'Tōkyō' }],
      ['call_b', 'get_time', { tz: 'Asia/Tokyo' }],
    ]);
    expect(final.choices[0]!.finish_reason).toBe('tool_calls');
    expect(final.usage).toMatchObject({ prompt_tokens: 30, total_tokens: 42, prompt_tokens_details: { cached_tokens: 8 } });

    const chunks = await run('chat');
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { total_tokens: 42 } });
    expect(chunks.slice(0, -1).every((c) => c.usage === null)).toBe(true);
  });

  it('chatCompletionReply: DeepSeek-style reasoning_content reaches the caller untouched', async () => {
    server.setScript(sse(chatCompletionReply({ reasoning: ['Think', ' hard.'], text: ['Answer'] })));
    const deltas = (await run('chat')).map((c) => c.choices[0]?.delta ?? {});
    expect(deltas.map((d) => d.reasoning_content ?? '').join('')).toBe('Think hard.');
    expect(deltas.map((d) => d.content ?? '').join('')).toBe('Answer');
    // Every chunk without reasoning text has string content (DeepSeek's documented client loop).
    expect(deltas.filter((d) => !d.reasoning_content).every((d) => typeof d.content === 'string')).toBe(true);
  });

  it('responsesReply: reasoning summary, web search with citations, text and function calls', async () => {
    const events = responsesReply({
      reasoningSummary: 'Need fresh data.',
      webSearch: { query: 'paris weather', sources: [{ title: 'Météo', url: 'https://example.com/m' }], includeSources: true },
      text: ['Sunny ☀', ' in Paris.'],
      functionCalls: [{ call_id: 'call_1', name: 'save', args: { note: 'sunny' } }],
      usage: { input_tokens: 100, output_tokens: 20, cached_tokens: 64, reasoning_tokens: 10 },
      responseId: 'resp_abc',
      obfuscation: true,
    });
    assertResponsesWire(events);
    server.setScript(sse(events, { split: 'random', seed: 11 }));
    const got = await run('responses');
    expect(got).toEqual(expectedPayloads(events));
    assertResponsesCoherent(got);
    const types = got.map((e) => e.type);
    expect(types.indexOf('response.web_search_call.completed')).toBeLessThan(types.indexOf('response.output_text.delta'));
    const completed = got.at(-1).response;
    expect(completed.usage).toEqual({
      input_tokens: 100,
      input_tokens_details: { cached_tokens: 64 },
      output_tokens: 20,
      output_tokens_details: { reasoning_tokens: 10 },
      total_tokens: 120,
    });
    expect(completed.output.map((o: any) => o.type)).toEqual(['reasoning', 'web_search_call', 'message', 'function_call']);
    expect(completed.output[2].content[0].annotations[0]).toEqual({
      type: 'url_citation', start_index: 0, end_index: 'Sunny ☀ in Paris.'.length, url: 'https://example.com/m', title: 'Météo',
    });

    // The SDK's own accumulator (responses.stream) accepts the sequence. Surprise: its
    // finalResponse() has no `output_text` unless the request needs parsing (json_schema/tools).
    server.setScript(sse(events));
    const final = await client.responses.stream({ model: 'gpt-4.1', input: 'hi' }).finalResponse();
    expect(final).toMatchObject({ id: 'resp_abc', output: completed.output });
    expect(final.output_text).toBeUndefined();
  });

  it('chatTextStream / responsesTextStream build 50,000 deltas in linear time and parse', async () => {
    let t = performance.now();
    const c = chatTextStream(50_000, { piece: (i) => `${i % 10}`, includeUsage: true });
    const r = responsesTextStream(50_000);
    expect(performance.now() - t).toBeLessThan(1_000);
    assertResponsesWire(r.map((e) => ({ ...e, data: typeof e.data === 'string' ? JSON.parse(e.data) : e.data })));
    server.setScript(sse(c));
    const chunks = await run('chat');
    expect(chunks).toHaveLength(50_003);
    expect(chunks.slice(1, 11).map((x) => x.choices[0].delta.content).join('')).toBe('0123456789');
    server.setScript(sse(r));
    t = performance.now();
    const events = await run('responses');
    expect(events.filter((e) => e.type === 'response.output_text.delta')).toHaveLength(50_000);
    expect(events.at(-1).response.output[0].content[0].text).toHaveLength(4 * 50_000);
  }, 60_000);
});

describe('HTTP errors map to the SDK error classes', () => {
  it('wrong key → 401 AuthenticationError with OpenAI error JSON and request id', async () => {
    const bad = new OpenAI({ apiKey: 'sk-wrong-key-123456', baseURL: `${server.url}/v1`, maxRetries: 0 });
    const err = await chat(bad).catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(err).toMatchObject({ status: 401, code: 'invalid_api_key', type: 'invalid_request_error', param: null });
    expect(err.message).not.toContain('sk-wrong-key-123456');
    expect(err.requestID).toMatch(/^req_mock\d+$/);
  });

  it('429 with retry-after: retried by the SDK when allowed, RateLimitError otherwise', async () => {
    let calls = 0;
    server.setScript(() => (calls++ === 0 ? rateLimited(0) : { kind: 'sse', events: chatCompletionReply({ text: 'ok' }) }));
    const retrying = new OpenAI({ apiKey: server.apiKey, baseURL: `${server.url}/v1`, maxRetries: 1 });
    expect((await collect(await chat(retrying))).length).toBeGreaterThan(0);
    expect(calls).toBe(2);

    server.setScript(() => rateLimited(7));
    const err = await chat().catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    expect(err.status).toBe(429);
    expect(err.headers.get('retry-after')).toBe('7');
  });

  it('5xx → InternalServerError; unknown path → 404 with the API message', async () => {
    server.setScript(() => openaiError(503, 'server_error', 'The server is overloaded.', null));
    expect(await chat().catch((e) => e)).toBeInstanceOf(OpenAI.InternalServerError);
    server.setScript(defaultOpenAIScript);
    const err = await client.models.list().catch((e) => e);
    expect(err).toMatchObject({ status: 404, message: '404 Invalid URL (GET /v1/models)' });
  });

  it('hosted web_search is rejected with 400 for chosen models only', async () => {
    server.rejectWebSearchFor(['gpt-4.1-nano']);
    try {
      const err = await responses({ model: 'gpt-4.1-nano', tools: [{ type: 'web_search' }] }).catch((e) => e);
      expect(err).toBeInstanceOf(OpenAI.BadRequestError);
      expect(err).toMatchObject({ status: 400, param: 'tools', type: 'invalid_request_error' });
      expect(err.message).toBe("400 Hosted tool 'web_search' is not supported with gpt-4.1-nano.");
      await expect(collect(await responses({ model: 'gpt-4.1', tools: [{ type: 'web_search' }] }))).resolves.toBeTruthy();
    } finally {
      server.rejectWebSearchFor([]);
    }
  });

  it('records store / previous_response_id and only chains on stored responses', async () => {
    const first = await client.responses.create({ model: 'gpt-4.1', input: 'one' });
    const second = await client.responses.create({ model: 'gpt-4.1', input: 'two', previous_response_id: first.id, store: false });
    expect(second.output_text).toBe('Mock reply to: two');
    const err = await responses({ previous_response_id: second.id }).catch((e) => e);
    expect(err).toMatchObject({ status: 400, code: 'previous_response_not_found', param: 'previous_response_id' });
    expect(server.responsesCalls.slice(-3).map((c) => [c.store, c.previous_response_id])).toEqual([
      [true, null],
      [false, first.id],
      [true, second.id],
    ]);
    expect(server.storedResponseIds.has(first.id)).toBe(true);
    expect(server.storedResponseIds.has(second.id)).toBe(false);
  });
});

describe('mid-stream errors and terminal events', () => {
  it('Chat: a data event with top-level `error` throws APIError(status undefined) after earlier chunks', async () => {
    const events = chatCompletionReply({ text: ['partial'], done: false }).slice(0, 2);
    server.setScript(sse([...events, chatStreamError('The server had an error.', 'server_error')]));
    const seen: any[] = [];
    const err = await (async () => {
      for await (const c of await chat()) seen.push(c);
    })().catch((e) => e);
    expect(seen).toHaveLength(2);
    expect(err).toBeInstanceOf(APIError);
    expect(err).toMatchObject({ status: undefined, type: 'server_error', message: 'The server had an error.' });
  });

  it('Responses: live nested `error` event throws; the documented flat shape is just yielded', async () => {
    server.setScript(() => fixtureReply('responses-error-live'));
    const err = await run('responses').catch((e) => e);
    expect(err).toBeInstanceOf(APIError);
    expect(err).toMatchObject({ status: undefined, code: 'too_many_requests', type: 'too_many_requests' });

    server.setScript(sse([responsesErrorEvent(0, { code: 'ERR', message: 'flat', shape: 'documented' })]));
    expect(await run('responses')).toEqual([{ type: 'error', code: 'ERR', message: 'flat', param: null, sequence_number: 0 }]);
  });

  it('Responses: response.failed / response.incomplete are yielded, never thrown', async () => {
    server.setScript(sse(responsesFailed({ code: 'server_error', message: 'boom' })));
    expect((await run('responses')).at(-1)).toMatchObject({ type: 'response.failed', response: { status: 'failed', error: { message: 'boom' } } });
    server.setScript(sse(responsesReply({ text: 'cut', incomplete: 'max_output_tokens' })));
    expect((await run('responses')).at(-1).response).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } });
  });
});

describe('early EOF, [DONE] and stalls', () => {
  it('socket closed mid-stream: the raw undici TypeError("terminated") escapes, not an APIError', async () => {
    server.setScript(sse(chatCompletionReply({ text: 'Hello there world' }), { truncateAfterBytes: 300 }));
    const err = await run('chat').catch((e) => e);
    expect(err).toBeInstanceOf(TypeError);
    expect(err).not.toBeInstanceOf(APIError);
    expect(err.message).toBe('terminated');
  });

  it('clean EOF: an unterminated last event is silently dropped and the stream ends OK', async () => {
    for (const tail of ['data: {"b":', 'data: {"b":2}', 'data: {"b":2}\n']) {
      server.setScript(raw(`data: {"a":1}\n\n${tail}`));
      expect(await run('chat')).toEqual([{ a: 1 }]);
    }
  });

  it('[DONE] is optional, and anything after it is ignored', async () => {
    server.setScript(sse(chatCompletionReply({ text: ['x'], done: false })));
    expect(await run('chat')).toHaveLength(3);
    server.setScript(raw('data: {"a":1}\n\ndata: [DONE]\n\ndata: {"b":2}\n\ndata: not json\n\n'));
    expect(await run('chat')).toEqual([{ a: 1 }]);
  });

  it('a stalled body is not covered by the SDK timeout; aborting ends iteration silently', async () => {
    server.setScript(sse(chatCompletionReply({ text: ['a', 'b', 'c'] }), { stallAfterEvents: 2 }));
    const ac = new AbortController();
    const c = new OpenAI({ apiKey: server.apiKey, baseURL: `${server.url}/v1`, maxRetries: 0, timeout: 100 });
    const stream = await c.chat.completions.create(
      { model: 'gpt-4o-mini', messages: [], stream: true },
      { signal: ac.signal },
    );
    const seen: unknown[] = [];
    const done = (async () => {
      for await (const e of stream) seen.push(e);
    })();
    const first = await Promise.race([done.then(() => 'ended'), new Promise((r) => setTimeout(() => r('stalled'), 400))]);
    expect(first).toBe('stalled');
    expect(seen).toHaveLength(2);
    ac.abort();
    await expect(done).resolves.toBeUndefined();
  });
});

describe('unknown events and SSE edge cases', () => {
  it('Responses: unknown types pass through; the `event:` line is ignored (data.type wins)', async () => {
    const events = [
      responsesEvent('response.future_feature', 0, { payload: { x: 1 } }),
      { event: 'something.else', data: { type: 'response.output_text.delta', delta: 'hi', sequence_number: 1 } },
      { data: { type: 'response.no_event_line', sequence_number: 2 } },
    ];
    server.setScript(sse(events));
    expect((await run('responses')).map((e) => e.type)).toEqual([
      'response.future_feature',
      'response.output_text.delta',
      'response.no_event_line',
    ]);
  });

  it('an `event: thread.*` line changes the yielded shape to {event, data} (Assistants legacy path)', async () => {
    server.setScript(sse([{ event: 'thread.run.created', data: { type: 'response.created', sequence_number: 0 } }]));
    expect(await run('responses')).toEqual([{ event: 'thread.run.created', data: { type: 'response.created', sequence_number: 0 } }]);
  });

  it('Chat: unknown fields survive; comments and blank keep-alives are skipped', async () => {
    server.setScript(raw(': keep-alive\n\ndata: {"choices":[{"index":0,"delta":{"x_new":1}}],"vendor":"v"}\n\n\n\ndata: [DONE]\n\n'));
    expect(await run('chat')).toEqual([{ choices: [{ index: 0, delta: { x_new: 1 } }], vendor: 'v' }]);
  });

  it('malformed JSON in a data line rejects with the SyntaxError from JSON.parse', async () => {
    server.setScript(raw('data: {"a":\n\n'));
    const err = await run('chat').catch((e) => e);
    expect(err).toBeInstanceOf(SyntaxError);
  });
});

describe('what the SDK sends', () => {
  it('default script echoes the request and the SDK sends the documented request shape', async () => {
    const out = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'ping' }] });
    expect(out.choices[0]!.message.content).toBe('Mock reply to: ping');
    const chunks = await run('chat');
    expect(chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('')).toBe('Mock reply to: hi');
    const req = server.requests.at(-1)!;
    expect(req).toMatchObject({ method: 'POST', path: '/v1/chat/completions' });
    expect(req.headers.authorization).toBe(`Bearer ${server.apiKey}`);
    expect(req.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    const events = await run('responses');
    assertResponsesCoherent(events);
    expect(server.requestsTo('/v1/responses').at(-1)!.body).toMatchObject({ model: 'gpt-4.1', input: 'hi', stream: true });
  });
});
