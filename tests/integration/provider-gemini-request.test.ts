/**
 * What the gemini provider sends, as the mock records it: the key header and path, the system
 * instruction, function declarations with Gemini-safe schemas (from zod), toolConfig, the
 * thinking and output settings, Google Search, and the history conversion (roles, images,
 * function responses, thought signatures, foreign thinking, repairs).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { JsonObject, Message, ProviderRequest, ToolSpec } from '../../plugin-api.js';
import { jsonSchemaFor } from '../../core/registries.js';
import { toGeminiSchema } from '../../plugins/provider-gemini/index.js';
import { INTERRUPTED_RESULT } from '../../plugins/provider-gemini/history.js';
import { geminiReply, geminiStream } from '../fixtures/mock-gemini.js';
import { KEY, closeMocks, collect, mock, msg, providerFor, request, userText } from './provider-gemini-harness.js';

afterEach(closeMocks);

/** Send one request and return the body the mock received. */
async function sent(req: Partial<ProviderRequest>, extra: Parameters<typeof providerFor>[1] = {}) {
  const s = await mock(() => geminiStream(geminiReply({ text: 'ok' })));
  const events = await collect(providerFor(s, extra), request(req));
  expect(events.at(-1)).toMatchObject({ type: 'done' });
  return { body: s.requests[0]!.body, req: s.requests[0]! };
}

const spec = (name: string, schema: z.ZodType, description = `${name} tool`): ToolSpec => ({
  name,
  description,
  inputSchema: jsonSchemaFor({ name, description, parameters: schema, execute: async () => ({ content: [] }) }),
});

describe('transport', () => {
  it('POSTs /v1beta/models/{model}:streamGenerateContent?alt=sse with the key in x-goog-api-key, never in the URL', async () => {
    const { req } = await sent({});
    expect(req.method).toBe('POST');
    expect(req.path).toBe('/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse');
    expect(req.headers['x-goog-api-key']).toBe(KEY);
    expect(req.headers['x-goog-api-client']).toBe('genai-js/0.24.1');
    expect(req.path).not.toContain(KEY);
  });

  it('a baseUrl ending in /v1beta is read as host root + API version', async () => {
    const s = await mock();
    await collect(providerFor({ url: `${s.url}/v1beta/` }));
    expect(s.requests[0]!.path).toBe('/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse');
  });
});

describe('system prompt, tools and toolConfig', () => {
  it('system parts become one systemInstruction (empty parts skipped)', async () => {
    const { body } = await sent({ system: [{ id: 'base', text: 'Be brief.' }, { id: 'empty', text: '  ' }, { id: 'user-settings', text: 'Answer in French.' }] });
    expect(body.systemInstruction).toEqual({ role: 'system', parts: [{ text: 'Be brief.\n\nAnswer in French.' }] });
  });

  it('no system text: no systemInstruction', async () => {
    const { body } = await sent({ system: [] });
    expect(body.systemInstruction).toBeUndefined();
  });

  it('a zod-derived schema is converted to the subset Gemini accepts', async () => {
    const Node: z.ZodType = z.object({ name: z.string(), get children() { return z.array(Node).optional(); } });
    const schema = z.object({
      email: z.email().describe('Where to write'),
      count: z.number().int().min(1).max(10).optional(),
      mode: z.enum(['fast', 'slow']),
      level: z.literal(3),
      note: z.string().nullable(),
      tags: z.array(z.string()).default([]),
      meta: z.record(z.string(), z.string()),
      choice: z.union([z.string(), z.number()]),
      when: z.iso.datetime(),
      ratio: z.number().gt(0).lt(1),
      nested: z.object({ url: z.url() }).strict(),
      tree: Node,
    });
    const { body } = await sent({ tools: [spec('Write', schema), spec('Ping', z.object({}))] });
    const [write, ping] = body.tools[0].functionDeclarations;
    expect(ping).toEqual({ name: 'Ping', description: 'Ping tool' }); // no arguments: no parameters at all
    const p = write.parameters;
    expect(write.name).toBe('Write');
    expect(p.type).toBe('object');
    expect(p.required).toEqual(['email', 'mode', 'level', 'note', 'meta', 'choice', 'when', 'ratio', 'nested', 'tree']);
    expect(p.properties.email).toEqual({ type: 'string', description: 'Where to write' });
    expect(p.properties.count).toEqual({ type: 'integer', minimum: 1, maximum: 10 });
    expect(p.properties.mode).toEqual({ type: 'string', format: 'enum', enum: ['fast', 'slow'] });
    expect(p.properties.level).toEqual({ type: 'number', description: 'One of: 3.' });
    expect(p.properties.note).toEqual({ type: 'string', nullable: true });
    expect(p.properties.tags).toEqual({ type: 'array', items: { type: 'string' }, default: [] });
    expect(p.properties.meta).toEqual({ type: 'object' });
    expect(p.properties.choice).toEqual({ anyOf: [{ type: 'string' }, { type: 'number' }] });
    expect(p.properties.when).toEqual({ type: 'string', format: 'date-time' });
    expect(p.properties.ratio).toEqual({ type: 'number', minimum: 0, maximum: 1 });
    expect(p.properties.nested).toEqual({ type: 'object', properties: { url: { type: 'string' } }, required: ['url'] });
    expect(p.properties.tree.properties.children.items.properties.name).toEqual({ type: 'string' });

    const forbidden = new Set(['$schema', '$ref', '$defs', '$id', 'additionalProperties', 'propertyNames', 'pattern', 'const', 'exclusiveMinimum', 'exclusiveMaximum', 'oneOf', 'allOf', 'not']);
    const bad: string[] = [];
    const walk = (v: unknown, path: string) => {
      if (Array.isArray(v)) v.forEach((x, i) => walk(x, `${path}[${i}]`));
      else if (v && typeof v === 'object') {
        for (const [k, x] of Object.entries(v)) {
          if (forbidden.has(k) && !path.endsWith('.properties')) bad.push(`${path}.${k}`);
          if (k === 'type' && !path.endsWith('.properties') && !['string', 'number', 'integer', 'boolean', 'array', 'object'].includes(x as string)) bad.push(`${path}.type=${String(x)}`);
          if (k === 'format' && !path.endsWith('.properties') && !['enum', 'date-time', 'int32', 'int64', 'float', 'double'].includes(x as string)) bad.push(`${path}.format=${String(x)}`);
          walk(x, `${path}.${k}`);
        }
      }
    };
    walk(p, 'parameters');
    expect(bad).toEqual([]);
  });

  it('recursion deeper than the limit is cut to an open object, and remote refs too', () => {
    const out = toGeminiSchema({ type: 'object', properties: { a: { $ref: '#' }, b: { $ref: 'https://example.com/s.json', description: 'remote' } } }) as any;
    let node = out;
    let depth = 0;
    while (node.properties?.a) {
      node = node.properties.a;
      depth++;
    }
    expect(depth).toBeLessThanOrEqual(5);
    expect(node).toEqual({ type: 'object' });
    expect(out.properties.b).toEqual({ type: 'object', description: 'remote' });
  });

  const weather = spec('get_weather', z.object({ city: z.string() }));
  it.each([
    ['auto', { mode: 'AUTO' }],
    ['any', { mode: 'ANY' }],
    ['none', { mode: 'NONE' }],
    [{ name: 'get_weather' }, { mode: 'ANY', allowedFunctionNames: ['get_weather'] }],
  ] as const)('toolChoice %j → functionCallingConfig %j', async (choice, config) => {
    const { body } = await sent({ tools: [weather], toolChoice: choice as ProviderRequest['toolChoice'] });
    expect(body.toolConfig).toEqual({ functionCallingConfig: config });
  });

  it('no tools: no tools and no toolConfig, whatever toolChoice says', async () => {
    const { body } = await sent({ toolChoice: 'any' });
    expect(body.tools).toBeUndefined();
    expect(body.toolConfig).toBeUndefined();
  });
});

describe('generationConfig', () => {
  it('thinking models get includeThoughts by default and no budget (the model decides)', async () => {
    const { body } = await sent({});
    expect(body.generationConfig).toEqual({ thinkingConfig: { includeThoughts: true } });
  });

  it('thinkingBudget: settings value, a positive request value wins, clamped to the model range', async () => {
    expect((await sent({}, { thinkingBudget: 2048 })).body.generationConfig.thinkingConfig).toEqual({ includeThoughts: true, thinkingBudget: 2048 });
    await closeMocks();
    expect((await sent({ thinkingBudget: 999_999 }, { thinkingBudget: 2048 })).body.generationConfig.thinkingConfig).toEqual({ includeThoughts: true, thinkingBudget: 24_576 });
    await closeMocks();
    expect((await sent({ model: 'gemini-2.5-pro', thinkingBudget: 10 })).body.generationConfig.thinkingConfig).toEqual({ includeThoughts: true, thinkingBudget: 128 });
    await closeMocks();
    expect((await sent({}, { thinkingBudget: -1 })).body.generationConfig.thinkingConfig).toEqual({ includeThoughts: true, thinkingBudget: -1 });
  });

  it('thinkingBudget 0 switches thinking off where the model allows it (Flash), Pro gets its minimum', async () => {
    expect((await sent({}, { thinkingBudget: 0 })).body.generationConfig).toEqual({ thinkingConfig: { thinkingBudget: 0 } });
    await closeMocks();
    expect((await sent({ model: 'gemini-2.5-pro' }, { thinkingBudget: 0 })).body.generationConfig.thinkingConfig).toEqual({ includeThoughts: true, thinkingBudget: 128 });
  });

  it('includeThoughts false, and models that do not think get no thinkingConfig', async () => {
    expect((await sent({}, { includeThoughts: false, thinkingBudget: 512 })).body.generationConfig).toEqual({ thinkingConfig: { thinkingBudget: 512 } });
    await closeMocks();
    // (the SDK sends the model-level default `generationConfig: {}` when we give none)
    expect((await sent({ model: 'gemini-2.0-flash' }, { thinkingBudget: 512 })).body.generationConfig).toEqual({});
  });

  it('maxOutputTokens: the request, else settings; capped by the model limit', async () => {
    expect((await sent({}, { maxOutputTokens: 1000 })).body.generationConfig.maxOutputTokens).toBe(1000);
    await closeMocks();
    expect((await sent({ maxOutputTokens: 500 }, { maxOutputTokens: 1000 })).body.generationConfig.maxOutputTokens).toBe(500);
    await closeMocks();
    expect((await sent({ model: 'gemini-2.0-flash', maxOutputTokens: 100_000 })).body.generationConfig.maxOutputTokens).toBe(8192);
  });

  it('request options override settings; credentials in them are ignored', async () => {
    const { body, req } = await sent({ options: { thinkingBudget: 300, apiKey: 'not-this-one', webSearch: true } }, { thinkingBudget: 2048 });
    expect(body.generationConfig.thinkingConfig.thinkingBudget).toBe(300);
    expect(body.tools).toEqual([{ googleSearch: {} }]);
    expect(req.headers['x-goog-api-key']).toBe(KEY);
  });

  it('bad request options give one config error naming the provider and the field', async () => {
    const s = await mock();
    const events = await collect(providerFor(s), request({ options: { thinkingBudget: 'lots' } }));
    expect(events).toEqual([{ type: 'error', error: { code: 'config', message: expect.stringMatching(/^provider "gemini": request options\.thinkingBudget: /), retryable: false } }]);
    expect(s.requests).toHaveLength(0);
  });
});

describe('Google Search', () => {
  it('webSearch adds the googleSearch tool', async () => {
    expect((await sent({}, { webSearch: true })).body.tools).toEqual([{ googleSearch: {} }]);
  });

  it('Gemini 2.x cannot combine it with function calling: dropped in rounds with tools (and logged once); Gemini 3 gets both', async () => {
    const lines: string[] = [];
    const logger = { debug() {}, info: (m: string) => void lines.push(m), warn() {}, error() {} };
    const weather = spec('get_weather', z.object({ city: z.string() }));
    const { body } = await sent({ tools: [weather] }, { webSearch: true, logger });
    expect(body.tools).toEqual([{ functionDeclarations: [expect.objectContaining({ name: 'get_weather' })] }]);
    expect(lines).toEqual([expect.stringContaining('webSearch is skipped for gemini-2.5-flash')]);
    await closeMocks();
    const g3 = await sent({ model: 'gemini-3-pro-preview', tools: [weather] }, { webSearch: true });
    expect(g3.body.tools).toEqual([{ functionDeclarations: [expect.objectContaining({ name: 'get_weather' })] }, { googleSearch: {} }]);
  });
});

describe('history conversion', () => {
  const SIG_CALL = 'c2lnLWNhbGw=';
  const SIG_TEXT = 'c2lnLXRleHQ=';
  const SIG_TRAIL = 'c2lnLXRyYWls';
  const png = 'iVBORw0KGgo=';

  it('roles, images, function calls and responses, signatures and repairs', async () => {
    const history: Message[] = [
      msg('user', [{ type: 'text', text: 'Look at this' }, { type: 'image', mimeType: 'image/png', data: png }, { type: 'image', mimeType: 'image/jpeg', path: '/tmp/old.jpg' }]),
      msg('assistant', [
        { type: 'thinking', thinking: 'Plan: check the weather.', provider: 'gemini' }, // unsigned summary: not sent
        { type: 'text', text: 'Checking both.' },
        { type: 'tool_call', id: 'call_a', name: 'get_weather', input: { city: 'Paris' }, providerData: { thoughtSignature: SIG_CALL } },
        { type: 'tool_call', id: 'call_b', name: 'get_weather', input: { city: 'London' } },
      ], { provider: 'gemini' }),
      msg('tool', [
        // Out of order, one error, one with an image: responses follow call order, named by the call.
        { type: 'tool_result', toolCallId: 'call_b', toolName: 'get_weather', content: [{ type: 'text', text: 'London: down' }], isError: true },
        { type: 'tool_result', toolCallId: 'call_a', toolName: 'get_weather', content: [{ type: 'text', text: 'Paris: 21°C' }, { type: 'image', mimeType: 'image/png', data: png }], isError: false },
        { type: 'tool_result', toolCallId: 'call_zz', toolName: 'ghost', content: [{ type: 'text', text: 'orphan' }], isError: false },
      ]),
      msg('assistant', [
        { type: 'thinking', thinking: 'Summarise.', signature: SIG_TEXT, provider: 'gemini' },
        { type: 'text', text: 'Paris is warm.' },
        { type: 'hosted_search', provider: 'gemini', queries: ['q'], sources: [], status: 'completed' },
        { type: 'thinking', thinking: '', signature: SIG_TRAIL, provider: 'gemini' },
      ], { provider: 'gemini' }),
      userText('And tomorrow?'),
      msg('assistant', [{ type: 'tool_call', id: 'call_c', name: 'get_weather', input: { city: 'Rome' } }]),
      // call_c never got a result (a crash): it is answered with a synthetic error before the next user turn.
      userText('Never mind.'),
      userText('Thanks!'),
    ];
    const { body } = await sent({ messages: history });
    expect(body.contents).toEqual([
      { role: 'user', parts: [{ text: 'Look at this' }, { inlineData: { mimeType: 'image/png', data: png } }, { text: '[image /tmp/old.jpg (image/jpeg) is no longer attached]' }] },
      {
        role: 'model',
        parts: [
          { text: 'Checking both.' },
          { functionCall: { name: 'get_weather', args: { city: 'Paris' } }, thoughtSignature: SIG_CALL },
          { functionCall: { name: 'get_weather', args: { city: 'London' } } },
        ],
      },
      {
        role: 'user',
        parts: [
          { functionResponse: { name: 'get_weather', response: { output: 'Paris: 21°C' } } },
          { functionResponse: { name: 'get_weather', response: { error: 'London: down' } } },
          { inlineData: { mimeType: 'image/png', data: png } },
        ],
      },
      { role: 'model', parts: [{ text: 'Paris is warm.', thoughtSignature: SIG_TEXT }, { text: '', thoughtSignature: SIG_TRAIL }] },
      { role: 'user', parts: [{ text: 'And tomorrow?' }] },
      { role: 'model', parts: [{ functionCall: { name: 'get_weather', args: { city: 'Rome' } } }] },
      { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { error: INTERRUPTED_RESULT } } }, { text: 'Never mind.' }, { text: 'Thanks!' }] },
    ]);
  });

  it("another provider's thinking is dropped by default, sent as <thinking> text with foreignThinking 'text'; redacted never", async () => {
    const history: Message[] = [
      userText('Q1'),
      msg('assistant', [
        { type: 'thinking', thinking: 'Claude was here.', signature: 'anthropic-sig', provider: 'claude_code' },
        { type: 'thinking', thinking: '', redacted: true, data: 'opaque', provider: 'claude_code' },
        { type: 'text', text: 'A1' },
      ], { provider: 'claude_code' }),
      userText('Q2'),
    ];
    const dropped = await sent({ messages: history });
    expect(dropped.body.contents[1]).toEqual({ role: 'model', parts: [{ text: 'A1' }] });
    await closeMocks();
    const asText = await sent({ messages: history }, { foreignThinking: 'text' });
    expect(asText.body.contents[1]).toEqual({ role: 'model', parts: [{ text: '<thinking>\nClaude was here.\n</thinking>' }, { text: 'A1' }] });
  });

  it('the list starts with a user turn and never ends with a model turn', async () => {
    const history: Message[] = [
      msg('assistant', [{ type: 'text', text: 'Welcome!' }]),
      userText('Hi'),
      msg('assistant', [{ type: 'text', text: 'Half a rep' }], { stopReason: 'error', meta: { partial: true } }),
    ];
    const { body } = await sent({ messages: history });
    expect(body.contents).toEqual([
      { role: 'user', parts: [{ text: '(continuing the conversation)' }] },
      { role: 'model', parts: [{ text: 'Welcome!' }] },
      { role: 'user', parts: [{ text: 'Hi' }] },
    ]);
  });

  it('a call id the API gave is echoed on the call and its response', async () => {
    const history: Message[] = [
      userText('Weather?'),
      msg('assistant', [{ type: 'tool_call', id: 'fc_1_weird', name: 'get_weather', input: {}, providerData: { id: 'fc/1 weird' } as JsonObject }]),
      msg('tool', [{ type: 'tool_result', toolCallId: 'fc_1_weird', toolName: 'get_weather', content: [], isError: false }]),
    ];
    const { body } = await sent({ messages: history });
    expect(body.contents.slice(1)).toEqual([
      { role: 'model', parts: [{ functionCall: { name: 'get_weather', args: {}, id: 'fc/1 weird' } }] },
      { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { output: '(no output)' }, id: 'fc/1 weird' } }] },
    ]);
  });
});
