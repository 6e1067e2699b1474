/**
 * Builds the assistant message from normalized provider events: each is the `message_update`
 * delta the run emits for it, folded by the one delta fold (message-fold.ts) the gateway and the
 * WebUI use too, plus the round's usage, stop reason and response id.
 */
import type { JsonObject, Message, MessageDelta, ProviderEvent, StopReason, Usage } from '../plugin-api.js';
import { MessageFold } from './message-fold.js';

export class MessageAssembler {
  private fold = new MessageFold();
  usage: Usage | undefined;
  stopReason: StopReason | undefined;
  responseId: string | undefined;
  /** True once any content arrived: a retry after this point could duplicate persisted text. */
  hasOutput = false;

  constructor(readonly messageId: string, readonly provider: string, readonly model: string, readonly createdAt = Date.now()) {}

  apply(ev: ProviderEvent): void {
    const delta = deltaOf(ev);
    if (delta) {
      this.fold.apply(delta);
      if (delta.kind !== 'tool_input') this.hasOutput = true;
      return;
    }
    if (ev.type === 'usage') this.usage = mergeUsage(this.usage, ev.usage);
    else if (ev.type === 'done') {
      this.stopReason = ev.stopReason;
      this.responseId = ev.responseId;
    }
  }

  /** The tool call name at a block index (for hiding argument deltas). */
  toolNameAt(index: number): string | undefined {
    return this.fold.toolName(index);
  }

  /**
   * The message as it stands. With `partial`, unfinished blocks are included as far as they got
   * (text and thinking); unfinished tool calls are left out since they cannot be executed or
   * replayed validly. Thinking without its signature cannot be sent back; it is kept for the
   * user, marked with the provider and unsigned.
   */
  snapshot(partial: boolean): Message {
    const msg: Message = {
      id: this.messageId,
      role: 'assistant',
      content: this.fold.content({ toolCalls: 'drop', thinkingProvider: this.provider }),
      createdAt: this.createdAt,
      provider: this.provider,
      model: this.model,
    };
    if (this.usage) msg.usage = this.usage;
    if (this.stopReason) msg.stopReason = this.stopReason;
    if (partial || this.fold.unfinished()) msg.meta = { partial: true } satisfies JsonObject;
    return msg;
  }
}

/** The delta a content event folds as (a text or thinking block_start opens an empty block). */
function deltaOf(ev: ProviderEvent): MessageDelta | undefined {
  switch (ev.type) {
    case 'block_start':
      return ev.block.type === 'tool_call' ? { kind: 'tool_call_start', index: ev.index, id: ev.block.id, name: ev.block.name } : { kind: ev.block.type, index: ev.index, text: '' };
    case 'text_delta':
      return { kind: 'text', index: ev.index, text: ev.text };
    case 'thinking_delta':
      return { kind: 'thinking', index: ev.index, text: ev.text };
    case 'tool_input_delta':
      return { kind: 'tool_input', index: ev.index, json: ev.json };
    case 'block_end':
      return { kind: 'block', index: ev.index, block: ev.block };
    default:
      return undefined;
  }
}

export function mergeUsage(a: Usage | undefined, b: Usage): Usage {
  if (!a) return { ...b };
  return {
    inputTokens: b.inputTokens || a.inputTokens,
    outputTokens: b.outputTokens || a.outputTokens,
    cacheReadTokens: b.cacheReadTokens ?? a.cacheReadTokens,
    cacheWriteTokens: b.cacheWriteTokens ?? a.cacheWriteTokens,
    reasoningTokens: b.reasoningTokens ?? a.reasoningTokens,
  };
}

export function addUsage(a: Usage, b: Usage | undefined): Usage {
  if (!b) return a;
  const sum: Usage = {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    cacheReadTokens: (a.cacheReadTokens ?? 0) + (b.cacheReadTokens ?? 0),
    cacheWriteTokens: (a.cacheWriteTokens ?? 0) + (b.cacheWriteTokens ?? 0),
    reasoningTokens: (a.reasoningTokens ?? 0) + (b.reasoningTokens ?? 0),
  };
  // The cost covers the rounds whose model has prices (Usage.costUsd); none priced: no cost.
  if (a.costUsd !== undefined || b.costUsd !== undefined) sum.costUsd = Math.round(((a.costUsd ?? 0) + (b.costUsd ?? 0)) * 1e8) / 1e8;
  return sum;
}
