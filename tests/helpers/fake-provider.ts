/**
 * A scripted in-process provider for kernel tests: each round answers from a list of steps
 * (text, thinking, tool calls, errors), emitting the normalized events a real provider would.
 */
import type { ContentBlock, Provider, ProviderEvent, ProviderRequest, StopReason } from '../../plugin-api.js';

export type FakeStep =
  | { text?: string | string[]; thinking?: string; toolCalls?: Array<{ id: string; name: string; input: Record<string, unknown> }>; stopReason?: StopReason }
  | { error: { message: string; code?: string; retryable?: boolean; status?: number; retryAfterMs?: number }; afterText?: string }
  | { hang: true; afterText?: string };

export function fakeProvider(steps: FakeStep[] | ((req: ProviderRequest, i: number) => FakeStep), id = 'fake'): Provider & { requests: ProviderRequest[] } {
  const requests: ProviderRequest[] = [];
  return {
    id,
    displayName: `Fake ${id}`,
    defaultModel: 'fake-1',
    requests,
    isConfigured: () => true,
    async *stream(request, signal): AsyncGenerator<ProviderEvent> {
      requests.push(structuredClone(request));
      const i = requests.length - 1;
      const step = typeof steps === 'function' ? steps(request, i) : (steps[i] ?? { text: 'done' });
      let index = 0;
      if ('error' in step || 'hang' in step) {
        if (step.afterText) {
          yield { type: 'block_start', index: 0, block: { type: 'text' } };
          yield { type: 'text_delta', index: 0, text: step.afterText };
        }
        if ('hang' in step) {
          await new Promise((r) => signal.addEventListener('abort', r, { once: true }));
          yield { type: 'error', error: { code: 'aborted', message: 'aborted', retryable: false } };
          return;
        }
        yield { type: 'error', error: { code: step.error.code ?? 'server', message: step.error.message, retryable: step.error.retryable ?? false, ...(step.error.status ? { status: step.error.status } : {}), ...(step.error.retryAfterMs !== undefined ? { retryAfterMs: step.error.retryAfterMs } : {}) } };
        return;
      }
      if (step.thinking) {
        yield { type: 'block_start', index, block: { type: 'thinking' } };
        yield { type: 'thinking_delta', index, text: step.thinking };
        yield { type: 'block_end', index, block: { type: 'thinking', thinking: step.thinking, signature: 'sig', provider: id } };
        index++;
      }
      if (step.text !== undefined) {
        const pieces = Array.isArray(step.text) ? step.text : [step.text];
        yield { type: 'block_start', index, block: { type: 'text' } };
        for (const p of pieces) {
          if (signal.aborted) return;
          yield { type: 'text_delta', index, text: p };
          await new Promise((r) => setImmediate(r));
        }
        yield { type: 'block_end', index, block: { type: 'text', text: pieces.join('') } };
        index++;
      }
      for (const call of step.toolCalls ?? []) {
        yield { type: 'block_start', index, block: { type: 'tool_call', id: call.id, name: call.name } };
        const json = JSON.stringify(call.input);
        yield { type: 'tool_input_delta', index, json: json.slice(0, 3) };
        yield { type: 'tool_input_delta', index, json: json.slice(3) };
        yield { type: 'block_end', index, block: { type: 'tool_call', id: call.id, name: call.name, input: call.input as never } as ContentBlock };
        index++;
      }
      yield { type: 'usage', usage: { inputTokens: 10, outputTokens: 5 } };
      yield { type: 'done', stopReason: step.stopReason ?? (step.toolCalls?.length ? 'tool_use' : 'end') };
    },
  };
}
