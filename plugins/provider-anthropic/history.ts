/**
 * Our Message[] → Anthropic `messages`. The API wants strictly alternating user/assistant turns,
 * every tool_use answered by a tool_result at the start of the next user turn, and no unsigned
 * thinking, so the conversion also repairs what a stored history can hold: merged same-role
 * turns, dropped orphan results, synthetic results for unanswered calls.
 *
 * Thinking rule: thinking blocks travel back only to the provider that produced them, signed
 * (`signature`) or redacted (`data`). Thinking from another provider, and our own unsigned
 * thinking (a round cut short), is DROPPED, not turned into text: Anthropic rejects unsigned
 * thinking, and replaying another model's reasoning as visible text invites the model to
 * imitate it in its answer.
 */
import type { ContentBlock, DocumentBlock, ImageBlock, Message, ToolResultBlock } from '../../plugin-api.js';
import { attachmentReference, documentFallback } from '../../lib/provider-shared/attachments.js';
import { foreignThinking, normalizeToolCallId, toolResultText } from '../../lib/provider-shared/history.js';
import { WindowPrefix } from '../../lib/provider-shared/window-prefix.js';

/** A wire content block (the SDK's ContentBlockParam, kept loose: raw provider blocks travel back as they came). */
export type WireBlock = { type: string; [key: string]: unknown };
export interface WireMessage {
  role: 'user' | 'assistant';
  content: WireBlock[];
}

const THINKING_AS_TEXT = false;
export const INTERRUPTED_TOOL_RESULT = 'Tool call was interrupted before it returned a result.';
const CONTINUATION_TEXT = '(continuing the conversation)';

function imageBlock(b: ImageBlock): WireBlock {
  if (b.data) return { type: 'image', source: { type: 'base64', media_type: b.mimeType, data: b.data } };
  // The bytes were dropped by context policy; tell the model an image was here.
  return { type: 'text', text: `[image${b.path ? ` ${b.path}` : ''} omitted from context]` };
}

/** A PDF as a `document` block (base64 source); without its bytes, its text or a line saying where it is. */
function documentBlock(b: DocumentBlock): WireBlock {
  if (b.data && b.mimeType === 'application/pdf') {
    return { type: 'document', source: { type: 'base64', media_type: b.mimeType, data: b.data }, ...(b.name ? { title: b.name } : {}) };
  }
  return { type: 'text', text: documentFallback(b).text };
}

function toolResultBlock(b: ToolResultBlock): WireBlock {
  const hasImage = b.content.some((c) => c.type === 'image');
  let content: string | WireBlock[];
  if (!hasImage) {
    content = toolResultText(b.content) || (b.isError ? 'Error (no message)' : '(no output)');
  } else {
    content = b.content.flatMap((c): WireBlock[] => (c.type === 'image' ? [imageBlock(c)] : c.text ? [{ type: 'text', text: c.text }] : []));
  }
  const out: WireBlock = { type: 'tool_result', tool_use_id: normalizeToolCallId(b.toolCallId), content };
  if (b.isError) out.is_error = true;
  return out;
}

function userBlocks(content: ContentBlock[]): WireBlock[] {
  const out: WireBlock[] = [];
  for (const b of content) {
    if (b.type === 'text') {
      if (b.text) out.push({ type: 'text', text: b.text });
    } else if (b.type === 'image') out.push(imageBlock(b));
    else if (b.type === 'document') out.push(documentBlock(b));
    // Not expanded (no uploads plugin): the model still learns the file and where it is.
    else if (b.type === 'attachment') out.push({ type: 'text', text: attachmentReference(b) });
    else if (b.type === 'tool_result') out.push(toolResultBlock(b));
  }
  return out;
}

function assistantBlocks(content: ContentBlock[], providerId: string): WireBlock[] {
  const out: WireBlock[] = [];
  for (const b of content) {
    switch (b.type) {
      case 'text':
        if (b.text) out.push({ type: 'text', text: b.text });
        break;
      case 'thinking': {
        const kept = foreignThinking(b, providerId, THINKING_AS_TEXT);
        if (!kept) break;
        if (kept.type === 'text') out.push({ type: 'text', text: kept.text });
        else if (b.redacted) {
          if (b.data) out.push({ type: 'redacted_thinking', data: b.data });
        } else if (b.signature) out.push({ type: 'thinking', thinking: b.thinking, signature: b.signature });
        break;
      }
      case 'tool_call':
        out.push({ type: 'tool_use', id: normalizeToolCallId(b.id), name: b.name, input: b.input });
        break;
      case 'hosted_search': {
        // Our own search goes back as the raw server_tool_use + web_search_tool_result pair
        // (encrypted_content included); another provider's search cannot be replayed here.
        const blocks = b.provider === providerId ? b.providerData?.blocks : undefined;
        if (Array.isArray(blocks)) for (const raw of blocks) if (raw && typeof raw === 'object' && !Array.isArray(raw)) out.push(raw as WireBlock);
        break;
      }
    }
  }
  return out;
}

/** Builds the alternating list, pairing tool_use with tool_result as it goes. */
class TurnBuilder {
  readonly messages: WireMessage[] = [];
  /** tool_use ids of the latest assistant turn not answered yet. */
  private pending = new Set<string>();

  user(blocks: WireBlock[]): void {
    const results: WireBlock[] = [];
    const rest: WireBlock[] = [];
    for (const b of blocks) {
      if (b.type !== 'tool_result') rest.push(b);
      // A result whose call is not in the previous assistant turn is an orphan the API would refuse.
      else if (this.pending.delete(b.tool_use_id as string)) results.push(b);
    }
    if (!results.length && !rest.length) return;
    const last = this.messages.at(-1);
    if (last?.role === 'user') {
      insertResults(last, results);
      last.content.push(...rest);
    } else this.messages.push({ role: 'user', content: [...results, ...rest] });
  }

  assistant(blocks: WireBlock[]): void {
    if (!blocks.length) return;
    this.answerPending();
    const last = this.messages.at(-1);
    if (last?.role === 'assistant') last.content.push(...blocks);
    // A copy: `blocks` may be the cached conversion of a message, and a later merge pushes here.
    else this.messages.push({ role: 'assistant', content: [...blocks] });
    for (const b of blocks) if (b.type === 'tool_use') this.pending.add(b.id as string);
  }

  /** Calls nobody answered get an error result, placed where the API expects it. */
  answerPending(): void {
    if (!this.pending.size) return;
    const synthetic = [...this.pending].map((id): WireBlock => ({ type: 'tool_result', tool_use_id: id, content: INTERRUPTED_TOOL_RESULT, is_error: true }));
    this.pending.clear();
    const last = this.messages.at(-1);
    if (last?.role === 'user') insertResults(last, synthetic);
    else this.messages.push({ role: 'user', content: synthetic });
  }

  /**
   * The finished list without ending this builder: what `answerPending` would add goes into
   * copies, so the builder can take the next round's messages where it stopped.
   */
  result(): WireMessage[] {
    const out = this.messages.slice();
    if (this.pending.size) {
      const synthetic = [...this.pending].map((id): WireBlock => ({ type: 'tool_result', tool_use_id: id, content: INTERRUPTED_TOOL_RESULT, is_error: true }));
      const last = out.at(-1);
      if (last?.role === 'user') {
        const copy = { role: last.role, content: last.content.slice() };
        insertResults(copy, synthetic);
        out[out.length - 1] = copy;
      } else out.push({ role: 'user', content: synthetic });
    }
    return out;
  }
}

/** tool_result blocks must lead a user turn: insert after the existing ones. */
function insertResults(msg: WireMessage, results: WireBlock[]): void {
  if (!results.length) return;
  let at = 0;
  while (at < msg.content.length && msg.content[at]!.type === 'tool_result') at++;
  msg.content.splice(at, 0, ...results);
}

/**
 * Each message's blocks, converted once. A tool loop sends the same message objects every round
 * (the window only grows), so without this each request would convert the whole history again.
 * Keyed by the message object: a changed message (a pruned result) is a new object, and entries
 * go with their messages.
 */
const converted = new WeakMap<Message, { providerId: string; blocks: WireBlock[] }>();

function blocksOf(m: Message, providerId: string): WireBlock[] {
  const hit = converted.get(m);
  if (hit && hit.providerId === providerId) return hit.blocks;
  const blocks = m.role === 'assistant' ? assistantBlocks(m.content, providerId) : userBlocks(m.content);
  converted.set(m, { providerId, blocks });
  return blocks;
}

/** Where the last conversion of a window stopped (see WindowPrefix): only new messages are converted. */
const progress = new WindowPrefix<TurnBuilder>(
  () => new TurnBuilder(),
  (builder, m, _i, providerId) => builder[m.role === 'assistant' ? 'assistant' : 'user'](blocksOf(m, providerId)),
);

/** Convert the history. `providerId` decides whose thinking and searches may travel back. */
export function toAnthropicMessages(messages: Message[], providerId: string): WireMessage[] {
  let end = messages.length;
  const tail = messages[end - 1];
  // A trailing assistant turn would be read as a prefill; one cut short (error, abort) is not meant as one.
  if (tail?.role === 'assistant' && (tail.meta?.partial === true || tail.stopReason === 'error' || tail.stopReason === 'aborted')) end--;
  const out = progress.advance(messages, end, providerId).result();
  if (out[0]?.role === 'assistant') out.unshift({ role: 'user', content: [{ type: 'text', text: CONTINUATION_TEXT }] });
  return out;
}

/**
 * With thinking on, the API requires the assistant turn that made the pending tool calls to start
 * with a thinking block. When it does not (it came from another provider, or thinking was off
 * then), thinking must stay off until the tool loop ends.
 */
export function thinkingAllowed(messages: WireMessage[]): boolean {
  const last = messages.at(-1);
  if (last?.role !== 'user' || last.content[0]?.type !== 'tool_result') return true;
  const prev = messages.at(-2);
  if (prev?.role !== 'assistant') return true;
  const first = prev.content[0]?.type;
  return first === 'thinking' || first === 'redacted_thinking';
}
