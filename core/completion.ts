/**
 * `runtime.complete()`: one model call outside any run, for plugins that need a side answer (a
 * compaction summary, a title, memory extraction). Same retry policy, idle watchdog and abort
 * as a run's rounds; no tools, no hooks, no history, no events.
 */
import { z } from 'zod';
import type { CompletionOptions, CompletionResult, Provider, Settings } from '../plugin-api.js';
import { CancelledError, ProviderError, UsageError } from './errors.js';
import { newConversationId, newMessageId } from './ids.js';
import { costOf, modelFacts, modelsOf } from './model-facts.js';
import { MessageAssembler } from './message-assembler.js';
import { consumeProviderStream, requestOptions, retryDelayMs } from './provider-call.js';
import { sleep } from './types.js';

const OptionsSchema = z.object({
  provider: z.string().min(1),
  model: z.string().min(1).optional(),
  system: z.array(z.object({ id: z.string(), text: z.string() }).passthrough()).optional(),
  messages: z.array(z.object({ role: z.enum(['user', 'assistant', 'tool']), content: z.array(z.object({ type: z.string() }).passthrough()) }).passthrough()).min(1, 'must hold at least one message'),
  maxOutputTokens: z.number().int().positive().optional(),
  conversationId: z.string().min(1).optional(),
  lean: z.boolean().optional(),
});

export interface CompletionDeps {
  provider(id: string): Provider | undefined;
  settings(): Settings;
}

export async function complete(deps: CompletionDeps, options: CompletionOptions): Promise<CompletionResult> {
  const parsed = OptionsSchema.safeParse(options);
  if (!parsed.success) {
    const i = parsed.error.issues[0]!;
    throw new UsageError(`runtime.complete: ${['options', ...i.path.map(String)].join('.')}: ${i.message}`);
  }
  const provider = deps.provider(options.provider);
  if (!provider) throw new UsageError(`runtime.complete: unknown provider "${options.provider}"`);
  const settings = deps.settings();
  const model = options.model ?? provider.defaultModel;
  const signal = options.signal ?? new AbortController().signal;
  const request = {
    model,
    system: options.system ?? [],
    messages: options.messages,
    tools: [],
    options: requestOptions(settings.providers?.[provider.id]),
    conversationId: options.conversationId ?? newConversationId(),
    ...(options.maxOutputTokens ? { maxOutputTokens: options.maxOutputTokens } : {}),
    ...(options.lean ? { lean: true } : {}),
  };
  const idleMs = settings.runtime?.streamIdleTimeoutMs ?? 120_000;
  for (let attempt = 1; ; attempt++) {
    const asm = new MessageAssembler(newMessageId(), provider.id, model);
    const outcome = await consumeProviderStream(provider, request, { signal, idleMs, hasOutput: () => asm.hasOutput, onEvent: (ev) => void asm.apply(ev) });
    if (signal.aborted) throw new CancelledError('the completion was cancelled');
    if (!outcome.error) {
      const message = asm.snapshot(false);
      if (message.usage) {
        const cost = costOf(modelFacts(modelsOf(provider, settings), model).price, message.usage);
        if (cost !== undefined) message.usage.costUsd = cost;
      }
      const text = message.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
      return { message, text, ...(message.usage ? { usage: message.usage } : {}) };
    }
    const err = outcome.error;
    const delay = retryDelayMs(err, attempt, asm.hasOutput, settings.runtime);
    if (delay === undefined) {
      throw new ProviderError(`${provider.displayName}: ${err.message}`, { details: { provider: provider.id, code: err.code, ...(err.status ? { status: err.status } : {}) } });
    }
    await sleep(delay, signal);
    if (signal.aborted) throw new CancelledError('the completion was cancelled');
  }
}
