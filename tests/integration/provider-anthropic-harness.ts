/**
 * Shared by the provider-anthropic test files: a tracked mock server, a provider pointed at it,
 * a minimal request, and event collection. Not a test file itself.
 */
import type { Message, Provider, ProviderEvent, ProviderRequest } from '../../plugin-api.js';
import { createAnthropicProvider, type AnthropicProviderOptions } from '../../plugins/provider-anthropic/index.js';
import { startMockAnthropic, type AnthropicScript, type MockAnthropicServer } from '../fixtures/mock-anthropic.js';
import { collectAll, errorsOf, streamedText } from '../helpers/streams.js';

export const KEY = 'sk-ant-test-key';

const servers: MockAnthropicServer[] = [];

/** A mock that requires KEY; closed by `closeMocks` (call it in afterEach). */
export async function mock(script?: AnthropicScript): Promise<MockAnthropicServer> {
  const s = await startMockAnthropic({ apiKey: KEY, ...(script ? { script } : {}) });
  servers.push(s);
  return s;
}

export async function closeMocks(): Promise<void> {
  await Promise.all(servers.splice(0).map((s) => s.close()));
}

export function providerFor(server: MockAnthropicServer, extra: AnthropicProviderOptions = {}): Provider {
  return createAnthropicProvider({ apiKey: KEY, baseUrl: server.url, ...extra });
}

let seq = 0;
export function msg(role: Message['role'], content: Message['content'], extra: Partial<Message> = {}): Message {
  return { id: `m${++seq}`, role, content, createdAt: 0, ...extra };
}

export const userText = (text: string) => msg('user', [{ type: 'text', text }]);

export function request(extra: Partial<ProviderRequest> = {}): ProviderRequest {
  return {
    model: 'claude-sonnet-4-6',
    system: [{ id: 'base', text: 'You are a test assistant.' }],
    messages: [userText('Hello')],
    tools: [],
    options: {},
    conversationId: 'conv-test',
    ...extra,
  };
}

/** The stream's events, without `wire_request` (an observer's event: the body sent; see collectWire). */
export async function collect(provider: Provider, req: ProviderRequest = request(), signal: AbortSignal = new AbortController().signal): Promise<ProviderEvent[]> {
  return (await collectWire(provider, req, signal)).filter((e) => e.type !== 'wire_request');
}

export function collectWire(provider: Provider, req: ProviderRequest = request(), signal: AbortSignal = new AbortController().signal): Promise<ProviderEvent[]> {
  return collectAll(provider.stream(req, signal));
}

export { errorsOf, streamedText };
