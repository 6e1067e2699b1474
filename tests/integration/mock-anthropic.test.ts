/**
 * Proves the official SDK (@anthropic-ai/sdk, raw `messages.create({stream: true})` iteration, not
 * the `.stream()` helper) parses every mode of the Anthropic mock, and pins down what the SDK does
 * at the edges (auth header, error events, early EOF, unknown events) so the runtime can rely on it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import Anthropic, { APIError, AuthenticationError, NotFoundError, RateLimitError } from '@anthropic-ai/sdk';
import {
  accumulateAnthropicMessage,
  anthropicError,
  anthropicErrorEvent,
  anthropicReply,
  anthropicTextStream,
  checkAnthropicStream,
  listAnthropicFixtures,
  loadAnthropicFixture,
  loadAnthropicFixtureFile,
  startMockAnthropic,
  type MockAnthropicServer,
  type SseEvent,
} from '../fixtures/mock-anthropic.js';
import type { DeliveryOptions } from '../fixtures/mock-http.js';

const KEY = 'sk-ant-test-key';
const servers: MockAnthropicServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function mock(opts: Parameters<typeof startMockAnthropic>[0] = {}): Promise<MockAnthropicServer> {
  const s = await startMockAnthropic({ apiKey: KEY, ...opts });
  servers.push(s);
  return s;
}

// maxRetries 0: a retry would hide which response the SDK actually saw.
const client = (s: MockAnthropicServer, opts: ConstructorParameters<typeof Anthropic>[0] = {}) =>
  new Anthropic({ apiKey: KEY, baseURL: s.url, maxRetries: 0, ...opts });

const params = { model: 'claude-sonnet-4-6', max_tokens: 256, messages: [{ role: 'user' as const, content: 'Hello' }] };

async function streamEvents(s: MockAnthropicServer, c = client(s)): Promise<unknown[]> {
  const stream = await c.messages.create({ ...params, stream: true });
  const out: unknown[] = [];
  for await (const ev of stream) out.push(ev);
  return out;
}

/** Iterates the raw stream, returning what was yielded and what (if anything) the iteration threw. */
async function iterate(s: MockAnthropicServer, onEvent?: (ev: any, stream: any) => void) {
  const seen: any[] = [];
  const stream = await client(s).messages.create({ ...params, stream: true });
  try {
    for await (const ev of stream) {
      seen.push(ev);
      onEvent?.(ev, stream);
    }
    return { seen, error: undefined as any };
  } catch (error) {
    return { seen, error: error as any };
  }
}

/** What the SDK should yield for `events`: every payload except pings (it skips them). */
const expected = (events: SseEvent[]) => events.filter((e) => e.event !== 'ping').map((e) => e.data);

const FIXTURES = listAnthropicFixtures();
const COMPLETE = FIXTURES.filter((n) => n !== 'error-overloaded');

describe('fixtures', () => {
  it('has the documented sequences, each naming its documentation URL', () => {
    expect(FIXTURES).toEqual(
      expect.arrayContaining(['text-basic', 'thinking', 'tool-use', 'web-search', 'redacted-thinking', 'error-overloaded']),
    );
    for (const name of FIXTURES) {
      const f = loadAnthropicFixtureFile(name);
      expect(f.source, name).toMatch(/^https:\/\/docs\.(anthropic|claude)\.com\//);
      expect(f.events.length, name).toBeGreaterThan(0);
    }
  });

  it.each(FIXTURES)('%s follows the documented ordering rules', (name) => {
    expect(checkAnthropicStream(loadAnthropicFixture(name))).toEqual([]);
  });

  it.each(COMPLETE)('%s parses through the SDK event for event', async (name) => {
    const events = loadAnthropicFixture(name);
    const s = await mock({ script: () => events });
    expect(await streamEvents(s)).toEqual(expected(events));
  });

  it('tool-use input pieces are not JSON alone, only joined', () => {
    const pieces = loadAnthropicFixture('tool-use')
      .map((e) => (e.data as any).delta)
      .filter((d) => d?.type === 'input_json_delta')
      .map((d) => d.partial_json as string);
    expect(pieces.length).toBeGreaterThan(3);
    expect(() => JSON.parse(pieces[1])).toThrow();
    expect(JSON.parse(pieces.join(''))).toEqual({ location: 'San Francisco, CA', unit: 'fahrenheit' });
  });
});

describe('builders', () => {
  const full = anthropicReply({
    thinking: { text: ['Let me ', 'think.'], signature: 'EqQBCgIYAhIMsig' },
    redactedThinking: ['EmwKAhgBEgy3va3pzix'],
    webSearch: {
      query: 'weather NYC today',
      results: [{ url: 'https://example.com/nyc', title: 'NYC weather', page_age: 'May 1, 2025' }],
      answer: [{ text: 'Here is what I found. ' }, { text: 'It is sunny.', cite: { result: 0, cited_text: 'Sunny all day' } }],
    },
    text: ['Then ', 'the ', 'answer: héllo 🌍 世界'],
    toolUses: [{ id: 'toolu_01A', name: 'get_weather', input: { location: 'Paris, FR', unit: 'celsius' }, pieces: 4 }],
    usage: { input_tokens: 100, cache_read_input_tokens: 40, cache_creation_input_tokens: 10, output_tokens: 77 },
    pingEvery: 3,
  });

  it('produce streams that follow the documented ordering rules', () => {
    expect(checkAnthropicStream(full)).toEqual([]);
    expect(checkAnthropicStream(anthropicReply())).toEqual([]);
    expect(checkAnthropicStream(anthropicTextStream(5))).toEqual([]);
    expect(full.filter((e) => e.event === 'ping').length).toBeGreaterThan(1);
  });

  it('split text and tool input into the requested pieces', () => {
    const deltas = full.map((e) => (e.data as any).delta).filter(Boolean);
    expect(deltas.filter((d) => d.type === 'text_delta' && ['Then ', 'the '].includes(d.text))).toHaveLength(2);
    // An empty first piece as in the docs, then 4 fragments of the tool input.
    const toolPieces = deltas.filter((d) => d.type === 'input_json_delta').slice(-5);
    expect(toolPieces[0].partial_json).toBe('');
    expect(JSON.parse(toolPieces.map((d) => d.partial_json).join(''))).toEqual({ location: 'Paris, FR', unit: 'celsius' });
  });

  it('parse through the SDK and fold into the non-streaming Message', async () => {
    const s = await mock({ script: () => full });
    const events = await streamEvents(s);
    expect(events).toEqual(expected(full));
    const msg = await client(s).messages.create(params);
    expect(msg).toMatchObject(accumulateAnthropicMessage(events));
    expect(msg.stop_reason).toBe('tool_use');
    expect(msg.usage).toMatchObject({ input_tokens: 100, output_tokens: 77, cache_read_input_tokens: 40 });
    expect(msg.content.map((b) => b.type)).toEqual([
      'thinking', 'redacted_thinking', 'server_tool_use', 'web_search_tool_result', 'text', 'text', 'text', 'tool_use',
    ]);
    expect(msg.content[0]).toMatchObject({ thinking: 'Let me think.', signature: 'EqQBCgIYAhIMsig' });
    expect(msg.content[2]).toMatchObject({ input: { query: 'weather NYC today' } });
    expect(msg.content[5]).toMatchObject({ text: 'It is sunny.', citations: [{ type: 'web_search_result_location' }] });
    expect(msg.content[7]).toMatchObject({ id: 'toolu_01A', input: { location: 'Paris, FR', unit: 'celsius' } });
    expect(msg._request_id).toMatch(/^req_/);
  });

  it('anthropicTextStream builds 50,000 deltas in linear time and the SDK reads them all', async () => {
    const t0 = performance.now();
    const events = anthropicTextStream(50_000);
    expect(performance.now() - t0).toBeLessThan(1_000);
    expect(events).toHaveLength(50_000 + 6);
    const s = await mock({ script: () => events });
    let text = '';
    for (const ev of (await streamEvents(s)) as any[]) if (ev.delta?.type === 'text_delta') text += ev.delta.text;
    expect(text.startsWith('tok0 tok1 tok2')).toBe(true);
    expect(text.endsWith(' tok49999')).toBe(true);
  });
});

describe('delivery', () => {
  // Without a delay between writes the kernel coalesces them and the client sees a few big reads;
  // delayMs: 1 makes each chunk a separate read, which is what exercises the SDK's decoder.
  const modes: Array<[string, DeliveryOptions]> = [
    ...[1, 2, 7, 42].map((seed): [string, DeliveryOptions] => [`random seed ${seed}`, { split: 'random', seed, delayMs: 1 }]),
    ['random CRLF', { split: 'random', seed: 5, crlf: true, delayMs: 1 }],
    ['CRLF per event', { crlf: true }],
    ['bytewise (coalesced)', { split: 'bytewise' }],
  ];
  const multibyte = anthropicReply({ text: ['héllo ', '🌍 世界 ', 'ça va? ', 'naïve ✓'] });

  it.each(modes)('%s gives the same events for every fixture', async (_, delivery) => {
    for (const name of COMPLETE) {
      const events = loadAnthropicFixture(name);
      const s = await mock({ script: () => ({ kind: 'sse', events, ...delivery }) });
      expect(await streamEvents(s), name).toEqual(expected(events));
    }
    const s = await mock({ script: () => ({ kind: 'sse', events: multibyte, ...delivery }) });
    expect(await streamEvents(s)).toEqual(expected(multibyte));
    const broken = await mock({ script: () => ({ kind: 'sse', events: loadAnthropicFixture('error-overloaded'), ...delivery }) });
    const { seen, error } = await iterate(broken);
    expect(seen).toHaveLength(3);
    expect(error).toMatchObject({ type: 'overloaded_error' });
  });

  it('bytewise with a delay (one byte per read, CRLF) gives the same events', async () => {
    for (const events of [loadAnthropicFixture('text-basic'), multibyte]) {
      const s = await mock({ script: () => ({ kind: 'sse', events, split: 'bytewise', crlf: true, delayMs: 1 }) });
      expect(await streamEvents(s)).toEqual(expected(events));
    }
  }, 60_000);
});

describe('requests and auth', () => {
  it('records the request body and headers; the SDK authenticates with Authorization: Bearer', async () => {
    const s = await mock();
    await streamEvents(s);
    expect(s.requests).toHaveLength(1);
    const [req] = s.requests;
    expect(req.method).toBe('POST');
    expect(req.path).toBe('/v1/messages');
    expect(req.body).toEqual({ ...params, stream: true });
    expect(req.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(req.headers['x-api-key']).toBeUndefined();
    expect(req.headers['anthropic-version']).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(req.headers['content-type']).toBe('application/json');
  });

  it('accepts x-api-key too, and answers 401 with the documented error shape otherwise', async () => {
    const s = await mock();
    const post = (headers: Record<string, string>) =>
      fetch(`${s.url}/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(params),
      });
    const ok = await post({ 'x-api-key': KEY });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toMatchObject({ type: 'message', role: 'assistant', content: [{ type: 'text', text: 'Hello!' }] });
    const bad = await post({ 'x-api-key': 'nope' });
    expect(bad.status).toBe(401);
    expect(bad.headers.get('request-id')).toMatch(/^req_/);
    expect(await bad.json()).toEqual({
      type: 'error',
      error: { type: 'authentication_error', message: 'invalid x-api-key' },
      request_id: bad.headers.get('request-id'),
    });

    const err = await client(s, { apiKey: 'wrong' }).messages.create(params).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AuthenticationError);
    expect(err).toMatchObject({ status: 401, type: 'authentication_error' });
  });

  it('answers 404 not_found_error for other paths', async () => {
    const s = await mock();
    const err = await client(s).models.list().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NotFoundError);
    expect(err).toMatchObject({ status: 404, type: 'not_found_error' });
    expect(s.requests[0]).toMatchObject({ method: 'GET', path: '/v1/models' });
  });
});

describe('errors', () => {
  it('turns error JSON into an APIError with status, type, request id and headers', async () => {
    const s = await mock({
      script: () => anthropicError(529, 'overloaded_error', 'Overloaded', { 'request-id': 'req_011CSHoEeqs5', 'retry-after': '7' }),
    });
    const err = await client(s).messages.create({ ...params, stream: true }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(APIError);
    expect(err).toMatchObject({
      status: 529,
      type: 'overloaded_error',
      requestID: 'req_011CSHoEeqs5',
      error: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' }, request_id: 'req_011CSHoEeqs5' },
    });
    expect((err as APIError).headers?.get('retry-after')).toBe('7');
  });

  it('retries 429 after retry-after and then streams', async () => {
    const s = await mock({
      // retry-after is in seconds; a fraction keeps the test fast (the SDK parses it as a float).
      script: (_req, i) => (i === 0 ? anthropicError(429, 'rate_limit_error', 'Number of requests exceeded', { 'retry-after': '0.05' }) : anthropicReply({ text: 'ok' })),
    });
    const events = await streamEvents(s, client(s, { maxRetries: 1 }));
    expect(events.at(-1)).toEqual({ type: 'message_stop' });
    expect(s.requests.map((r) => r.headers['x-stainless-retry-count'])).toEqual(['0', '1']);
    const s2 = await mock({ script: () => anthropicError(429, 'rate_limit_error', 'slow down') });
    await expect(client(s2).messages.create(params)).rejects.toBeInstanceOf(RateLimitError);
  });

  it('throws an APIError without status at an in-stream error event, after yielding what came before', async () => {
    const s = await mock({ script: () => loadAnthropicFixture('error-overloaded') });
    const { seen, error: caught } = await iterate(s);
    expect(seen.map((e) => e.type)).toEqual(['message_start', 'content_block_start', 'content_block_delta']);
    expect(caught).toBeInstanceOf(APIError);
    expect(caught).toMatchObject({ status: undefined, type: 'overloaded_error', apiMessage: 'Overloaded' });
    expect((caught as APIError).error).toEqual({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } });
    // The same error sent to a non-streaming request becomes the HTTP status the docs pair it with.
    await expect(client(s).messages.create(params)).rejects.toMatchObject({ status: 529, type: 'overloaded_error' });
  });

  it('maps a builder-made error event to its documented HTTP status for non-streaming requests', async () => {
    const events = [...anthropicReply({ text: 'partial' }).slice(0, 4), anthropicErrorEvent('api_error', 'Internal server error')];
    expect(checkAnthropicStream(events)).toEqual([]);
    const s = await mock({ script: () => events });
    await expect(client(s).messages.create(params)).rejects.toMatchObject({ status: 500, type: 'api_error' });
  });
});

describe('broken streams', () => {
  it.each([
    ['one write', {}],
    ['random split', { split: 'random', seed: 3 }],
  ] as Array<[string, DeliveryOptions]>)('early EOF (%s) makes the iteration THROW undici\'s TypeError: terminated, unwrapped', async (_, delivery) => {
    const events = loadAnthropicFixture('text-basic');
    const s = await mock({ script: () => ({ kind: 'sse', events, ...delivery, truncateAfterBytes: 400 }) });
    const { seen, error } = await iterate(s);
    // Whatever was complete before the cut is yielded first (400 bytes hold message_start and content_block_start).
    expect(seen.map((e) => e.type)).toEqual(['message_start', 'content_block_start']);
    expect(error).toBeInstanceOf(TypeError);
    expect(error).not.toBeInstanceOf(APIError);
    expect(error.message).toBe('terminated');
    expect(error.cause?.code).toBe('UND_ERR_SOCKET');
  });

  it('a body that ENDS cleanly mid-stream makes the iteration end normally, dropping the unterminated event', async () => {
    // A well-formed chunked end after a cut: nothing in the SDK notices message_delta/message_stop are missing.
    const body = 'event: message_start\ndata: {"type":"message_start"}\n\nevent: message_stop\ndata: {"type":"message_stop"}';
    const s = await mock({ script: () => ({ kind: 'raw', body }) });
    const { seen, error } = await iterate(s);
    expect(error).toBeUndefined();
    expect(seen).toEqual([{ type: 'message_start' }]);
  });

  it('tolerates unknown event types: yields them (and unknown delta types) as-is; drops events without an event: line', async () => {
    const base = loadAnthropicFixture('text-basic');
    const future = { event: 'content_block_future', data: { type: 'content_block_future', index: 0, x: 1 } };
    const futureDelta = { event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta: { type: 'future_delta', x: 2 } } };
    const dataOnly = { data: { type: 'data_only' } };
    const events = [...base.slice(0, 2), future, dataOnly, futureDelta, ...base.slice(2)];
    const s = await mock({ script: () => events });
    const { seen, error } = await iterate(s);
    expect(error).toBeUndefined();
    expect(seen).toEqual([...expected(base.slice(0, 2)), future.data, futureDelta.data, ...expected(base.slice(2))]);
  });

  it('a stalled stream ends silently (no throw) when the caller aborts it', async () => {
    const events = loadAnthropicFixture('text-basic');
    const s = await mock({ script: () => ({ kind: 'sse', events, stallAfterEvents: 4 }) });
    const { seen, error } = await iterate(s, (ev, stream) => {
      if (ev.type === 'content_block_delta') stream.controller.abort();
    });
    expect(error).toBeUndefined();
    expect(seen.map((e) => e.type)).toEqual(['message_start', 'content_block_start', 'content_block_delta']);
  });
});
