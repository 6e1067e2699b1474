/**
 * One model round on the wire: the provider stream consumed with retries before any output, the
 * idle watchdog, coalesced progress saves, `message_update` projection, and the mid-stream
 * budget that stops a reply (without a tool call) which outgrows the context.
 */
import type { Logger, Message, MessageDelta, Provider, ProviderEvent, ProviderRequest, RequestContext, RuntimeErrorInfo, Settings } from '../plugin-api.js';
import { ProviderError } from './errors.js';
import type { SessionHooks } from './hooks.js';
import { MessageAssembler } from './message-assembler.js';
import { consumeProviderStream, retryDelayMs, type ConsumeOutcome } from './provider-call.js';
import type { ToolRegistry } from './registries.js';
import type { Session } from './sessions.js';
import { type EventInput, sleep } from './types.js';

/** What a round needs of its run. */
export interface RoundEnv {
  provider: Provider;
  model: string;
  session: Session;
  hooks: SessionHooks;
  tools: ToolRegistry;
  settings: Settings;
  logger: Logger;
  signal: AbortSignal;
  emit(e: EventInput): void;
  emitDelta(messageId: string, delta: MessageDelta): void;
}

/**
 * Stream one model round, with retries before any output and an idle watchdog. With
 * `replyChars`, a reply that streams more than that without starting a tool call is stopped
 * (`interrupted`) so the run can compact mid-stream.
 */
export async function streamRound(
  env: RoundEnv,
  request: ProviderRequest,
  ctx: RequestContext,
  messageId: string,
  replyChars: number | undefined,
): Promise<{ message: Message; failure?: RuntimeErrorInfo; interrupted?: boolean }> {
  const rt = env.settings.runtime;
  const provider = env.provider;
  for (let attempt = 1; ; attempt++) {
    const asm = new MessageAssembler(messageId, provider.id, env.model);
    const outcome = await consume(env, request, ctx, asm, replyChars);
    const message = asm.snapshot(!!outcome.error || !!outcome.stopped || env.signal.aborted);
    if (env.signal.aborted) {
      message.stopReason = 'aborted';
      return { message };
    }
    if (outcome.stopped) {
      message.meta = { ...message.meta, partial: true, interrupted: 'compaction' };
      return { message, interrupted: true };
    }
    if (!outcome.error) return { message };
    const err = outcome.error;
    const delay = retryDelayMs(err, attempt, asm.hasOutput, rt);
    if (delay !== undefined) {
      env.emit({ type: 'notice', payload: { kind: 'retry', attempt, delayMs: Math.round(delay), message: err.message, ...(err.status ? { status: err.status } : {}) } });
      await sleep(delay, env.signal);
      if (env.signal.aborted) {
        message.stopReason = 'aborted';
        return { message };
      }
      continue;
    }
    message.stopReason = 'error';
    message.errorMessage = err.message;
    const failure = new ProviderError(`${provider.displayName}: ${err.message}`, {
      plugin: undefined,
      details: { provider: provider.id, code: err.code, ...(err.status ? { status: err.status } : {}), partial: asm.hasOutput, providerMessage: err.message },
    }).toInfo();
    return { message, failure };
  }
}

async function consume(env: RoundEnv, request: ProviderRequest, ctx: RequestContext, asm: MessageAssembler, replyChars: number | undefined): Promise<ConsumeOutcome> {
  const hooks = env.hooks;
  const idleMs = env.settings.runtime?.streamIdleTimeoutMs ?? 120_000;
  const persistEvery = env.settings.runtime?.persistIntervalMs ?? 250;
  let lastSave = Date.now();
  let saving: Promise<unknown> = Promise.resolve();
  const session = env.session;
  // A progress save is due at a block end or after persistIntervalMs, and runs on the next
  // macrotask: a stream still arriving gets saved between its chunks, while a round that ends
  // first (a fast reply, a tool call) is committed once, by saveRound, and never twice.
  let due: NodeJS.Timeout | undefined;
  const save = () => {
    due = undefined;
    lastSave = Date.now();
    const snap = asm.snapshot(true);
    saving = saving.then(() => hooks.saveProgress.promise(snap, session.info())).catch((err) => env.logger.error('saving progress failed', err));
  };
  const persist = hooks.saveProgress.isUsed();
  const notifyProvider = hooks.providerEvent.isUsed();
  // Characters streamed so far, against the mid-stream budget; a tool call lifts the limit
  // (a call cannot be cut in half, and its results go through the post-tool check).
  let budget = replyChars;
  const outcome = await consumeProviderStream(env.provider, request, {
    signal: env.signal,
    idleMs,
    hasOutput: () => asm.hasOutput,
    onEvent: (ev: ProviderEvent) => {
      asm.apply(ev);
      if (notifyProvider) hooks.providerEvent.call(ev, ctx);
      forward(env, ev, asm);
      if (budget !== undefined) {
        if (ev.type === 'block_start' && ev.block.type === 'tool_call') budget = undefined;
        else if (ev.type === 'text_delta' || ev.type === 'thinking_delta') budget -= ev.text.length;
        if (budget !== undefined && budget < 0) return true;
      }
      if (persist && !due && ev.type !== 'error' && (ev.type === 'block_end' || Date.now() - lastSave >= persistEvery)) due = setTimeout(save, 0);
      return false;
    },
  });
  clearTimeout(due);
  await saving;
  return outcome;
}

/** Project provider events onto `message_update` deltas. */
function forward(env: RoundEnv, ev: ProviderEvent, asm: MessageAssembler): void {
  const messageId = asm.messageId;
  switch (ev.type) {
    case 'text_delta':
      env.emitDelta(messageId, { kind: 'text', index: ev.index, text: ev.text });
      break;
    case 'notice':
      env.emit({ type: 'notice', payload: { ...ev.details, kind: ev.kind ?? 'provider', message: ev.message, provider: env.provider.id } });
      break;
    case 'thinking_delta':
      env.emitDelta(messageId, { kind: 'thinking', index: ev.index, text: ev.text });
      break;
    case 'block_start':
      if (ev.block.type === 'tool_call' && !hidden(env, ev.block.name))
        env.emitDelta(messageId, { kind: 'tool_call_start', index: ev.index, id: ev.block.id, name: ev.block.name });
      break;
    case 'tool_input_delta': {
      const name = asm.toolNameAt(ev.index);
      if (!name || !hidden(env, name)) env.emitDelta(messageId, { kind: 'tool_input', index: ev.index, json: ev.json });
      break;
    }
    case 'block_end':
      if (ev.block.type !== 'tool_call' || !hidden(env, ev.block.name)) env.emitDelta(messageId, { kind: 'block', index: ev.index, block: ev.block });
      break;
  }
}

function hidden(env: RoundEnv, toolName: string): boolean {
return !!env.tools.get(toolName)?.tool.hideArgumentDeltas;
}
