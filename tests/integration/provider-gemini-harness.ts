/**
 * Shared by the provider-gemini test files: tracked mock servers, a provider pointed at one, a
 * minimal request, event collection, and a strict-mode-friendly reply script. Not a test file.
 */
import type { Message, Provider, ProviderEvent, ProviderRequest, ToolSpec } from '../../plugin-api.js';
import { createGeminiProvider, type GeminiProviderOptions } from '../../plugins/provider-gemini/index.js';
import { MOCK_GEMINI_KEY, startMockGemini, type GeminiChunk, type GeminiMockServer, type MockScript, type StartMockGeminiOptions } from '../fixtures/mock-gemini.js';
import { collectAll, errorsOf, streamedText } from '../helpers/streams.js';

export const KEY = MOCK_GEMINI_KEY;
export const MODEL = 'gemini-2.5-flash';

const servers: GeminiMockServer[] = [];

/** A mock that requires KEY; closed by `closeMocks` (call it in afterEach). */
export async function mock(script?: MockScript, extra: StartMockGeminiOptions = {}): Promise<GeminiMockServer> {
  const s = await startMockGemini({ ...(script ? { script } : {}), ...extra });
  servers.push(s);
  return s;
}

export async function closeMocks(): Promise<void> {
  await Promise.all(servers.splice(0).map((s) => s.close()));
}

export function providerFor(server: { url: string }, extra: GeminiProviderOptions = {}): Provider {
  return createGeminiProvider({ apiKey: KEY, baseUrl: server.url, ...extra });
}

let seq = 0;
export function msg(role: Message['role'], content: Message['content'], extra: Partial<Message> = {}): Message {
  return { id: `m${++seq}`, role, content, createdAt: 0, ...extra };
}

export const userText = (text: string) => msg('user', [{ type: 'text', text }]);

export function request(extra: Partial<ProviderRequest> = {}): ProviderRequest {
  return {
    model: MODEL,
    system: [{ id: 'base', text: 'You are a test assistant.' }],
    messages: [userText('Hello')],
    tools: [],
    options: {},
    conversationId: 'conv-test',
    ...extra,
  };
}

/** Tool specs declaring every function the chunks call (the mock's strict mode checks). */
export function toolsFor(chunks: GeminiChunk[]): ToolSpec[] {
  const names = new Set<string>();
  for (const c of chunks) for (const cand of c.candidates ?? []) for (const p of cand.content?.parts ?? []) if (p.functionCall) names.add(p.functionCall.name);
  return [...names].map((name) => ({ name, description: `${name} (test)`, inputSchema: { type: 'object', properties: { location: { type: 'string' } } } }));
}

/** The stream's events, without `wire_request` (an observer's event: the body sent; see collectWire). */
export async function collect(provider: Provider, req: ProviderRequest = request(), signal: AbortSignal = new AbortController().signal): Promise<ProviderEvent[]> {
  return (await collectWire(provider, req, signal)).filter((e) => e.type !== 'wire_request');
}

export function collectWire(provider: Provider, req: ProviderRequest = request(), signal: AbortSignal = new AbortController().signal): Promise<ProviderEvent[]> {
  return collectAll(provider.stream(req, signal));
}

export { errorsOf, streamedText };

/** Generated tool-call ids differ per run: replace them by their order of appearance. */
export function stableIds(events: ProviderEvent[]): ProviderEvent[] {
  const ids = new Map<string, string>();
  const fix = (id: string) => {
    if (!ids.has(id)) ids.set(id, `call_${ids.size + 1}`);
    return ids.get(id)!;
  };
  return events.map((e) => {
    if (e.type === 'block_start' && e.block.type === 'tool_call') return { ...e, block: { ...e.block, id: fix(e.block.id) } };
    if (e.type === 'block_end' && e.block.type === 'tool_call') return { ...e, block: { ...e.block, id: fix(e.block.id) } };
    return e;
  });
}
