/**
 * Our Message[] → Gemini `contents`. Roles: user → `user`, assistant → `model`, tool → a `user`
 * turn of `functionResponse` parts (with the function's name; Gemini pairs responses with calls
 * by name and order, so our ids stay in our history and only pair things up here). Images go as
 * `inlineData`. Consecutive turns of one role are merged, every call gets a response (a
 * synthetic error when none was stored), orphan responses are dropped, and the list starts with
 * a user turn and ends without a model turn (the API refuses both).
 *
 * Thinking rule:
 * - Our own thought summaries are NOT sent back (the model does not read them); their
 *   `thoughtSignature` is. A signed Gemini thinking block puts its signature on the next text
 *   part of the turn, or on an empty text part where it stood (histories written before text
 *   blocks kept their own signatures stored them that way).
 * - A text block's own `signature` (TextBlock.signature) goes back on that same text part, when
 *   the message came from this provider. Signatures on text parts are not strictly validated by
 *   the API (only functionCall ones are), so the streamed parts travel joined as one part.
 * - A function call's signature travels on the functionCall part (ToolCallBlock.providerData),
 *   which the API validates strictly.
 * - Thinking from another provider is dropped (default) or, with `foreignThinking: 'text'`,
 *   sent as `<thinking>` text in the model turn (provider-shared/history.ts `foreignThinking`).
 *   Redacted thinking and unsigned thinking never travel.
 */
import type { ContentBlock, DocumentBlock, ImageBlock, JsonObject, Message, ToolCallBlock, ToolResultBlock } from '../../plugin-api.js';
import { attachmentReference, documentFallback } from '../../lib/provider-shared/attachments.js';
import { foreignThinking, toolResultText } from '../../lib/provider-shared/history.js';

export interface WirePart {
  text?: string;
  thought?: boolean;
  thoughtSignature?: string;
  inlineData?: { mimeType: string; data: string };
  functionCall?: { name: string; args: JsonObject; id?: string };
  functionResponse?: { name: string; response: JsonObject; id?: string };
}
export interface WireContent {
  role: 'user' | 'model';
  parts: WirePart[];
}

export const INTERRUPTED_RESULT = 'Tool call was interrupted before it returned a result.';
const CONTINUATION_TEXT = '(continuing the conversation)';

function imagePart(img: ImageBlock): WirePart {
  if (img.data) return { inlineData: { mimeType: img.mimeType, data: img.data } };
  // Context policy dropped the bytes: tell the model an image was here.
  return { text: `[image${img.path ? ` ${img.path}` : ''} (${img.mimeType}) is no longer attached]` };
}

/** A PDF goes as `inlineData` like an image; without its bytes, its text or a line saying where it is. */
function documentPart(d: DocumentBlock): WirePart {
  if (d.data && d.mimeType === 'application/pdf') return { inlineData: { mimeType: d.mimeType, data: d.data } };
  return { text: documentFallback(d).text };
}

/** `output` / `error` are the keys the API documents for FunctionResponse.response. */
function responsePart(r: ToolResultBlock, call: PendingCall): WirePart {
  const text = toolResultText(r.content) || (r.content.some((c) => c.type === 'image') ? '(image output follows)' : r.isError ? 'Error (no message)' : '(no output)');
  const fr: NonNullable<WirePart['functionResponse']> = { name: call.name, response: r.isError ? { error: text } : { output: text } };
  if (call.wireId) fr.id = call.wireId;
  return { functionResponse: fr };
}

function modelParts(content: ContentBlock[], providerId: string, thinkingAsText: boolean, own: boolean): WirePart[] {
  const out: WirePart[] = [];
  let pending: string | undefined;
  const flush = () => {
    if (pending !== undefined) out.push({ text: '', thoughtSignature: pending });
    pending = undefined;
  };
  for (const b of content) {
    switch (b.type) {
      case 'text': {
        const sig = own && typeof b.signature === 'string' && b.signature ? b.signature : undefined;
        if (!b.text && pending === undefined && sig === undefined) break;
        // The text's own signature wins its part; a thinking block's signature then stands alone before it.
        if (sig !== undefined) flush();
        const part: WirePart = { text: b.text };
        const put = sig ?? pending;
        if (put !== undefined) part.thoughtSignature = put;
        pending = undefined;
        out.push(part);
        break;
      }
      case 'thinking': {
        if (b.provider === providerId) {
          if (b.signature) {
            flush();
            pending = b.signature;
          }
          break;
        }
        const kept = foreignThinking(b, providerId, thinkingAsText);
        if (kept?.type === 'text') {
          flush();
          out.push({ text: kept.text });
        }
        break;
      }
      case 'tool_call': {
        flush();
        const fc: NonNullable<WirePart['functionCall']> = { name: b.name, args: b.input };
        const wireId = b.providerData?.id;
        if (typeof wireId === 'string') fc.id = wireId;
        const part: WirePart = { functionCall: fc };
        const sig = b.providerData?.thoughtSignature;
        if (typeof sig === 'string') part.thoughtSignature = sig;
        out.push(part);
        break;
      }
      case 'image':
        flush();
        out.push(imagePart(b));
        break;
      // hosted_search has no wire form: the grounding was for the text, which travels.
    }
  }
  flush();
  return out;
}

interface PendingCall {
  name: string;
  wireId?: string;
}

class TurnBuilder {
  readonly contents: WireContent[] = [];
  /** Calls of the latest model turn not answered yet, by our id, in call order. */
  private pending = new Map<string, PendingCall>();

  private push(role: WireContent['role'], parts: WirePart[], front = false): void {
    if (!parts.length) return;
    const last = this.contents.at(-1);
    if (last?.role === role) {
      if (front) last.parts.unshift(...parts);
      else last.parts.push(...parts);
    } else this.contents.push({ role, parts });
  }

  model(blocks: ContentBlock[], providerId: string, thinkingAsText: boolean, own = true): void {
    const parts = modelParts(blocks, providerId, thinkingAsText, own);
    if (!parts.length) return;
    this.answerPending();
    this.push('model', parts);
    for (const b of blocks) if (b.type === 'tool_call') this.pending.set(b.id, callOf(b));
  }

  user(blocks: ContentBlock[]): void {
    const responses = new Map<string, WirePart>();
    const rest: WirePart[] = [];
    const extra: WirePart[] = [];
    for (const b of blocks) {
      if (b.type === 'text') {
        if (b.text) rest.push({ text: b.text });
      } else if (b.type === 'image') rest.push(imagePart(b));
      else if (b.type === 'document') rest.push(documentPart(b));
      // Not expanded (no uploads plugin): the model still learns the file and where it is.
      else if (b.type === 'attachment') rest.push({ text: attachmentReference(b) });
      else if (b.type === 'tool_result') {
        const call = this.pending.get(b.toolCallId);
        if (!call || responses.has(b.toolCallId)) continue; // orphan: the API would refuse it
        responses.set(b.toolCallId, responsePart(b, call));
        for (const c of b.content) if (c.type === 'image') extra.push(imagePart(c));
      }
    }
    let answered: WirePart[] = [];
    if (responses.size) {
      // Responses in call order; calls this turn leaves unanswered get a synthetic error.
      answered = [...this.pending.entries()].map(([id, call]) => responses.get(id) ?? syntheticResponse(call));
      this.pending.clear();
    }
    if (!answered.length && !rest.length && !extra.length) return;
    const last = this.contents.at(-1);
    if (last?.role === 'user' && answered.length) {
      this.push('user', answered, true);
      this.push('user', [...extra, ...rest]);
    } else this.push('user', [...answered, ...extra, ...rest]);
  }

  answerPending(): void {
    if (!this.pending.size) return;
    const synthetic = [...this.pending.values()].map(syntheticResponse);
    this.pending.clear();
    this.push('user', synthetic, true);
  }
}

function syntheticResponse(call: PendingCall): WirePart {
  return { functionResponse: { name: call.name, response: { error: INTERRUPTED_RESULT }, ...(call.wireId ? { id: call.wireId } : {}) } };
}

function callOf(b: ToolCallBlock): PendingCall {
  const wireId = b.providerData?.id;
  return typeof wireId === 'string' ? { name: b.name, wireId } : { name: b.name };
}

/** Convert the history for provider `providerId` (whose thinking and signatures may travel back). */
export function toGeminiContents(messages: Message[], providerId: string, thinkingAsText = false): WireContent[] {
  const turns = new TurnBuilder();
  for (const m of messages) {
    // A message without a provider (older histories, tests) is taken as ours, as its thinking blocks say for themselves.
    if (m.role === 'assistant') turns.model(m.content, providerId, thinkingAsText, m.provider === undefined || m.provider === providerId);
    else turns.user(m.content);
  }
  turns.answerPending();
  const out = turns.contents;
  // A trailing model turn (a resend, or a round cut short) is not a prefill Gemini accepts.
  while (out.at(-1)?.role === 'model') out.pop();
  if (out[0]?.role === 'model') out.unshift({ role: 'user', parts: [{ text: CONTINUATION_TEXT }] });
  return out;
}
