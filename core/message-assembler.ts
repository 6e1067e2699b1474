/**
 * Builds the assistant message from normalized provider events. Deltas are appended to arrays
 * and joined only when a snapshot is needed (block end, coalesced persistence, message end):
 * `text +=` into a growing message would make long replies quadratic.
 */
import type { ContentBlock, JsonObject, Message, ProviderEvent, StopReason, Usage } from '../plugin-api.js';

type Slot =
  | { kind: 'text'; parts: string[]; final?: ContentBlock }
  | { kind: 'thinking'; parts: string[]; final?: ContentBlock }
  | { kind: 'tool_call'; id: string; name: string; parts: string[]; final?: ContentBlock }
  | { kind: 'final'; final: ContentBlock };

export class MessageAssembler {
  private slots = new Map<number, Slot>();
  usage: Usage | undefined;
  stopReason: StopReason | undefined;
  responseId: string | undefined;
  /** True once any content arrived: a retry after this point could duplicate persisted text. */
  hasOutput = false;

  constructor(readonly messageId: string, readonly provider: string, readonly model: string, readonly createdAt = Date.now()) {}

  apply(ev: ProviderEvent): void {
    switch (ev.type) {
      case 'block_start': {
        const b = ev.block;
        this.slots.set(ev.index, b.type === 'tool_call' ? { kind: 'tool_call', id: b.id, name: b.name, parts: [] } : { kind: b.type, parts: [] });
        this.hasOutput = true;
        break;
      }
      case 'text_delta':
        this.slot(ev.index, 'text').parts.push(ev.text);
        this.hasOutput = true;
        break;
      case 'thinking_delta':
        this.slot(ev.index, 'thinking').parts.push(ev.text);
        this.hasOutput = true;
        break;
      case 'tool_input_delta': {
        const s = this.slots.get(ev.index);
        if (s && s.kind === 'tool_call') s.parts.push(ev.json);
        break;
      }
      case 'block_end': {
        const s = this.slots.get(ev.index);
        if (s !== undefined && s.kind !== 'final') s.final = ev.block;
        else this.slots.set(ev.index, { kind: 'final', final: ev.block });
        this.hasOutput = true;
        break;
      }
      case 'usage':
        this.usage = mergeUsage(this.usage, ev.usage);
        break;
      case 'done':
        this.stopReason = ev.stopReason;
        this.responseId = ev.responseId;
        break;
      case 'error':
        break;
    }
  }

  private slot(index: number, kind: 'text' | 'thinking'): { parts: string[] } {
    const s = this.slots.get(index);
    if (s && (s.kind === 'text' || s.kind === 'thinking')) return s;
    const fresh = { kind, parts: [] as string[] };
    this.slots.set(index, fresh);
    return fresh;
  }

  /** The tool call name at a block index (for hiding argument deltas). */
  toolNameAt(index: number): string | undefined {
    const s = this.slots.get(index);
    return s && s.kind === 'tool_call' ? s.name : undefined;
  }

  /**
   * The message as it stands. With `partial`, unfinished blocks are included as far as they got
   * (text and thinking); unfinished tool calls are left out since they cannot be executed or
   * replayed validly.
   */
  snapshot(partial: boolean): Message {
    const content: ContentBlock[] = [];
    let unfinished = false;
    for (const index of [...this.slots.keys()].sort((a, b) => a - b)) {
      const s = this.slots.get(index)!;
      if (s.final) {
        content.push(s.final);
        continue;
      }
      unfinished = true;
      if (s.kind === 'text') content.push({ type: 'text', text: s.parts.join('') });
      else if (s.kind === 'thinking') {
        const text = s.parts.join('');
        // Thinking without its signature cannot be sent back; keep it for the user, marked unsigned.
        if (text) content.push({ type: 'thinking', thinking: text, provider: this.provider });
      }
    }
    const msg: Message = {
      id: this.messageId,
      role: 'assistant',
      content,
      createdAt: this.createdAt,
      provider: this.provider,
      model: this.model,
    };
    if (this.usage) msg.usage = this.usage;
    if (this.stopReason) msg.stopReason = this.stopReason;
    if (partial || unfinished) msg.meta = { partial: true } satisfies JsonObject;
    return msg;
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
