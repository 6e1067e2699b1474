/**
 * Gemini thought signatures on text parts round-trip on the text block itself
 * (TextBlock.signature): streamed from the mock through @google/generative-ai, then sent back on
 * the same text part of the next request; functionCall signatures keep their own path; another
 * provider's text never carries a signature to Gemini.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ContentBlock, ProviderEvent } from '../../plugin-api.js';
import { geminiReply, geminiStream, MOCK_THOUGHT_SIGNATURE, type GeminiChunk } from '../fixtures/mock-gemini.js';
import { closeMocks, collect, mock, msg, providerFor, request, toolsFor, userText } from './provider-gemini-harness.js';

afterEach(closeMocks);

const chunk = (parts: Array<{ text: string; thoughtSignature?: string }>, finish?: string): GeminiChunk => ({
  candidates: [{ content: { parts, role: 'model' }, index: 0, ...(finish ? { finishReason: finish } : {}) } as never],
  usageMetadata: { promptTokenCount: 5, candidatesTokenCount: 3, totalTokenCount: 8 },
  modelVersion: 'gemini-2.5-flash',
  responseId: 'resp-sig',
});
const sse = (chunks: GeminiChunk[]) => chunks.map((c) => ({ data: c }));
const blocks = (events: ProviderEvent[]): ContentBlock[] => events.flatMap((e) => (e.type === 'block_end' ? [e.block] : []));

describe('thought signatures on text parts', () => {
  it('a signature on the first text part (after thoughts) signs that text block, not an empty thinking block', async () => {
    const s = await mock(() => geminiStream(geminiReply({ thoughts: 'Thinking it over.', text: ['The answer', ' is 4.'] })));
    const out = blocks(await collect(providerFor(s), request({ thinkingBudget: 1024 })));
    expect(out).toEqual([
      { type: 'thinking', thinking: 'Thinking it over.', provider: 'gemini' },
      { type: 'text', text: 'The answer is 4.', signature: MOCK_THOUGHT_SIGNATURE },
    ]);
  });

  it('the trailing empty signed part of a stream signs the text still open; a second signature starts a new text block', async () => {
    const s = await mock(() =>
      geminiStream(
        sse([
          chunk([{ text: 'Hello' }]),
          chunk([{ text: ' world.' }]),
          chunk([{ text: '', thoughtSignature: 'c2lnLTE=' }]),
          chunk([{ text: 'More.', thoughtSignature: 'c2lnLTI=' }], 'STOP'),
        ]),
      ),
    );
    const out = blocks(await collect(providerFor(s)));
    expect(out).toEqual([
      { type: 'text', text: 'Hello world.', signature: 'c2lnLTE=' },
      { type: 'text', text: 'More.', signature: 'c2lnLTI=' },
    ]);
  });

  it('goes back on the same text part; functionCall signatures keep their part; foreign text carries none', async () => {
    const bodies: any[] = [];
    const s = await mock((req) => {
      bodies.push(req.body);
      return geminiStream(geminiReply({ text: 'ok' }));
    });
    const history = [
      userText('Q1'),
      msg('assistant', [{ type: 'text', text: 'A1', signature: 'dGV4dC1zaWc=' }], { provider: 'gemini' }),
      userText('Q2'),
      msg('assistant', [
        { type: 'text', text: 'Checking.', signature: 'Zmlyc3Q=' },
        { type: 'tool_call', id: 'call_1', name: 'weather', input: { location: 'Paris' }, providerData: { thoughtSignature: 'Y2FsbC1zaWc=' } },
      ], { provider: 'gemini' }),
      msg('tool', [{ type: 'tool_result', toolCallId: 'call_1', toolName: 'weather', isError: false, content: [{ type: 'text', text: 'sunny' }] }]),
      msg('assistant', [{ type: 'text', text: 'From Claude.', signature: 'Y2xhdWRl' }], { provider: 'claude_code' }),
      userText('Q3'),
    ];
    const tools = toolsFor([{ candidates: [{ content: { role: 'model', parts: [{ functionCall: { name: 'weather' } }] }, index: 0 }] } as never]);
    await collect(providerFor(s), request({ messages: history, tools }));
    const model = bodies[0].contents.filter((c: any) => c.role === 'model');
    expect(model[0]).toEqual({ role: 'model', parts: [{ text: 'A1', thoughtSignature: 'dGV4dC1zaWc=' }] });
    expect(model[1]).toEqual({ role: 'model', parts: [{ text: 'Checking.', thoughtSignature: 'Zmlyc3Q=' }, { functionCall: { name: 'weather', args: { location: 'Paris' } }, thoughtSignature: 'Y2FsbC1zaWc=' }] });
    expect(model[2]).toEqual({ role: 'model', parts: [{ text: 'From Claude.' }] });
  });

  it('round trip: a streamed signed reply, stored as its blocks, goes back with the signature where it came', async () => {
    const bodies: any[] = [];
    const s = await mock((req) => {
      bodies.push(req.body);
      return geminiStream(sse([chunk([{ text: 'Four' }]), chunk([{ text: '.' }]), chunk([{ text: '', thoughtSignature: 'ZW5kLXNpZw==' }], 'STOP')]));
    });
    const p = providerFor(s);
    const first = blocks(await collect(p));
    await collect(p, request({ messages: [userText('2+2?'), msg('assistant', first, { provider: 'gemini' }), userText('and 3+3?')] }));
    expect(bodies[1].contents[1]).toEqual({ role: 'model', parts: [{ text: 'Four.', thoughtSignature: 'ZW5kLXNpZw==' }] });
  });
});
