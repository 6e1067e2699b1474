/**
 * Each provider's native form of a document (and the fallbacks), as the request builders make
 * them and as the wire mocks' media checks accept them: OpenAI's own endpoint takes a PDF as
 * Responses `input_file` (file_data data URL, filename) and Chat Completions `file` part; an
 * OpenAI-compatible server and a document without bytes get the text; an attachment block no
 * plugin expanded goes as its reference text to every provider.
 */
import { describe, expect, it } from 'vitest';
import type { AttachmentBlock, DocumentBlock, Message, ProviderRequest } from '../../plugin-api.js';
import { buildAnthropicRequest } from '../../plugins/provider-anthropic/request.js';
import { buildGeminiRequest } from '../../plugins/provider-gemini/request.js';
import { buildChatBody } from '../../plugins/provider-openai/chat-request.js';
import type { ResolvedConfig } from '../../plugins/provider-openai/config.js';
import { buildResponsesBody } from '../../plugins/provider-openai/responses-request.js';
import { anthropicMediaProblems, chatMediaProblems, geminiMediaProblems, responsesMediaProblems } from '../fixtures/mock-media.js';

const pdf: DocumentBlock = { type: 'document', mimeType: 'application/pdf', name: 'r.pdf', path: '/u/1/r.pdf', data: 'JVBERi0xLjQK', text: 'Quarterly report', pages: 1 };
const attachment: AttachmentBlock = { type: 'attachment', uploadId: '1', name: 'a "b".txt', path: '/u/1/a_b.txt', mediaType: 'text/plain', size: 12 };
const user = (content: Message['content']): Message => ({ id: 'u1', role: 'user', content, createdAt: 0 });
const request = (messages: Message[]): ProviderRequest => ({ model: 'm', system: [], messages, tools: [], options: {}, conversationId: 'c1' });

function config(official: boolean): ResolvedConfig {
  return { apiKey: 'k', baseUrl: official ? 'https://api.openai.com/v1' : 'http://localhost:1/v1', official, api: 'responses', store: false, webSearch: false, reasoningSummary: 'off', foreignThinking: 'drop' };
}

describe('documents per provider', () => {
  it('OpenAI Responses: input_file with a data URL and filename on the official endpoint, text elsewhere', () => {
    const body = buildResponsesBody(request([user([{ type: 'text', text: 'sum up' }, pdf])]), { providerId: 'codex', config: config(true), reasoning: false, search: false }) as { input: Array<{ content: unknown[] }> };
    expect(body.input[0]!.content).toContainEqual({ type: 'input_file', filename: 'r.pdf', file_data: `data:application/pdf;base64,${pdf.data}` });
    expect(responsesMediaProblems(body)).toEqual([]);
    const compat = buildResponsesBody(request([user([pdf])]), { providerId: 'codex', config: config(false), reasoning: false, search: false }) as { input: Array<{ content: unknown[] }> };
    expect(compat.input[0]!.content).toEqual([{ type: 'input_text', text: '<file name="r.pdf">\nQuarterly report\n</file>' }]);
  });

  it('OpenAI Chat Completions: a file part on the official endpoint, plain text elsewhere', () => {
    const body = buildChatBody(request([user([{ type: 'text', text: 'sum up' }, pdf])]), { providerId: 'codex', config: { ...config(true), api: 'chat' }, reasoning: false }) as { messages: Array<{ content: unknown }> };
    expect(body.messages[0]!.content).toEqual([
      { type: 'text', text: 'sum up' },
      { type: 'file', file: { filename: 'r.pdf', file_data: `data:application/pdf;base64,${pdf.data}` } },
    ]);
    expect(chatMediaProblems(body)).toEqual([]);
    const compat = buildChatBody(request([user([{ type: 'text', text: 'sum up' }, pdf])]), { providerId: 'local', config: { ...config(false), api: 'chat' }, reasoning: false }) as { messages: Array<{ content: unknown }> };
    expect(compat.messages[0]!.content).toBe('sum up\n\n<file name="r.pdf">\nQuarterly report\n</file>');
  });

  it('Anthropic: a document block (base64 source, title); Gemini: inlineData; both pass the mocks’ checks', () => {
    const a = buildAnthropicRequest(request([user([pdf])]), { cache: false } as never, 'claude_code', undefined);
    expect(a.messages[0]!.content[0]).toEqual({ type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: pdf.data }, title: 'r.pdf' });
    expect(anthropicMediaProblems(a)).toEqual([]);
    const g = buildGeminiRequest(request([user([pdf])]), {} as never, 'gemini', undefined) as { contents: Array<{ parts: unknown[] }> };
    expect(g.contents[0]!.parts).toEqual([{ inlineData: { mimeType: 'application/pdf', data: pdf.data } }]);
    expect(geminiMediaProblems(g)).toEqual([]);
  });

  it('a document without bytes goes as its text to every provider', () => {
    const { data: _d, ...noBytes } = pdf;
    const a = buildAnthropicRequest(request([user([noBytes])]), { cache: false } as never, 'claude_code', undefined);
    expect(a.messages[0]!.content[0]).toEqual({ type: 'text', text: '<file name="r.pdf">\nQuarterly report\n</file>' });
    const g = buildGeminiRequest(request([user([noBytes])]), {} as never, 'gemini', undefined) as { contents: Array<{ parts: unknown[] }> };
    expect(g.contents[0]!.parts).toEqual([{ text: '<file name="r.pdf">\nQuarterly report\n</file>' }]);
  });
});

describe('an attachment nobody expanded', () => {
  const ref = /^<attachment name="a &quot;b&quot;\.txt" path="\/u\/1\/a_b\.txt" media-type="text\/plain" size="12">\nThe user attached this file \(12 B\)\. It is stored read-only at the path above: read it with the Read tool by that absolute path when you need it\.\n<\/attachment>$/;

  it('goes as its reference text, the name escaped, to Anthropic, OpenAI and Gemini', () => {
    const msgs = [user([{ type: 'text', text: 'see' }, attachment])];
    const a = buildAnthropicRequest(request(msgs), { cache: false } as never, 'claude_code', undefined);
    expect((a.messages[0]!.content[1] as unknown as { text: string }).text).toMatch(ref);
    const r = buildResponsesBody(request(msgs), { providerId: 'codex', config: config(true), reasoning: false, search: false }) as { input: Array<{ content: Array<{ text: string }> }> };
    expect(r.input[0]!.content[1]!.text).toMatch(ref);
    const c = buildChatBody(request(msgs), { providerId: 'codex', config: { ...config(true), api: 'chat' }, reasoning: false }) as { messages: Array<{ content: string }> };
    expect(c.messages[0]!.content.split('\n\n')[1]).toMatch(ref);
    const g = buildGeminiRequest(request(msgs), {} as never, 'gemini', undefined) as { contents: Array<{ parts: Array<{ text: string }> }> };
    expect(g.contents[0]!.parts[1]!.text).toMatch(ref);
  });
});
