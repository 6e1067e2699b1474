// A provider plugin: a model that asks for the weather, then for the umbrella advice, then
// answers with both results. A real one calls its API in `stream` and translates the reply.
import type { Plugin, ProviderEvent, ProviderRequest, ToolResultBlock } from 'liveagent/plugin-api';

async function* reply(request: ProviderRequest): AsyncGenerator<ProviderEvent> {
  const results = request.messages.flatMap((m) => m.content).filter((b): b is ToolResultBlock => b.type === 'tool_result');
  const next = ['weather', 'umbrella'][results.length];
  if (next) {
    const input = { city: 'Oslo' };
    yield { type: 'block_start', index: 0, block: { type: 'tool_call', id: `call-${next}`, name: next } };
    yield { type: 'tool_input_delta', index: 0, json: JSON.stringify(input) };
    yield { type: 'block_end', index: 0, block: { type: 'tool_call', id: `call-${next}`, name: next, input } };
    yield { type: 'done', stopReason: 'tool_use' };
    return;
  }
  const text = results.map((r) => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('')).join(' ');
  yield { type: 'block_start', index: 0, block: { type: 'text' } };
  yield { type: 'text_delta', index: 0, text };
  yield { type: 'block_end', index: 0, block: { type: 'text', text } };
  yield { type: 'usage', usage: { inputTokens: 10, outputTokens: text.length } };
  yield { type: 'done', stopReason: 'end' };
}

export default {
  name: 'acme-scripted',
  apply(ctx) {
    ctx.registerProvider({
      id: 'scripted',
      displayName: 'Scripted model',
      defaultModel: 'scripted-1',
      isConfigured: () => true,
      // Never throws: a real provider turns failures into one `error` event.
      stream: (request) => reply(request),
    });
  },
} satisfies Plugin;
