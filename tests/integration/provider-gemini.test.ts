/**
 * The gemini provider's stream, driven directly (provider.stream) against the wire-faithful mock:
 * every documented fixture becomes the right normalized events however the bytes are split or
 * the lines end; broken streams, blocked replies and HTTP failures become exactly one error
 * event with the right retryability. Request bodies are in provider-gemini-request.test.ts,
 * kernel runs in provider-gemini-kernel.test.ts.
 */
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { ProviderEvent } from '../../plugin-api.js';
import {
  HANDLED_CANDIDATE_FIELDS,
  HANDLED_FINISH_REASONS,
  HANDLED_FUNCTION_CALL_FIELDS,
  HANDLED_GROUNDING_FIELDS,
  HANDLED_PART_FIELDS,
  HANDLED_PROMPT_FEEDBACK_FIELDS,
  HANDLED_RESPONSE_FIELDS,
  HANDLED_USAGE_FIELDS,
} from '../../plugins/provider-gemini/stream-events.js';
import {
  fixtureEvents,
  geminiError,
  geminiErrors,
  geminiReply,
  geminiStream,
  googleJson,
  listGeminiFixtures,
  loadGeminiFixture,
  type GeminiChunk,
  type SseEvent,
} from '../fixtures/mock-gemini.js';
import type { DeliveryOptions } from '../fixtures/mock-http.js';
import { KEY, closeMocks, collect, errorsOf, mock, providerFor, request, stableIds, streamedText, toolsFor } from './provider-gemini-harness.js';

afterEach(closeMocks);

const FIXTURES = listGeminiFixtures();
const chunksOf = (events: SseEvent[]) => events.map((e) => e.data as GeminiChunk);
const texts = (f: string) => chunksOf(fixtureEvents(loadGeminiFixture(f))).flatMap((c) => c.candidates?.[0]?.content?.parts ?? []);

function textBlock(index: number, parts: string[], extra: Record<string, unknown> = {}): ProviderEvent[] {
  return [
    { type: 'block_start', index, block: { type: 'text' } },
    ...parts.map((text): ProviderEvent => ({ type: 'text_delta', index, text })),
    { type: 'block_end', index, block: { type: 'text', text: parts.join(''), ...extra } },
  ];
}

function toolCall(index: number, id: string, name: string, input: Record<string, unknown>, providerData?: Record<string, string>): ProviderEvent[] {
  return [
    { type: 'block_start', index, block: { type: 'tool_call', id, name } },
    { type: 'tool_input_delta', index, json: JSON.stringify(input) },
    { type: 'block_end', index, block: { type: 'tool_call', id, name, input: input as never, ...(providerData ? { providerData } : {}) } },
  ];
}

/** What each fixture must become (tool-call ids normalized by stableIds). */
const EXPECTED: Record<string, () => ProviderEvent[]> = {
  'function-call-cookbook': () => [...toolCall(0, 'call_1', 'find_theaters', { movie: 'Barbie', location: 'Mountain View, CA' }), { type: 'done', stopReason: 'tool_use' }],
  'function-call-parallel': () => {
    const thought = texts('function-call-parallel')[0]!.text!;
    return [
      { type: 'block_start', index: 0, block: { type: 'thinking' } },
      { type: 'thinking_delta', index: 0, text: thought },
      { type: 'block_end', index: 0, block: { type: 'thinking', thinking: thought, provider: 'gemini' } },
      ...toolCall(1, 'call_1', 'get_current_temperature', { location: 'Paris' }, { thoughtSignature: 'c2lnbmF0dXJlLUEtcGxhY2Vob2xkZXI=' }),
      ...toolCall(2, 'call_2', 'get_current_temperature', { location: 'London' }),
      { type: 'usage', usage: { inputTokens: 74, outputTokens: 68, reasoningTokens: 38 } },
      { type: 'done', stopReason: 'tool_use', responseId: 'mockPARALLELcallsQ0xYzA' },
    ];
  },
  'grounding-google-search': () => {
    const aj = { url: 'https://vertexaisearch.cloud.google.com/grounding-api-redirect/MOCK-aljazeera', title: 'aljazeera.com' };
    const uefa = { url: 'https://vertexaisearch.cloud.google.com/grounding-api-redirect/MOCK-uefa', title: 'uefa.com' };
    const s1 = 'Spain won Euro 2024, defeating England 2-1 in the final.';
    const s2 = "This victory marks Spain's record fourth European Championship title.";
    return [
      ...textBlock(0, [`${s1} ${s2}`], { citations: [{ ...aj, citedText: s1 }, { ...aj, citedText: s2 }, { ...uefa, citedText: s2 }] }),
      {
        type: 'block_end',
        index: 1,
        block: {
          type: 'hosted_search',
          provider: 'gemini',
          queries: ['UEFA Euro 2024 winner', 'who won euro 2024'],
          sources: [aj, uefa],
          status: 'completed',
          providerData: { renderedContent: '<!-- HTML and CSS for the search widget -->' },
        },
      },
      { type: 'done', stopReason: 'end' },
    ];
  },
  'legacy-text-stream': () => [...textBlock(0, texts('legacy-text-stream').map((p) => p.text!)), { type: 'done', stopReason: 'end' }],
  'max-tokens': () => [
    ...textBlock(0, ['The proof proceeds by', ' infinite']),
    { type: 'usage', usage: { inputTokens: 29, outputTokens: 64, reasoningTokens: 59 } },
    { type: 'done', stopReason: 'max_tokens', responseId: 'mockMAXtokensQwErTy0001' },
  ],
  'prompt-blocked': () => [
    { type: 'usage', usage: { inputTokens: 15, outputTokens: 0 } },
    { type: 'error', error: { code: 'refusal', message: 'the prompt was blocked (blockReason SAFETY, DANGEROUS_CONTENT)', retryable: false } },
  ],
  'safety-blocked': () => [
    ...textBlock(0, ['Here is some general background on the topic']),
    { type: 'usage', usage: { inputTokens: 12, outputTokens: 8 } },
    { type: 'error', error: { code: 'refusal', message: 'the reply was blocked for safety (finishReason SAFETY, DANGEROUS_CONTENT)', retryable: false } },
  ],
  'text-stream': () => [
    ...textBlock(0, texts('text-stream').map((p) => p.text!)),
    { type: 'usage', usage: { inputTokens: 6, outputTokens: 148, reasoningTokens: 117 } },
    { type: 'done', stopReason: 'end', responseId: 'mockTEXTstreamAbCdEfGh0' },
  ],
  'thinking-stream': () => {
    const [t1, t2, answer, sig] = texts('thinking-stream');
    return [
      { type: 'block_start', index: 0, block: { type: 'thinking' } },
      { type: 'thinking_delta', index: 0, text: t1!.text! },
      { type: 'thinking_delta', index: 0, text: t2!.text! },
      { type: 'block_end', index: 0, block: { type: 'thinking', thinking: t1!.text! + t2!.text!, provider: 'gemini' } },
      { type: 'block_start', index: 1, block: { type: 'text' } },
      { type: 'text_delta', index: 1, text: answer!.text! },
      // The signature arrived alone, in a trailing empty text part: it signs the text block still open.
      { type: 'block_end', index: 1, block: { type: 'text', text: answer!.text!, signature: sig!.thoughtSignature! } },
      { type: 'usage', usage: { inputTokens: 9, outputTokens: 90, reasoningTokens: 81 } },
      { type: 'done', stopReason: 'end', responseId: 'mockTHINKINGstreamZ9y8x7' },
    ];
  },
};

/** Replies this file builds besides the fixtures; the coverage test reads them too. */
const BUILT: Record<string, SseEvent[]> = {
  cachedUsage: geminiReply({ text: 'cached', usage: { promptTokenCount: 1200, cachedContentTokenCount: 1000, candidatesTokenCount: 3, thoughtsTokenCount: 20, toolUsePromptTokenCount: 50 }, responseId: 'r-cache' }),
  recitation: geminiReply({ text: 'Once upon', finishReason: 'RECITATION' }),
  prohibited: geminiReply({ finishReason: 'PROHIBITED_CONTENT' }),
  malformedCall: geminiReply({ finishReason: 'MALFORMED_FUNCTION_CALL' }),
  // The API may give a call an id (Live API, newer models): it becomes ours, normalized.
  // Google's error envelope as a data line after a 200 (seen when the backend fails mid-reply).
  streamError: [geminiReply({ text: ['Partial ', 'never sent'] })[0]!, { data: { error: { code: 503, message: 'The model is overloaded. Please try again later.', status: 'UNAVAILABLE' } } }],
  callWithId: [{ data: { candidates: [{ content: { parts: [{ functionCall: { id: 'fc/1 weird', name: 'get_current_temperature', args: { location: 'Oslo' } } }], role: 'model' }, finishReason: 'STOP', index: 0 }], responseId: 'r-id' } }],
};

async function replay(events: SseEvent[], delivery: DeliveryOptions = {}, extra: Parameters<typeof providerFor>[1] = {}): Promise<ProviderEvent[]> {
  const s = await mock(() => geminiStream(events, delivery));
  return collect(providerFor(s, { webSearch: true, ...extra }), request({ tools: toolsFor(chunksOf(events)) }));
}

describe('fixtures', () => {
  it('every fixture has an expectation', () => {
    expect(FIXTURES.filter((n) => !EXPECTED[n])).toEqual([]);
  });

  it.each(FIXTURES)('%s replays to the right normalized events', async (name) => {
    const events = fixtureEvents(loadGeminiFixture(name));
    expect(stableIds(await replay(events))).toEqual(EXPECTED[name]!());
  });

  it('every response field, part kind, grounding field, usage count and finish reason the plugin handles is sent by the mock', () => {
    const seen = new Set<string>();
    const all = [...FIXTURES.map((n) => fixtureEvents(loadGeminiFixture(n))), ...Object.values(BUILT)];
    for (const events of all) {
      for (const c of chunksOf(events)) {
        for (const k of Object.keys(c)) seen.add(`response:${k}`);
        for (const k of Object.keys(c.usageMetadata ?? {})) seen.add(`usage:${k}`);
        for (const k of Object.keys(c.promptFeedback ?? {})) seen.add(`promptFeedback:${k}`);
        for (const cand of c.candidates ?? []) {
          for (const k of Object.keys(cand)) seen.add(`candidate:${k}`);
          if (cand.finishReason) seen.add(`finish:${cand.finishReason}`);
          for (const k of Object.keys(cand.groundingMetadata ?? {})) seen.add(`grounding:${k}`);
          for (const p of cand.content?.parts ?? []) {
            for (const k of Object.keys(p)) seen.add(`part:${k}`);
            for (const k of Object.keys(p.functionCall ?? {})) seen.add(`functionCall:${k}`);
          }
        }
      }
    }
    const handled = [
      ...HANDLED_RESPONSE_FIELDS.map((f) => `response:${f}`),
      ...HANDLED_CANDIDATE_FIELDS.map((f) => `candidate:${f}`),
      ...HANDLED_PART_FIELDS.map((f) => `part:${f}`),
      ...HANDLED_FUNCTION_CALL_FIELDS.map((f) => `functionCall:${f}`),
      ...HANDLED_PROMPT_FEEDBACK_FIELDS.map((f) => `promptFeedback:${f}`),
      ...HANDLED_GROUNDING_FIELDS.map((f) => `grounding:${f}`),
      ...HANDLED_USAGE_FIELDS.map((f) => `usage:${f}`),
      ...HANDLED_FINISH_REASONS.map((f) => `finish:${f}`),
    ];
    expect(handled.filter((t) => !seen.has(t))).toEqual([]);
  });
});

describe('delivery: splits and line endings give identical events', () => {
  const rich = () =>
    geminiReply({
      thoughts: ['**Plan**\n\nlook it up', ' then answer ✓'],
      text: ['Euro 2024 went to ', 'Spain — 西班牙 🏆. ', 'Cheers!'],
      grounding: { queries: ['euro 2024 winner'], sources: [{ title: 'uefa.com', uri: 'https://example.invalid/uefa' }], supports: [{ text: 'Spain — 西班牙 🏆.', sources: [0] }] },
      responseId: 'fixed-rich',
    });
  const calls = () => geminiReply({ thoughts: 'two cities', text: 'Checking.', functionCalls: [{ name: 'get_current_temperature', args: { location: 'Zürich 🇨🇭' } }, { name: 'get_current_temperature', args: { location: 'Tōkyō' } }], responseId: 'fixed-calls' });
  const deliveries: Array<[string, DeliveryOptions]> = [
    ['CRLF, one write per event', {}],
    ['LF', { crlf: false }],
    ['CRLF bytewise', { split: 'bytewise' }],
    ['LF bytewise', { split: 'bytewise', crlf: false }],
    ...[1, 2, 3, 42, 1337].map((seed): [string, DeliveryOptions] => [`CRLF random seed ${seed}`, { split: 'random', seed }]),
    ['LF random', { split: 'random', seed: 7, crlf: false }],
  ];

  it.each(deliveries)('%s', async (_label, delivery) => {
    const baseline = stableIds(await replay(rich(), { crlf: false }));
    expect(baseline.at(-1)).toEqual({ type: 'done', stopReason: 'end', responseId: 'fixed-rich' });
    expect(streamedText(baseline)).toBe('Euro 2024 went to Spain — 西班牙 🏆. Cheers!');
    expect(stableIds(await replay(rich(), delivery))).toEqual(baseline);
    const callBase = stableIds(await replay(calls(), { crlf: false }));
    expect(callBase.at(-1)).toMatchObject({ type: 'done', stopReason: 'tool_use' });
    expect(stableIds(await replay(calls(), delivery))).toEqual(callBase);
  });

  it('CR-only separators (\\r\\r) parse the same: the SDK accepts \\n\\n, \\r\\r and \\r\\n\\r\\n', async () => {
    const baseline = stableIds(await replay(rich(), { crlf: false }));
    const body = rich().map((e) => `data: ${googleJson(e.data)}\r\r`).join('');
    const s = await mock(() => ({ kind: 'raw', body, split: 'bytewise' }));
    expect(stableIds(await collect(providerFor(s, { webSearch: true })))).toEqual(baseline);
  });
});

describe('broken streams: exactly one error event, the partial text kept', () => {
  const three = () => geminiReply({ text: ['one ', 'two ', 'three'], responseId: 'r3' });
  const firstEventBytes = (events: SseEvent[]) => Buffer.byteLength(`data: ${googleJson(events[0]!.data)}\r\n\r\n`);

  function expectOneError(events: ProviderEvent[]) {
    expect(errorsOf(events)).toHaveLength(1);
    expect(events.at(-1)!.type).toBe('error');
    expect(events.some((e) => e.type === 'done')).toBe(false);
  }

  it('malformed JSON after text: one malformed error, not retryable, after the text that came before', async () => {
    const s = await mock(() => geminiStream([three()[0]!, { data: '{"candidates": [' }, three()[1]!]));
    const events = await collect(providerFor(s));
    expectOneError(events);
    expect(streamedText(events)).toBe('one ');
    expect(errorsOf(events)[0]).toMatchObject({ code: 'malformed', retryable: false });
  });

  it('early EOF mid-event after text: one network error, not retryable (a retry would repeat the text)', async () => {
    const events3 = three();
    const s = await mock(() => geminiStream(events3, { truncateAfterBytes: firstEventBytes(events3) + 10 }));
    const events = await collect(providerFor(s));
    expectOneError(events);
    expect(streamedText(events)).toBe('one ');
    expect(errorsOf(events)[0]).toMatchObject({ code: 'network', retryable: false });
  });

  it('early EOF before any output is retryable', async () => {
    const s = await mock(() => geminiStream(three(), { truncateAfterBytes: 20 }));
    const events = await collect(providerFor(s));
    expect(events).toEqual([{ type: 'error', error: { code: 'network', message: expect.stringContaining('closed'), retryable: true } }]);
  });

  it('a body that ends cleanly between events (no finishReason) is one stream error, keeping the text', async () => {
    const s = await mock(() => geminiStream(three().slice(0, 2)));
    const events = await collect(providerFor(s));
    expectOneError(events);
    expect(streamedText(events)).toBe('one two ');
    expect(errorsOf(events)[0]).toMatchObject({ code: 'stream', retryable: false, message: expect.stringContaining('finishReason') });
  });

  it('a body that ends cleanly mid-event is one stream error, keeping the text', async () => {
    const body = `data: ${googleJson(three()[0]!.data)}\r\n\r\ndata: {"cand`;
    const s = await mock(() => ({ kind: 'raw', body }));
    const events = await collect(providerFor(s));
    expectOneError(events);
    expect(streamedText(events)).toBe('one ');
    expect(errorsOf(events)[0]).toMatchObject({ code: 'stream', retryable: false });
  });

  it('an abort mid-stream ends with one aborted error; the request is cancelled', async () => {
    const s = await mock(() => geminiStream(three(), { stallAfterEvents: 1 }));
    const ac = new AbortController();
    const events: ProviderEvent[] = [];
    for await (const e of providerFor(s).stream(request(), ac.signal)) {
      events.push(e);
      if (e.type === 'text_delta') ac.abort();
    }
    expect(events.at(-1)).toEqual({ type: 'error', error: { code: 'aborted', message: 'the request was aborted', retryable: false } });
    expect(errorsOf(events)).toHaveLength(1);
  });

  it('a consumer that stops reading early ends the request without an unhandled rejection', async () => {
    const s = await mock(() => geminiStream(three(), { stallAfterEvents: 1 }));
    const it = providerFor(s).stream(request(), new AbortController().signal)[Symbol.asyncIterator]();
    expect((await it.next()).value).toMatchObject({ type: 'wire_request', api: 'streamGenerateContent' });
    expect((await it.next()).value).toEqual({ type: 'block_start', index: 0, block: { type: 'text' } });
    await expect(it.return!()).resolves.toEqual({ value: undefined, done: true });
    expect(await it.next()).toEqual({ value: undefined, done: true });
    await new Promise((r) => setTimeout(r, 50)); // vitest fails the file on an unhandled rejection
  });

  it('no response headers within timeoutMs: one retryable timeout error', async () => {
    const s = await mock(async () => {
      await new Promise((r) => setTimeout(r, 400));
      return geminiStream(three());
    });
    const events = await collect(providerFor(s, { timeoutMs: 100 }));
    expect(events).toEqual([{ type: 'error', error: { code: 'timeout', message: expect.any(String), retryable: true } }]);
  });
});

describe('HTTP errors (the SDK never retries: one request each)', () => {
  async function failWith(reply: ReturnType<typeof geminiError>, extra: Parameters<typeof providerFor>[1] = {}) {
    const s = await mock(() => reply);
    const events = await collect(providerFor(s, extra));
    expect(s.requests).toHaveLength(1);
    expect(events).toHaveLength(1);
    return errorsOf(events)[0]!;
  }

  it('a wrong key is 400 API_KEY_INVALID: auth, not retryable, and the key is never in the message', async () => {
    const s = await mock();
    const events = await collect(providerFor(s, { apiKey: 'wrong-key-123' }));
    expect(errorsOf(events)).toEqual([{ code: 'auth', status: 400, message: '400 Bad Request: API key not valid. Please pass a valid API key.', retryable: false }]);
    expect(JSON.stringify(events)).not.toContain('wrong-key-123');
  });

  it('429 RESOURCE_EXHAUSTED: a per-day QuotaFailure is a final quota, a per-minute one a rate limit (RetryInfo read both times)', async () => {
    const daily = await failWith(geminiErrors.dailyQuota('41s'));
    expect(daily).toMatchObject({ code: 'quota', status: 429, retryable: false, retryAfterMs: 41_000 });
    expect(daily.message).toContain('You exceeded your current quota');
    expect(daily.message).not.toContain('@type');
    await closeMocks();
    const limited = await failWith(geminiErrors.rateLimited('21s'));
    expect(limited).toMatchObject({ code: 'rate_limited', status: 429, retryable: true, retryAfterMs: 21_000 });
  });

  it('429 without a quota message is a retryable rate limit, with retryAfterMs from RetryInfo', async () => {
    const e = await failWith(geminiError(429, 'RESOURCE_EXHAUSTED', 'Too many requests, slow down.', undefined, [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '1.5s' }]));
    expect(e).toMatchObject({ code: 'rate_limited', status: 429, retryable: true, retryAfterMs: 1500 });
  });

  it('503 UNAVAILABLE (overloaded) and 500 INTERNAL are retryable', async () => {
    expect(await failWith(geminiErrors.overloaded())).toMatchObject({ code: 'overloaded', status: 503, retryable: true });
    await closeMocks();
    expect(await failWith(geminiErrors.internal())).toMatchObject({ code: 'server', status: 500, retryable: true });
  });

  it('an unknown model is 404: bad_request, not retryable', async () => {
    const s = await mock(undefined, { models: ['gemini-2.5-pro'] });
    const [e] = errorsOf(await collect(providerFor(s)));
    expect(e).toMatchObject({ code: 'bad_request', status: 404, retryable: false, message: expect.stringContaining('models/gemini-2.5-flash is not found') });
  });

  it('an unreachable endpoint is a retryable network error', async () => {
    const port = await new Promise<number>((r) => {
      const srv = net.createServer().listen(0, '127.0.0.1', () => {
        const p = (srv.address() as net.AddressInfo).port;
        srv.close(() => r(p));
      });
    });
    const events = await collect(providerFor({ url: `http://127.0.0.1:${port}` }));
    expect(events).toEqual([{ type: 'error', error: { code: 'network', message: expect.stringContaining('cannot reach'), retryable: true } }]);
  });

  it('no API key: one auth error naming GEMINI_API_KEY, and no request', async () => {
    const s = await mock();
    const events = await collect(providerFor(s, { apiKey: '' }));
    expect(events).toEqual([{ type: 'error', error: { code: 'auth', message: expect.stringContaining('GEMINI_API_KEY'), retryable: false } }]);
    expect(s.requests).toHaveLength(0);
  });
});

describe('finish reasons and usage', () => {
  it('usage: input excludes cached tokens (and adds tool-use prompt tokens), output includes thoughts', async () => {
    const events = await replay(BUILT.cachedUsage!);
    expect(events.filter((e) => e.type === 'usage')).toEqual([{ type: 'usage', usage: { inputTokens: 250, outputTokens: 23, cacheReadTokens: 1000, reasoningTokens: 20 } }]);
    expect(events.at(-1)).toEqual({ type: 'done', stopReason: 'end', responseId: 'r-cache' });
  });

  it('RECITATION and PROHIBITED_CONTENT are refusals with a clear message; text before stays', async () => {
    const rec = await replay(BUILT.recitation!);
    expect(streamedText(rec)).toBe('Once upon');
    expect(errorsOf(rec)).toEqual([{ code: 'refusal', message: 'the reply was stopped because it recited training data (finishReason RECITATION)', retryable: false }]);
    const pro = await replay(BUILT.prohibited!);
    expect(errorsOf(pro)).toEqual([{ code: 'refusal', message: 'the reply was blocked for prohibited content (finishReason PROHIBITED_CONTENT)', retryable: false }]);
  });

  it('MALFORMED_FUNCTION_CALL before any output is a retryable malformed error', async () => {
    expect(errorsOf(await replay(BUILT.malformedCall!))).toEqual([{ code: 'malformed', message: 'the model produced a malformed function call (finishReason MALFORMED_FUNCTION_CALL)', retryable: true }]);
  });

  it('an error envelope inside the stream is one classified error (retryable only before output)', async () => {
    const after = await replay(BUILT.streamError!);
    expect(streamedText(after)).toBe('Partial ');
    expect(errorsOf(after)).toEqual([{ code: 'overloaded', status: 503, message: 'stream error 503 UNAVAILABLE: The model is overloaded. Please try again later.', retryable: false }]);
    const before = await replay(BUILT.streamError!.slice(1));
    expect(errorsOf(before)).toEqual([expect.objectContaining({ code: 'overloaded', retryable: true })]);
  });

  it('a call with an API-given id keeps it (normalized) and sends the original back via providerData', async () => {
    const events = await replay(BUILT.callWithId!);
    const end = events.find((e) => e.type === 'block_end')!;
    expect(end).toMatchObject({ block: { type: 'tool_call', name: 'get_current_temperature', input: { location: 'Oslo' }, providerData: { id: 'fc/1 weird' } } });
    expect((end as { block: { id: string } }).block.id).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(events.at(-1)).toEqual({ type: 'done', stopReason: 'tool_use', responseId: 'r-id' });
  });

  it('the same key header reaches the mock: x-goog-api-key, never ?key=', async () => {
    const s = await mock();
    await collect(providerFor(s));
    expect(s.requests[0]!.headers['x-goog-api-key']).toBe(KEY);
    expect(s.requests[0]!.path).not.toContain('key=');
  });
});
