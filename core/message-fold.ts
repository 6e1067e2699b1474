/**
 * The one fold of `message_update` deltas into an assistant message's content, shared by the
 * kernel (the message it stores: core/message-assembler.ts), the gateway (the partial reply a
 * reconnecting client gets) and the WebUI (the reply being streamed). Pure: no I/O, types only.
 *
 * Deltas go into arrays joined only when a block is read, so a long reply stays linear
 * (performance-notes: no `text +=` into a growing message that is read per delta).
 */
import type { ContentBlock, FoldReadOptions, JsonObject, MessageDelta, MessageFold as MessageFoldApi } from '../plugin-api.js';

type Block =
  | { type: 'text'; parts: string[]; final?: ContentBlock }
  | { type: 'thinking'; parts: string[]; final?: ContentBlock }
  | { type: 'tool_call'; id: string; name: string; parts: string[]; final?: ContentBlock }
  | { type: 'final'; final: ContentBlock };

export class MessageFold implements MessageFoldApi {
  /** By block index (an array: indices are small and dense, and this is touched on every delta). */
  private blocks: Array<Block | undefined> = [];

  /** Start from content already shown (a snapshot's partial reply): later deltas continue it. */
  static from(content: readonly ContentBlock[]): MessageFold {
    const fold = new MessageFold();
    content.forEach((b, i) => {
      if (b.type === 'text') fold.blocks[i] = { type: 'text', parts: [b.text] };
      else if (b.type === 'thinking') fold.blocks[i] = { type: 'thinking', parts: [b.thinking] };
      else if (b.type === 'tool_call') fold.blocks[i] = { type: 'tool_call', id: b.id, name: b.name, parts: [] };
      else fold.blocks[i] = { type: 'final', final: b };
    });
    return fold;
  }

  apply(delta: MessageDelta): void {
    const i = delta.index;
    const b = this.blocks[i];
    switch (delta.kind) {
      case 'text':
      case 'thinking':
        if (b && b.type === delta.kind) b.parts.push(delta.text);
        else this.blocks[i] = delta.kind === 'text' ? { type: 'text', parts: [delta.text] } : { type: 'thinking', parts: [delta.text] };
        break;
      case 'tool_call_start':
        this.blocks[i] = { type: 'tool_call', id: delta.id, name: delta.name, parts: [] };
        break;
      case 'tool_input':
        if (b && b.type === 'tool_call') b.parts.push(delta.json);
        break;
      case 'block':
        if (b && b.type !== 'final') b.final = delta.block;
        else this.blocks[i] = { type: 'final', final: delta.block };
        break;
    }
  }

  /** The tool call's name at a block index, if a tool call is there. */
  toolName(index: number): string | undefined {
    const b = this.blocks[index];
    return b?.type === 'tool_call' ? b.name : undefined;
  }

  /** The argument JSON streamed so far for the tool call at a block index ('' before any). */
  toolInput(index: number): string | undefined {
    const b = this.blocks[index];
    return b?.type === 'tool_call' ? join(b.parts) : undefined;
  }

  /** Some block is not finished yet. */
  unfinished(): boolean {
    return this.blocks.some((b) => b !== undefined && b.type !== 'final' && !b.final);
  }

  /** The block at an index as it stands; undefined when nothing is there or it reads as left out. */
  block(index: number, options: FoldReadOptions = {}): ContentBlock | undefined {
    const b = this.blocks[index];
    if (!b) return undefined;
    if (b.final) return b.final;
    if (b.type === 'final') return b.final;
    if (b.type === 'text') return { type: 'text', text: join(b.parts) };
    if (b.type === 'thinking') {
      const thinking = join(b.parts);
      if (options.thinkingProvider === undefined) return { type: 'thinking', thinking };
      return thinking ? { type: 'thinking', thinking, provider: options.thinkingProvider } : undefined;
    }
    if (b.type !== 'tool_call' || options.toolCalls === 'drop') return undefined;
    return { type: 'tool_call', id: b.id, name: b.name, input: parseInput(join(b.parts)) };
  }

  /** Every block in index order (gaps and left-out blocks skipped). */
  content(options: FoldReadOptions = {}): ContentBlock[] {
    const out: ContentBlock[] = [];
    for (let i = 0; i < this.blocks.length; i++) {
      const b = this.block(i, options);
      if (b) out.push(b);
    }
    return out;
  }
}

/** Join and keep the result, so reading again after more deltas copies once, not per part. */
function join(parts: string[]): string {
  if (parts.length === 1) return parts[0]!;
  const s = parts.join('');
  parts.splice(0, parts.length, s);
  return s;
}

function parseInput(json: string): JsonObject {
  try {
    const v = JSON.parse(json) as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as JsonObject) : {};
  } catch {
    return {};
  }
}
