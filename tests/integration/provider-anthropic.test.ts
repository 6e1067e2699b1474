/**
 * The claude_code provider's stream, driven directly (provider.stream) against the wire-faithful
 * mock: every documented fixture becomes the right normalized events, however the bytes are
 * split; broken streams and HTTP failures become exactly one error event with the right
 * retryability. Request bodies are in provider-anthropic-request.test.ts, kernel runs in
 * provider-anthropic-kernel.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Citation, ProviderEvent } from '../../plugin-api.js';
import { HANDLED_BLOCK_TYPES, HANDLED_DELTA_TYPES, HANDLED_EVENT_TYPES } from '../../plugins/provider-anthropic/stream-events.js';
import { anthropicError, anthropicErrorEvent, anthropicReply, listAnthropicFixtures, loadAnthropicFixture, type SseEvent } from '../fixtures/mock-anthropic.js';
import { encodeSse, type DeliveryOptions } from '../fixtures/mock-http.js';
import { closeMocks, collect, errorsOf, mock, providerFor, request, streamedText } from './provider-anthropic-harness.js';

afterEach(closeMocks);

const FIXTURES = listAnthropicFixtures();

/** The pieces of every delta of one Anthropic block in a fixture (the wire's own split). */
function pieces(events: SseEvent[], index: number, field: 'text' | 'thinking' | 'partial_json'): string[] {
  return events
    .map((e) => e.data as any)
    .filter((d) => d.type === 'content_block_delta' && d.index === index && typeof d.delta?.[field] === 'string' && d.delta[field] !== '')
    .map((d) => d.delta[field] as string);
}

function textBlock(index: number, parts: string[], citations?: Citation[]): ProviderEvent[] {
  return [
    { type: 'block_start', index, block: { type: 'text' } },
    ...parts.map((text): ProviderEvent => ({ type: 'text_delta', index, text })),
    { type: 'block_end', index, block: { type: 'text', text: parts.join(''), ...(citations ? { citations } : {}) } },
  ];
}

function thinkingBlock(index: number, parts: string[], signature: string): ProviderEvent[] {
  return [
    { type: 'block_start', index, block: { type: 'thinking' } },
    ...parts.map((text): ProviderEvent => ({ type: 'thinking_delta', index, text })),
    { type: 'block_end', index, block: { type: 'thinking', thinking: parts.join(''), signature, provider: 'claude_code' } },
  ];
}

/** What each fixture must become. Final texts and inputs are spelled out; delta pieces come from the fixture. */
const EXPECTED: Record<string, (events: SseEvent[]) => ProviderEvent[]> = {
  'text-basic': (ev) => [
    ...textBlock(0, pieces(ev, 0, 'text')),
    { type: 'usage', usage: { inputTokens: 25, outputTokens: 15 } },
    { type: 'done', stopReason: 'end', responseId: 'msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY' },
  ],
  thinking: (ev) => [
    ...thinkingBlock(0, pieces(ev, 0, 'thinking'), 'EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds...'),
    ...textBlock(1, ['27 * 453 = 12,231']),
    { type: 'usage', usage: { inputTokens: 44, outputTokens: 107 } },
    { type: 'done', stopReason: 'end', responseId: 'msg_01...' },
  ],
  'redacted-thinking': (ev) => [
    ...thinkingBlock(0, ['Let me analyze this step by step...'], (ev[4]!.data as any).delta.signature),
    { type: 'block_end', index: 1, block: { type: 'thinking', thinking: '', redacted: true, data: (ev[6]!.data as any).content_block.data, provider: 'claude_code' } },
    ...textBlock(2, ['Based on my analysis...']),
    { type: 'usage', usage: { inputTokens: 120, outputTokens: 96 } },
    { type: 'done', stopReason: 'end', responseId: 'msg_01RedactedThinkingExample' },
  ],
  'tool-use': (ev) => [
    ...textBlock(0, pieces(ev, 0, 'text')),
    { type: 'block_start', index: 1, block: { type: 'tool_call', id: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6', name: 'get_weather' } },
    ...pieces(ev, 1, 'partial_json').map((json): ProviderEvent => ({ type: 'tool_input_delta', index: 1, json })),
    { type: 'block_end', index: 1, block: { type: 'tool_call', id: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6', name: 'get_weather', input: { location: 'San Francisco, CA', unit: 'fahrenheit' } } },
    { type: 'usage', usage: { inputTokens: 472, outputTokens: 89 } },
    { type: 'done', stopReason: 'tool_use', responseId: 'msg_014p7gG3wDgGV9EUtLvnow3U' },
  ],
  'web-search': (ev) => {
    const call = ev.find((e) => (e.data as any).content_block?.type === 'server_tool_use')!.data as any;
    const result = ev.find((e) => (e.data as any).content_block?.type === 'web_search_tool_result')!.data as any;
    const url = 'https://world-weather.info/forecast/usa/new_york/may-2025/';
    const title = 'Weather in New York City in May 2025 (New York) - detailed Weather Forecast for a month';
    return [
      ...textBlock(0, pieces(ev, 0, 'text')),
      {
        type: 'block_end',
        index: 1,
        block: {
          type: 'hosted_search',
          provider: 'claude_code',
          id: 'srvtoolu_014hJH82Qum7Td6UV8gDXThB',
          queries: ['weather NYC today'],
          sources: [{ title, url }],
          status: 'completed',
          providerData: { blocks: [{ ...call.content_block, input: { query: 'weather NYC today' } }, result.content_block] },
        },
      },
      ...textBlock(2, pieces(ev, 3, 'text')),
      ...textBlock(3, ['May in New York City brings mild spring weather'], [{ url, title, citedText: 'Weather in New York City in May 2025: mild spring days...' }]),
      { type: 'usage', usage: { inputTokens: 10682, outputTokens: 510, cacheReadTokens: 0, cacheWriteTokens: 0 } },
      { type: 'done', stopReason: 'end', responseId: 'msg_01G...' },
    ];
  },
  'error-overloaded': () => [
    ...textBlock(0, ['Hello']).slice(0, 2),
    { type: 'usage', usage: { inputTokens: 25, outputTokens: 1 } },
    // After text, a retry would duplicate what the user saw: surfaced, not retryable.
    { type: 'error', error: { code: 'overloaded', message: 'stream error overloaded_error: Overloaded', retryable: false } },
  ],
};

async function replay(events: SseEvent[], delivery: DeliveryOptions = {}): Promise<ProviderEvent[]> {
  const s = await mock(() => ({ kind: 'sse', events, ...delivery }));
  return collect(providerFor(s));
}

describe('fixtures', () => {
  it('every fixture has an expectation', () => {
    expect(FIXTURES.filter((n) => !EXPECTED[n])).toEqual([]);
  });

  it.each(FIXTURES)('%s replays to the right normalized events', async (name) => {
    const events = loadAnthropicFixture(name);
    expect(await replay(events)).toEqual(EXPECTED[name]!(events));
  });

  it('every event, block and delta type the plugin handles is sent by some fixture', () => {
    const seen = new Set<string>();
    for (const name of FIXTURES) {
      for (const e of loadAnthropicFixture(name)) {
        const d = e.data as any;
        seen.add(`event:${e.event}`);
        if (d.content_block?.type) seen.add(`block:${d.content_block.type}`);
        if (d.delta?.type) seen.add(`delta:${d.delta.type}`);
      }
    }
    const handled = [...HANDLED_EVENT_TYPES.map((t) => `event:${t}`), ...HANDLED_BLOCK_TYPES.map((t) => `block:${t}`), ...HANDLED_DELTA_TYPES.map((t) => `delta:${t}`)];
    expect(handled.filter((t) => !seen.has(t))).toEqual([]);
  });
});

describe('delivery', () => {
  const modes: Array<[string, DeliveryOptions]> = [
    ...[1, 2, 7, 42].map((seed): [string, DeliveryOptions] => [`random split, seed ${seed}`, { split: 'random', seed, delayMs: 1 }]),
    ['random split with CRLF', { split: 'random', seed: 5, crlf: true, delayMs: 1 }],
    ['CRLF per event', { crlf: true }],
    ['bytewise', { split: 'bytewise' }],
  ];

  it.each(modes)('%s gives identical events for every fixture', async (_, delivery) => {
    for (const name of FIXTURES) {
      const events = loadAnthropicFixture(name);
      expect(await replay(events, delivery), name).toEqual(EXPECTED[name]!(events));
    }
  });

  it('bytewise with CRLF, one byte per read, gives identical events', async () => {
    const events = loadAnthropicFixture('thinking');
    expect(await replay(events, { split: 'bytewise', crlf: true, delayMs: 1 })).toEqual(EXPECTED.thinking!(events));
  }, 60_000);

  it('unknown event types, unknown delta and block types, and extra pings change nothing', async () => {
    for (const name of FIXTURES) {
      const events = loadAnthropicFixture(name);
      const noisy: SseEvent[] = [];
      for (const e of events) {
        noisy.push(e);
        const d = e.data as any;
        if (e.event === 'message_start') noisy.push({ event: 'message_future', data: { type: 'message_future', x: 1 } });
        if (e.event === 'content_block_start') {
          noisy.push({ event: 'ping', data: { type: 'ping' } });
          noisy.push({ event: 'content_block_delta', data: { type: 'content_block_delta', index: d.index, delta: { type: 'future_delta', x: 2 } } });
        }
      }
      expect(await replay(noisy), name).toEqual(EXPECTED[name]!(events));
    }
  });

  it('multi-byte text survives random splits', async () => {
    const events = anthropicReply({ text: ['héllo ', '🌍 世界 ', 'ça va? ', 'naïve ✓'] });
    const out = await replay(events, { split: 'random', seed: 9, delayMs: 1 });
    expect(streamedText(out)).toBe('héllo 🌍 世界 ça va? naïve ✓');
    expect(out.at(-1)).toMatchObject({ type: 'done', stopReason: 'end' });
  });
});

describe('broken streams', () => {
  const base = anthropicReply({ text: ['Hello', ' world', '!'] });
  /** Byte offset just after the SSE event at `i` (so the cut lands right after it). */
  const offsetAfter = (events: SseEvent[], i: number) => Buffer.byteLength(encodeSse(events.slice(0, i + 1)).join(''));

  function expectOneError(out: ProviderEvent[]) {
    const errors = errorsOf(out);
    expect(errors).toHaveLength(1);
    expect(out.at(-1)!.type).toBe('error');
    expect(out.some((e) => e.type === 'done')).toBe(false);
    return errors[0]!;
  }

  it('malformed JSON gives exactly one error event, after the partial text', async () => {
    const firstDelta = base.findIndex((e) => (e.data as any).delta?.type === 'text_delta');
    const events: SseEvent[] = [...base.slice(0, firstDelta + 1), { event: 'content_block_delta', data: '{"type":"content_block_delta","index":0,"delta":{"type":"text_de' }, ...base.slice(firstDelta + 1)];
    const out = await replay(events);
    expect(streamedText(out)).toBe('Hello');
    expect(expectOneError(out)).toMatchObject({ code: 'malformed', retryable: false });
  });

  it.each([
    ['one write', {}],
    ['random split', { split: 'random', seed: 3 }],
  ] as Array<[string, DeliveryOptions]>)('an early EOF (%s) gives exactly one error event, after the partial text', async (_, delivery) => {
    const firstDelta = base.findIndex((e) => (e.data as any).delta?.type === 'text_delta');
    const out = await replay(base, { ...delivery, truncateAfterBytes: offsetAfter(base, firstDelta) + 10 });
    expect(streamedText(out)).toBe('Hello');
    expect(expectOneError(out)).toMatchObject({ code: 'network', retryable: false });
  });

  it('an early EOF before any output is retryable', async () => {
    const out = await replay(base, { truncateAfterBytes: 60 });
    expect(expectOneError(out)).toMatchObject({ code: 'network', retryable: true });
  });

  it('a body that ends cleanly without message_stop gives one error event, keeping the partial text', async () => {
    const cut = base.findIndex((e) => e.event === 'content_block_stop');
    const out = await replay(base.slice(0, cut));
    expect(streamedText(out)).toBe('Hello world!');
    expect(out.some((e) => e.type === 'block_end')).toBe(false);
    expect(expectOneError(out)).toMatchObject({ code: 'stream', retryable: false });
    expect(errorsOf(out)[0]!.message).toContain('message_stop');
    // Only message_stop proves the reply whole: message_delta alone is not enough.
    const noStop = await replay(base.slice(0, -1));
    expect(expectOneError(noStop)).toMatchObject({ code: 'stream' });
  });

  it('tool input that is not valid JSON gives one error event naming the tool', async () => {
    const events = anthropicReply({ toolUses: [{ id: 'toolu_bad', name: 'get_weather', input: { location: 'Paris' } }] }).map((e) => {
      const d = e.data as any;
      return d.delta?.type === 'input_json_delta' && d.delta.partial_json.includes('Paris') ? { ...e, data: { ...d, delta: { ...d.delta, partial_json: d.delta.partial_json.replace('Paris', 'Par"is') } } } : e;
    });
    const err = expectOneError(await replay(events));
    expect(err).toMatchObject({ code: 'malformed', retryable: false });
    expect(err.message).toContain('get_weather');
  });

  it('an abort mid-stream ends with one aborted error event', async () => {
    const s = await mock(() => ({ kind: 'sse', events: base, stallAfterEvents: 4 }));
    const ac = new AbortController();
    const out: ProviderEvent[] = [];
    for await (const ev of providerFor(s).stream(request(), ac.signal)) {
      out.push(ev);
      if (ev.type === 'text_delta') ac.abort();
    }
    expect(streamedText(out)).toBe('Hello');
    expect(expectOneError(out)).toMatchObject({ code: 'aborted', retryable: false });
  });
});

describe('HTTP and stream errors', () => {
  async function failWith(reply: Parameters<typeof mock>[0]) {
    const s = await mock(reply);
    const out = await collect(providerFor(s));
    expect(out).toHaveLength(1);
    return errorsOf(out)[0]!;
  }

  it('529 overloaded is retryable, with retryAfterMs from retry-after', async () => {
    const err = await failWith(() => anthropicError(529, 'overloaded_error', 'Overloaded', { 'retry-after': '2' }));
    expect(err).toMatchObject({ status: 529, code: 'overloaded', retryable: true, retryAfterMs: 2000, message: '529 overloaded_error: Overloaded' });
  });

  it('429 is retryable with retryAfterMs (retry-after seconds or retry-after-ms)', async () => {
    expect(await failWith(() => anthropicError(429, 'rate_limit_error', 'Number of requests exceeded', { 'retry-after': '7' }))).toMatchObject({
      status: 429, code: 'rate_limited', retryable: true, retryAfterMs: 7000,
    });
    expect(await failWith(() => anthropicError(429, 'rate_limit_error', 'slow down', { 'retry-after-ms': '250' }))).toMatchObject({ retryAfterMs: 250 });
  });

  it.each([
    [400, 'invalid_request_error', 'bad_request'],
    [401, 'authentication_error', 'auth'],
    [403, 'permission_error', 'forbidden'],
  ])('%i is not retryable', async (status, type, code) => {
    const err = await failWith(() => anthropicError(status, type, 'no'));
    expect(err).toMatchObject({ status, code, retryable: false });
  });

  it('a wrong key is a 401 from the server, not retryable', async () => {
    const s = await mock();
    const out = await collect(providerFor(s, { apiKey: 'wrong' }));
    expect(errorsOf(out)).toEqual([expect.objectContaining({ status: 401, code: 'auth', retryable: false })]);
  });

  it('an overloaded error event before any output is retryable; after text it is surfaced, not retryable', async () => {
    const before = [anthropicReply({ text: 'x' })[0]!, anthropicErrorEvent('overloaded_error', 'Overloaded')];
    expect(errorsOf(await replay(before))).toEqual([expect.objectContaining({ code: 'overloaded', retryable: true })]);
    const after = await replay(loadAnthropicFixture('error-overloaded'));
    expect(streamedText(after)).toBe('Hello');
    expect(errorsOf(after)).toEqual([expect.objectContaining({ code: 'overloaded', retryable: false })]);
  });

  it('an api_error event mid-stream is classified by its documented status', async () => {
    const events = [...anthropicReply({ text: 'partial' }).slice(0, 4), anthropicErrorEvent('api_error', 'Internal server error')];
    expect(errorsOf(await replay(events))).toEqual([expect.objectContaining({ code: 'server', retryable: false })]);
  });

  it('an unreachable endpoint is a retryable network error', async () => {
    const s = await mock();
    const url = s.url;
    await closeMocks();
    const out = await collect(providerFor({ url } as never));
    expect(errorsOf(out)).toEqual([expect.objectContaining({ code: 'network', retryable: true })]);
  });

  it('timeoutMs bounds the wait for a response: a retryable timeout error', async () => {
    const s = await mock(() => new Promise((r) => setTimeout(() => r(anthropicReply({ text: 'late' })), 2000)));
    const out = await collect(providerFor(s, { timeoutMs: 100 }));
    expect(errorsOf(out)).toEqual([expect.objectContaining({ code: 'timeout', retryable: true })]);
  });

  it('no API key gives one auth error without a request', async () => {
    const s = await mock();
    const out = await collect(providerFor(s, { apiKey: '' }));
    expect(errorsOf(out)).toEqual([expect.objectContaining({ code: 'auth', retryable: false })]);
    expect(errorsOf(out)[0]!.message).toContain('ANTHROPIC_API_KEY');
    expect(s.requests).toHaveLength(0);
  });
});

describe('stop reasons and usage', () => {
  it.each([
    ['end_turn', 'end'],
    ['stop_sequence', 'end'],
    ['max_tokens', 'max_tokens'],
    ['refusal', 'refusal'],
    // Still paused after every continuation (the mock repeats it): incomplete (provider-anthropic-pause.test.ts).
    ['pause_turn', 'max_tokens'],
    ['model_context_window_exceeded', 'max_tokens'],
  ])('%s maps to %s', async (stopReason, mapped) => {
    const out = await replay(anthropicReply({ text: 'x', stopReason }));
    expect(out.at(-1)).toMatchObject({ type: 'done', stopReason: mapped });
  });

  it('usage carries input, output, cache read and cache write tokens', async () => {
    const out = await replay(anthropicReply({ text: 'x', usage: { input_tokens: 100, output_tokens: 42, cache_read_input_tokens: 40, cache_creation_input_tokens: 10 } }));
    expect(out.filter((e) => e.type === 'usage')).toEqual([{ type: 'usage', usage: { inputTokens: 100, outputTokens: 42, cacheReadTokens: 40, cacheWriteTokens: 10 } }]);
  });
});
