/**
 * Proves the official SDK (@google/generative-ai 0.24.1) parses every mode of the Gemini mock,
 * and pins down what the SDK does with the awkward cases (CRLF, early EOF, malformed JSON,
 * thought parts), because LiveAgent's Gemini adapter has to live with exactly this behaviour.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  GoogleGenerativeAI,
  GoogleGenerativeAIAbortError,
  GoogleGenerativeAIError,
  GoogleGenerativeAIFetchError,
  GoogleGenerativeAIResponseError,
  type GenerateContentRequest,
  type RequestOptions,
} from '@google/generative-ai';
import {
  MOCK_GEMINI_KEY,
  fixtureEvents,
  geminiCollapse,
  geminiError,
  geminiErrors,
  geminiReply,
  geminiStream,
  geminiTextStream,
  listGeminiFixtures,
  loadGeminiFixture,
  startMockGemini,
  type GeminiChunk,
  type GeminiMockServer,
  googleJson,
  type MockScript,
} from '../fixtures/mock-gemini.js';
import type { DeliveryOptions } from '../fixtures/mock-http.js';

const MODEL = 'gemini-2.5-flash';
let server: GeminiMockServer;

beforeAll(async () => {
  server = await startMockGemini();
});
afterAll(() => server.close());

function model(key = MOCK_GEMINI_KEY, extra: RequestOptions = {}) {
  return new GoogleGenerativeAI(key).getGenerativeModel({ model: MODEL }, { baseUrl: server.url, ...extra });
}

/** The SDK decorates chunks with text()/functionCalls(); compare the wire data only. */
const plain = <T>(v: T): T => JSON.parse(JSON.stringify(v));

/**
 * Runs one streamed request. `result.response` rejects together with the stream; it is always
 * settled here because an unobserved rejection would crash the process (see the report).
 */
async function stream(script: MockScript, req: GenerateContentRequest | string = 'hi', ro?: RequestOptions) {
  server.setScript(script);
  const result = await model(MOCK_GEMINI_KEY, ro).generateContentStream(req);
  const response = result.response.then((r) => ({ ok: true as const, r }), (e: unknown) => ({ ok: false as const, e }));
  const chunks: GeminiChunk[] = [];
  const texts: string[] = [];
  let error: unknown;
  try {
    for await (const c of result.stream) {
      chunks.push(plain(c) as GeminiChunk);
      try {
        texts.push(c.text());
      } catch (e) {
        texts.push(`<text() threw ${(e as Error).constructor.name}>`); // blocked candidates
      }
    }
  } catch (e) {
    error = e;
  }
  return { chunks, texts, error, response: await response };
}

/** Request that satisfies the mock's strict fidelity checks for whatever the chunks contain. */
function requestFor(chunks: GeminiChunk[]): GenerateContentRequest {
  const names = new Set<string>();
  for (const c of chunks) for (const cand of c.candidates ?? []) for (const p of cand.content?.parts ?? [])
    if (p.functionCall) names.add(p.functionCall.name);
  return {
    contents: [{ role: 'user', parts: [{ text: 'hi' }] }],
    generationConfig: { thinkingConfig: { includeThoughts: true } } as never, // SDK 0.24.1 has no thinkingConfig type
    tools: [{ googleSearch: {} } as never, { functionDeclarations: [...names].map((name) => ({ name })) }],
  };
}

describe('request shape', () => {
  it('POSTs /v1beta/models/{model}:streamGenerateContent?alt=sse with the key in x-goog-api-key', async () => {
    const { texts } = await stream(() => geminiStream(geminiReply({ text: 'ok' })), {
      contents: [{ role: 'user', parts: [{ text: 'hi' }] }],
      generationConfig: { thinkingConfig: { includeThoughts: true, thinkingBudget: 128 } } as never,
    });
    expect(texts).toEqual(['ok']);
    const req = server.requests.at(-1)!;
    expect(req.method).toBe('POST');
    expect(req.path).toBe(`/v1beta/models/${MODEL}:streamGenerateContent?alt=sse`);
    expect(req.headers['x-goog-api-key']).toBe(MOCK_GEMINI_KEY);
    expect(req.headers['x-goog-api-client']).toBe('genai-js/0.24.1');
    expect(req.headers['content-type']).toBe('application/json');
    expect(req.body.contents).toEqual([{ role: 'user', parts: [{ text: 'hi' }] }]);
    // Fields the SDK does not type are still forwarded verbatim.
    expect(req.body.generationConfig).toEqual({ thinkingConfig: { includeThoughts: true, thinkingBudget: 128 } });
  });

  it('the wire uses CRLF and Google-style JSON by default', async () => {
    server.setScript(() => geminiStream(geminiReply({ text: ['a', 'b'] })));
    const res = await fetch(`${server.url}/v1beta/models/${MODEL}:streamGenerateContent?alt=sse`, {
      method: 'POST', headers: { 'x-goog-api-key': MOCK_GEMINI_KEY }, body: '{}',
    });
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    const body = await res.text();
    expect(body.startsWith('data: {"candidates": [{"content": {"parts": [{"text": "a"}],"role": "model"},"index": 0}]')).toBe(true);
    expect(body.split('\r\n\r\n')).toHaveLength(3); // two events + trailing ''
    expect(googleJson({ a: 'x": y', b: [1, { 'k"': '\\"' }] })).toBe('{"a": "x\\": y","b": [1,{"k\\"": "\\\\\\""}]}');
  });
});

describe('fixtures', () => {
  const names = listGeminiFixtures();
  it('has documented fixtures', () => {
    expect(names.length).toBeGreaterThanOrEqual(8);
    for (const n of names) expect(loadGeminiFixture(n).source).toMatch(/^https:\/\//);
  });

  it.each(names)('%s parses chunk-for-chunk when streamed', async (name) => {
    const f = loadGeminiFixture(name);
    const { chunks, error } = await stream(() => geminiStream(fixtureEvents(f)), requestFor(f.chunks));
    expect(error).toBeUndefined();
    expect(chunks).toEqual(f.chunks);
  });

  it.each(names)('%s parses via generateContent (one collapsed response)', async (name) => {
    const f = loadGeminiFixture(name);
    server.setScript(() => geminiStream(fixtureEvents(f)));
    const { response } = await model().generateContent(requestFor(f.chunks));
    expect(plain(response)).toEqual(plain(geminiCollapse(f.chunks)));
    const blocked = name === 'safety-blocked' || name === 'prompt-blocked';
    if (blocked) expect(() => response.text()).toThrow(GoogleGenerativeAIResponseError);
    else expect(typeof response.text()).toBe('string');
  });
});

describe('transport: splits and line endings give identical chunks', () => {
  const rich = () =>
    geminiReply({
      thoughts: ['**Plan**\n\nlook it up', 'then answer ✓'],
      text: ['Euro 2024 went to ', 'Spain — 西班牙 🏆. ', 'Cheers!'],
      grounding: {
        queries: ['euro 2024 winner'],
        sources: [{ title: 'uefa.com', uri: 'https://vertexaisearch.cloud.google.com/grounding-api-redirect/MOCK' }],
        supports: [{ text: 'Spain — 西班牙 🏆.', sources: [0] }],
      },
      responseId: 'fixedResponseId',
    });
  const req = requestFor([]);
  let baseline: GeminiChunk[];

  beforeAll(async () => {
    baseline = (await stream(() => geminiStream(rich()), req)).chunks;
    expect(baseline).toEqual(rich().map((e) => plain(e.data)));
  });

  const deliveries: Array<[string, DeliveryOptions]> = [
    ['LF', { crlf: false }],
    ['CRLF bytewise', { split: 'bytewise' }],
    ['LF bytewise', { split: 'bytewise', crlf: false }],
    ...[1, 2, 3, 42, 1337].map((seed): [string, DeliveryOptions] => [`CRLF random seed ${seed}`, { split: 'random', seed }]),
    ['LF random', { split: 'random', seed: 7, crlf: false }],
  ];
  it.each(deliveries)('%s', async (_label, delivery) => {
    const { chunks, error } = await stream(() => geminiStream(rich(), delivery), req);
    expect(error).toBeUndefined();
    expect(chunks).toEqual(baseline);
  });

  it('CR-only separators (\\r\\r) also parse: the SDK regex accepts \\n\\n, \\r\\r and \\r\\n\\r\\n', async () => {
    const body = rich().map((e) => `data: ${JSON.stringify(e.data)}\r\r`).join('');
    const { chunks, error } = await stream(() => ({ kind: 'raw', body, split: 'bytewise' }), req);
    expect(error).toBeUndefined();
    expect(chunks).toEqual(baseline);
  });
});

describe('thought parts', () => {
  it('survive in stream chunks, but chunk.text() mixes thought text into the answer', async () => {
    const f = loadGeminiFixture('thinking-stream');
    const { chunks, texts, response } = await stream(() => geminiStream(fixtureEvents(f)), requestFor(f.chunks));
    expect(chunks[0].candidates![0].content!.parts[0]).toMatchObject({ thought: true });
    expect(chunks.at(-1)!.candidates![0].content!.parts[0]).toEqual({ text: '', thoughtSignature: expect.any(String) });
    // text() does not look at `thought`: summaries come back as if they were answer text.
    expect(texts[0]).toBe(f.chunks[0].candidates![0].content!.parts[0].text);
    // The aggregated response drops `thought` and `thoughtSignature` entirely.
    expect(response.ok).toBe(true);
    const parts = response.ok ? plain(response.r).candidates![0].content.parts : [];
    expect(parts.some((p: object) => 'thought' in p || 'thoughtSignature' in p)).toBe(false);
  });

  it('aggregation bug: several parts in one chunk collapse to copies of the last part', async () => {
    const chunk = { candidates: [{ content: { parts: [{ text: 'pondering', thought: true }, { text: 'Answer' }], role: 'model' }, index: 0, finishReason: 'STOP' }] };
    const { chunks, response } = await stream(() => geminiStream([{ data: chunk }]), requestFor([]));
    expect(chunks[0].candidates![0].content!.parts).toHaveLength(2);
    expect(response.ok && plain(response.r).candidates![0].content.parts).toEqual([{ text: 'Answer' }, { text: 'Answer' }]);
  });
});

describe('function calls', () => {
  const calls = [
    { name: 'get_current_temperature', args: { location: 'Paris' } },
    { name: 'get_current_temperature', args: { location: 'London' } },
  ];
  const req: GenerateContentRequest = {
    contents: [{ role: 'user', parts: [{ text: 'weather in Paris and London?' }] }],
    tools: [{ functionDeclarations: [{ name: 'get_current_temperature' }] }],
  };

  it('arrive whole in one chunk; only the first parallel call carries the signature', async () => {
    const { chunks, response } = await stream(() => geminiStream(geminiReply({ functionCalls: calls }), { split: 'bytewise' }), req);
    expect(chunks).toHaveLength(1);
    const parts = chunks[0].candidates![0].content!.parts;
    expect(parts.map((p) => p.functionCall)).toEqual(calls);
    expect(parts[0].thoughtSignature).toEqual(expect.any(String));
    expect(parts[1].thoughtSignature).toBeUndefined();
    expect(chunks[0].candidates![0]).toMatchObject({ finishReason: 'STOP', finishMessage: 'Model generated function call(s).' });
    // Same aggregation bug as above: result.response reports London twice and Paris never.
    expect(response.ok && response.r.functionCalls()).toEqual([calls[1], calls[1]]);
  });

  it('chunk.functionCalls() returns them all; generateContent returns them too', async () => {
    server.setScript(() => geminiStream(geminiReply({ text: 'Checking.', functionCalls: calls })));
    const m = model();
    const streamed = await m.generateContentStream(req);
    const found = [];
    for await (const c of streamed.stream) found.push(...(c.functionCalls() ?? []));
    await streamed.response;
    expect(found).toEqual(calls);
    const { response } = await m.generateContent(req);
    expect(response.functionCalls()).toEqual(calls);
    expect(response.text()).toBe('Checking.');
  });

  it('strict mode refuses replies the API would never send for this request', async () => {
    for (const [reply, problem] of [
      [geminiReply({ functionCalls: [{ name: 'nope', args: {} }] }), 'not declared'],
      [geminiReply({ thoughts: 'hmm', text: 'hi' }), 'includeThoughts'],
    ] as const) {
      server.setScript(() => geminiStream(reply));
      const err = await model().generateContentStream('hi').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(GoogleGenerativeAIFetchError);
      expect((err as GoogleGenerativeAIFetchError).status).toBe(500);
      expect(String(err)).toContain(problem);
    }
  });
});

describe('grounding metadata', () => {
  it('reaches stream chunks and the aggregated response; segment offsets are UTF-8 bytes', async () => {
    const text = 'Ünïcode first. Spain won Euro 2024.';
    const events = geminiReply({
      text,
      grounding: { queries: ['who won euro 2024'], sources: [{ title: 'uefa.com', uri: 'https://example.invalid/u' }], supports: [{ text: 'Spain won Euro 2024.', sources: [0] }] },
    });
    const { chunks, response } = await stream(() => geminiStream(events), { contents: [{ role: 'user', parts: [{ text: 'q' }] }], tools: [{ googleSearch: {} } as never] });
    const gm = chunks.at(-1)!.candidates![0].groundingMetadata as any;
    expect(gm.webSearchQueries).toEqual(['who won euro 2024']);
    expect(gm.groundingChunks).toEqual([{ web: { uri: 'https://example.invalid/u', title: 'uefa.com' } }]);
    const seg = gm.groundingSupports[0].segment;
    expect(Buffer.from(text).subarray(seg.startIndex, seg.endIndex).toString()).toBe('Spain won Euro 2024.');
    expect(seg.startIndex).not.toBe(text.indexOf('Spain')); // bytes, not UTF-16 units
    expect(response.ok && plain(response.r).candidates![0].groundingMetadata).toEqual(gm);
  });
});

describe('errors map to GoogleGenerativeAIFetchError with status', () => {
  const cases: Array<[string, () => Promise<unknown>, number, string]> = [
    ['wrong key', () => model('wrong-key').generateContentStream('hi'), 400, 'API key not valid'],
    ['empty key', () => model('').generateContentStream('hi'), 403, 'unregistered callers'],
    ['unknown API version', () => model(MOCK_GEMINI_KEY, { apiVersion: 'v1' }).generateContentStream('hi'), 404, 'no route'],
  ];
  it.each(cases)('%s', async (_l, call, status, text) => {
    const err = (await call().catch((e: unknown) => e)) as GoogleGenerativeAIFetchError;
    expect(err).toBeInstanceOf(GoogleGenerativeAIFetchError);
    expect(err.status).toBe(status);
    expect(err.message).toContain(text);
  });

  it('keeps Google details: ErrorInfo for a bad key, RetryInfo for 429', async () => {
    const bad = (await model('wrong').generateContent('hi').catch((e: unknown) => e)) as GoogleGenerativeAIFetchError;
    expect(bad.statusText).toBe('Bad Request');
    expect(bad.errorDetails).toContainEqual(expect.objectContaining({ reason: 'API_KEY_INVALID' }));
    for (const [reply, status] of [[geminiErrors.rateLimited('7s'), 429], [geminiErrors.overloaded(), 503], [geminiErrors.internal(), 500]] as const) {
      server.setScript(() => reply);
      const err = (await model().generateContentStream('hi').catch((e: unknown) => e)) as GoogleGenerativeAIFetchError;
      expect(err.status).toBe(status);
      if (status === 429) expect(err.errorDetails).toContainEqual({ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '7s' });
    }
  });

  it('a non-JSON error body still yields the status, with an empty message part', async () => {
    server.setScript(() => ({ kind: 'raw', status: 502, body: '<html>Bad Gateway</html>', headers: { 'content-type': 'text/html' } }));
    const err = (await model().generateContentStream('hi').catch((e: unknown) => e)) as GoogleGenerativeAIFetchError;
    expect(err.status).toBe(502);
    expect(err.errorDetails).toBeUndefined();
    expect(err.message).toMatch(/\[502 Bad Gateway\] $/);
  });

  it('an unknown model is 404 NOT_FOUND when the mock is given a model list', async () => {
    const strictModels = await startMockGemini({ models: ['gemini-2.5-pro'] });
    const m = new GoogleGenerativeAI(MOCK_GEMINI_KEY).getGenerativeModel({ model: MODEL }, { baseUrl: strictModels.url });
    const err = (await m.generateContentStream('hi').catch((e: unknown) => e)) as GoogleGenerativeAIFetchError;
    await strictModels.close();
    expect(err.status).toBe(404);
    expect(err.message).toContain(`models/${MODEL} is not found for API version v1beta`);
  });

  it('geminiError builds the envelope for ad-hoc statuses', async () => {
    server.setScript(() => geminiError(400, 'FAILED_PRECONDITION', 'User location is not supported for the API use.'));
    const err = (await model().generateContent('hi').catch((e: unknown) => e)) as GoogleGenerativeAIFetchError;
    expect(err.status).toBe(400);
    expect(err.message).toContain('User location is not supported');
  });
});

describe('broken streams (documents SDK behaviour)', () => {
  const three = () => geminiReply({ text: ['one ', 'two ', 'three'] });

  it('abrupt EOF mid-event: earlier chunks arrive, then "Error reading from the stream"', async () => {
    const events = three();
    const cut = Buffer.byteLength(`data: ${googleJson(events[0].data)}\r\n\r\n`) + 10; // 10 bytes into event 2
    const { chunks, error, response } = await stream(() => geminiStream(events, { truncateAfterBytes: cut }));
    expect(chunks).toHaveLength(1);
    expect(error).toBeInstanceOf(GoogleGenerativeAIError);
    expect((error as Error).message).toBe('[GoogleGenerativeAI Error]: Error reading from the stream');
    expect(response.ok).toBe(false); // result.response rejects as well
  });

  it('abrupt EOF exactly after the last event is still an error (the chunked body never ended)', async () => {
    const events = three();
    const all = events.reduce((n, e) => n + Buffer.byteLength(`data: ${googleJson(e.data)}\r\n\r\n`), 0);
    const { chunks, error } = await stream(() => geminiStream(events, { truncateAfterBytes: all }));
    expect(chunks).toHaveLength(3);
    expect((error as Error).message).toBe('[GoogleGenerativeAI Error]: Error reading from the stream');
  });

  it('clean EOF mid-event: "Failed to parse stream"', async () => {
    const body = 'data: {"candidates": [{"content": {"parts": [{"text": "one"}],"role": "model"},"index": 0}]}\r\n\r\ndata: {"cand';
    const { chunks, error } = await stream(() => ({ kind: 'raw', body }));
    expect(chunks).toHaveLength(1);
    expect((error as Error).message).toBe('[GoogleGenerativeAI Error]: Failed to parse stream');
  });

  it('clean EOF after a complete event is success: only a missing finishReason tells', async () => {
    const events = three().slice(0, 2);
    const { chunks, error } = await stream(() => geminiStream(events));
    expect(error).toBeUndefined();
    expect(chunks.map((c) => c.candidates![0].finishReason)).toEqual([undefined, undefined]);
  });

  it('malformed JSON in a data line: chunks before it arrive, then "Error parsing JSON response"', async () => {
    const { chunks, error, response } = await stream(() => geminiStream([three()[0], { data: '{"candidates": [' }, three()[1]]));
    expect(chunks).toHaveLength(1);
    expect((error as Error).message).toBe('[GoogleGenerativeAI Error]: Error parsing JSON response: "{"candidates": ["');
    expect(response.ok).toBe(false);
  });

  it('SDK needs exactly "data: " at the buffer start: a comment or `data:` without space wedges it', async () => {
    const ok = `data: ${JSON.stringify(three()[0].data)}\r\n\r\n`;
    for (const prefix of [': keep-alive\r\n\r\n', `data:${JSON.stringify(three()[1].data)}\r\n\r\n`]) {
      const { chunks, error } = await stream(() => ({ kind: 'raw', body: prefix + ok }));
      expect(chunks).toHaveLength(0); // the valid event after it is never parsed either
      expect((error as Error).message).toContain('Failed to parse stream');
    }
  });

  it('a raw U+2028 inside a JSON string also wedges the SDK (its regex `.` stops there)', async () => {
    const { chunks, error } = await stream(() => geminiStream(geminiReply({ text: ['a\u2028b', 'c'] })));
    expect(chunks).toHaveLength(0);
    expect((error as Error).message).toContain('Failed to parse stream');
    // Escaped, as JSON allows, it is fine.
    const body = `data: ${JSON.stringify(geminiReply({ text: 'x' })[0].data).replace('"x"', '"a\\u2028b"')}\r\n\r\n`;
    expect((await stream(() => ({ kind: 'raw', body }))).texts).toEqual(['a\u2028b']);
  });

  it('stalled stream + RequestOptions.timeout: AbortError only if nothing was read yet', async () => {
    // Stalled before the first event: the abort surfaces as GoogleGenerativeAIAbortError.
    const early = await stream(() => geminiStream(three(), { stallAfterEvents: 0 }), 'hi', { timeout: 300 });
    expect(early.chunks).toHaveLength(0);
    expect(early.error).toBeInstanceOf(GoogleGenerativeAIAbortError);
    // Stalled after one event: the SDK's nested pump().catch() re-wraps its own AbortError
    // (which has name "Error") into the generic "Error reading from the stream".
    const late = await stream(() => geminiStream(three(), { stallAfterEvents: 1 }), 'hi', { timeout: 300 });
    expect(late.chunks).toHaveLength(1);
    expect(late.error).not.toBeInstanceOf(GoogleGenerativeAIAbortError);
    expect((late.error as Error).message).toBe('[GoogleGenerativeAI Error]: Error reading from the stream');
  });
});

describe('volume', () => {
  it('geminiTextStream(50000) builds in linear time and the SDK reads all of it', async () => {
    const t0 = performance.now();
    const events = geminiTextStream(50_000);
    expect(performance.now() - t0).toBeLessThan(1000);
    expect(events.at(-1)!.data).toMatchObject({ candidates: [{ finishReason: 'STOP' }] });
    server.setScript(() => geminiStream(events));
    const result = await model().generateContentStream('hi');
    let n = 0;
    let last = '';
    for await (const c of result.stream) {
      n += 1;
      last = c.text();
    }
    await result.response;
    expect(n).toBe(50_000);
    expect(last).toBe('w49999 ');
  }, 60_000);
});
