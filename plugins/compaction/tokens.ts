/**
 * Token accounting. The provider's last reported usage is the ground truth; only what came
 * after it is estimated, with a real BPE tokenizer (chars/4 undercounts code by ~22 %). Each
 * message is counted once and cached, so a decision costs O(new messages), not O(history).
 *
 * The tokenizer (gpt-tokenizer, o200k) costs ~400 ms to import, so it loads only when an
 * estimate could matter: UTF-8 bytes are a hard upper bound on BPE tokens, and a request whose
 * bytes are under the threshold cannot be over it. Until it has loaded, bytes/4 stands in for
 * the figures that are only shown (the context meter).
 */
import type { ContentBlock, Message, ProviderRequest, Usage } from '../../plugin-api.js';

/** Flat cost of an image (Claude's ~1.15 MP image; OpenAI and Gemini charge less). */
export const IMAGE_TOKENS = 1600;
const PER_MESSAGE = 4;
const CACHE_LIMIT = 50_000;

let countTokens: ((text: string) => number) | undefined;
let loading: Promise<void> | undefined;

/** Load the tokenizer once (concurrent callers share the load). */
export function loadTokenizer(): Promise<void> {
  loading ??= import('gpt-tokenizer/encoding/o200k_base').then((m) => {
    countTokens = m.countTokens as (text: string) => number;
  });
  return loading;
}

export const tokenizerLoaded = () => countTokens !== undefined;

/** Tokens of a text: exact once the tokenizer is loaded, else bytes/4. */
export function textTokens(text: string): number {
  if (!text) return 0;
  return countTokens ? countTokens(text) : Math.ceil(Buffer.byteLength(text) / 4);
}

function blockText(b: ContentBlock): string {
  switch (b.type) {
    case 'text':
      return b.text;
    case 'thinking':
      return b.thinking;
    case 'tool_call':
      return `${b.name} ${JSON.stringify(b.input)}`;
    case 'tool_result':
      return b.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');
    case 'hosted_search':
      return [...b.queries, ...b.sources.map((s) => `${s.title} ${s.url} ${s.snippet ?? ''}`)].join('\n');
    case 'image':
      return '';
    // An attachment is expanded per request by the uploads plugin; unexpanded it is a reference line.
    case 'attachment':
      return `${b.name} ${b.path} ${b.mediaType}`;
    case 'document':
      return b.text ?? '';
  }
}

function images(b: ContentBlock): number {
  if (b.type === 'image') return 1;
  if (b.type === 'tool_result') return b.content.filter((c) => c.type === 'image').length;
  return 0;
}

/** Per-message counts, cached by id and a cheap fingerprint (a pruned or still-streaming message changes it). */
export class MessageCounter {
  private tokens = new Map<string, number>();
  private bytes = new Map<string, number>();
  private exact = tokenizerLoaded();

  /**
   * A stored message never changes once complete, so its id and block count identify it; a
   * streaming one grows and a pruned tool result shrinks, so those add their text length
   * (summed without serializing anything, to keep a cache hit O(blocks)).
   */
  private key(m: Message): string {
    const k = `${m.id}:${m.content.length}`;
    if (m.role !== 'tool' && m.meta?.partial !== true) return k;
    let chars = 0;
    for (const b of m.content) {
      if (b.type === 'text') chars += b.text.length;
      else if (b.type === 'thinking') chars += b.thinking.length;
      else if (b.type === 'tool_result') for (const c of b.content) chars += c.type === 'text' ? c.text.length : 1;
    }
    return `${k}:${chars}`;
  }

  /** Upper bound: UTF-8 bytes plus image costs. */
  bytesOf(m: Message): number {
    const k = this.key(m);
    let n = this.bytes.get(k);
    if (n === undefined) {
      n = PER_MESSAGE;
      for (const b of m.content) n += Buffer.byteLength(blockText(b)) + images(b) * IMAGE_TOKENS;
      this.remember(this.bytes, k, n);
    }
    return n;
  }

  tokensOf(m: Message): number {
    if (!this.exact && tokenizerLoaded()) {
      // Counts made before the tokenizer loaded were bytes/4: start over with exact ones.
      this.exact = true;
      this.tokens.clear();
    }
    const k = this.key(m);
    let n = this.tokens.get(k);
    if (n === undefined) {
      n = PER_MESSAGE;
      for (const b of m.content) n += textTokens(blockText(b)) + images(b) * IMAGE_TOKENS;
      this.remember(this.tokens, k, n);
    }
    return n;
  }

  private remember(map: Map<string, number>, k: string, n: number) {
    if (map.size >= CACHE_LIMIT) map.delete(map.keys().next().value!);
    map.set(k, n);
  }
}

/** The context a usage record measured: everything sent plus the reply. */
export function usageContext(u: Usage): number {
  return u.inputTokens + (u.cacheReadTokens ?? 0) + (u.cacheWriteTokens ?? 0) + u.outputTokens;
}

export interface Estimate {
  tokens: number;
  /** Upper bound in the same terms (bytes), for deciding whether exact counting is needed. */
  upperBound: number;
  /** Index of the message whose usage anchored the estimate, or -1. */
  anchor: number;
}

/** How far back a usage anchor is looked for before estimating the whole request. */
const ANCHOR_LOOKBACK = 64;

/**
 * Estimate a request. A usage anchor counts only when it came from the same provider and model
 * (another tokenizer counts differently), after the checkpoint in force (the context it
 * measured is gone), and from a finished reply.
 */
export function estimateRequest(request: ProviderRequest, counter: MessageCounter, provider: string, checkpointAt: number): Estimate {
  const msgs = request.messages;
  let anchor = -1;
  for (let i = msgs.length - 1; i >= 0 && i >= msgs.length - ANCHOR_LOOKBACK; i--) {
    const m = msgs[i]!;
    if (m.role !== 'assistant' || !m.usage) continue;
    if (m.provider === provider && m.model === request.model && m.createdAt > checkpointAt && m.meta?.partial !== true && usageContext(m.usage) > 0) anchor = i;
    break;
  }
  let tokens = 0;
  let upperBound = 0;
  if (anchor >= 0) {
    tokens = upperBound = usageContext(msgs[anchor]!.usage!);
  } else {
    for (const p of request.system) {
      tokens += textTokens(p.text);
      upperBound += Buffer.byteLength(p.text);
    }
    if (request.tools.length) {
      const json = JSON.stringify(request.tools);
      tokens += textTokens(json);
      upperBound += Buffer.byteLength(json);
    }
  }
  for (let i = anchor + 1; i < msgs.length; i++) {
    tokens += counter.tokensOf(msgs[i]!);
    upperBound += counter.bytesOf(msgs[i]!);
  }
  return { tokens, upperBound, anchor };
}

/** Sum of message estimates. */
export function messagesTokens(messages: Message[], counter: MessageCounter): number {
  let n = 0;
  for (const m of messages) n += counter.tokensOf(m);
  return n;
}
