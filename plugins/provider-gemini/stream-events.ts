/**
 * Gemini stream chunks → normalized ProviderEvents. Every `data:` line is a whole
 * GenerateContentResponse; its first candidate's parts are deltas of text or thought text, or
 * whole function calls. One translator per round; `handle` appends the events of one chunk to
 * `out`, which the stream drains.
 *
 * Hot path (tens of thousands of text chunks): one array push for the text and one event object
 * per part. Text is joined once, at the block's end. Usage, grounding and the finish reason are
 * only remembered per chunk and turned into events when the stream ends: finishReason cannot end
 * the round by itself because first-generation streams repeat STOP on every chunk.
 *
 * Signatures (see history.ts for the way back): on a functionCall part → the tool call's
 * providerData; on a thought part → the thinking block's `signature`; on a text part → the text
 * block's own `signature` (TextBlock.signature): the open text block when it has none yet, else
 * a new text block (empty when the part is), so each goes back on the text it came with. When
 * streaming, Gemini often sends it on a trailing part with empty text (pydantic/pydantic-ai#3481):
 * that signs the text block still open.
 */
import { randomBytes } from 'node:crypto';
import type { Citation, HostedSearchBlock, JsonObject, ProviderErrorInfo, ProviderEvent, StopReason, TextBlock, ThinkingBlock, Usage } from '../../plugin-api.js';
import { classifyStatus } from '../../lib/provider-shared/errors.js';
import { normalizeToolCallId } from '../../lib/provider-shared/history.js';
import { geminiErrorInfo } from './errors.js';

/** Response fields the translator acts on (a test checks that the mock sends each of them). */
export const HANDLED_RESPONSE_FIELDS = ['candidates', 'usageMetadata', 'promptFeedback', 'responseId', 'error'] as const;
export const HANDLED_CANDIDATE_FIELDS = ['content', 'finishReason', 'finishMessage', 'safetyRatings', 'groundingMetadata'] as const;
export const HANDLED_PART_FIELDS = ['text', 'thought', 'thoughtSignature', 'functionCall'] as const;
export const HANDLED_FUNCTION_CALL_FIELDS = ['name', 'args', 'id'] as const;
export const HANDLED_PROMPT_FEEDBACK_FIELDS = ['blockReason', 'safetyRatings'] as const;
export const HANDLED_GROUNDING_FIELDS = ['webSearchQueries', 'groundingChunks', 'groundingSupports', 'searchEntryPoint'] as const;
export const HANDLED_USAGE_FIELDS = ['promptTokenCount', 'candidatesTokenCount', 'thoughtsTokenCount', 'cachedContentTokenCount', 'toolUsePromptTokenCount'] as const;
export const HANDLED_FINISH_REASONS = ['STOP', 'MAX_TOKENS', 'SAFETY', 'RECITATION', 'PROHIBITED_CONTENT', 'MALFORMED_FUNCTION_CALL'] as const;

type Raw = { [key: string]: any };

interface RawUsage {
  promptTokenCount?: number;
  candidatesTokenCount?: number;
  cachedContentTokenCount?: number;
  thoughtsTokenCount?: number;
  toolUsePromptTokenCount?: number;
}

type Slot = { kind: 'text' | 'thinking'; out: number; parts: string[]; signature?: string };

/** Finish reasons that end the reply normally. Everything else is a failure with its name in the message. */
const NORMAL_FINISH: Record<string, StopReason> = { STOP: 'end', MAX_TOKENS: 'max_tokens', FINISH_REASON_UNSPECIFIED: 'end' };
const BLOCKED = new Set(['SAFETY', 'RECITATION', 'PROHIBITED_CONTENT', 'BLOCKLIST', 'SPII', 'IMAGE_SAFETY', 'IMAGE_PROHIBITED_CONTENT', 'IMAGE_RECITATION', 'LANGUAGE']);
const FINISH_TEXT: Record<string, string> = {
  SAFETY: 'the reply was blocked for safety',
  RECITATION: 'the reply was stopped because it recited training data',
  PROHIBITED_CONTENT: 'the reply was blocked for prohibited content',
  BLOCKLIST: 'the reply was blocked: it contained a blocklisted term',
  SPII: 'the reply was blocked: it contained sensitive personal information',
  LANGUAGE: 'the reply was stopped: the language is not supported',
  MALFORMED_FUNCTION_CALL: 'the model produced a malformed function call',
  UNEXPECTED_TOOL_CALL: 'the model called a tool that was not offered',
  OTHER: 'the reply stopped for an unspecified reason',
};

/** `, DANGEROUS_CONTENT` for the categories that blocked, or ''. */
function blockedCategories(ratings: unknown): string {
  if (!Array.isArray(ratings)) return '';
  const cats = ratings.filter((r) => r?.blocked === true).map((r) => String(r.category).replace(/^HARM_CATEGORY_/, ''));
  return cats.length ? `, ${cats.join(', ')}` : '';
}

export function newToolCallId(): string {
  return `call_${randomBytes(9).toString('base64url')}`;
}

export class GeminiStreamTranslator {
  /** Events produced by the last call, in order. The caller yields and clears them. */
  readonly out: ProviderEvent[] = [];
  /** True once an error event was produced: the stream must end. */
  failed = false;
  /** True once the `done` event was produced. */
  complete = false;
  /** True once any content was produced: a retry could duplicate it. */
  hasOutput = false;
  private open: Slot | undefined;
  private next = 0;
  private calls = 0;
  private usage: RawUsage | undefined;
  private finishReason: string | undefined;
  private finishCandidate: Raw | undefined;
  private grounding: Raw | undefined;
  private responseId: string | undefined;

  /**
   * `releaseChunks`: empty each chunk once translated. The SDK's `generateContentStream` tees
   * the stream and its `response` promise keeps every parsed chunk (getResponsePromise's
   * `allResponses`, aggregated only at the end) with the three helper closures `addHelpers` put
   * on each; nobody reads that promise here, so without this every chunk of a long reply stays
   * alive to the end, old-space GC work growing with the reply. What the translator keeps of a
   * chunk (text, usage, grounding) it references itself.
   */
  constructor(private readonly providerId: string, private readonly releaseChunks = false) {}

  handle(chunk: Raw): void {
    this.translate(chunk);
    if (this.releaseChunks) {
      chunk.candidates = undefined;
      chunk.usageMetadata = undefined;
      chunk.text = chunk.functionCall = chunk.functionCalls = undefined;
    }
  }

  private translate(chunk: Raw): void {
    if (this.failed || this.complete) return;
    if (chunk.usageMetadata) this.usage = chunk.usageMetadata;
    if (chunk.responseId) this.responseId = chunk.responseId;
    const cand = chunk.candidates?.[0];
    if (cand === undefined) {
      const block = chunk.promptFeedback?.blockReason;
      if (block) this.blockedPrompt(String(block), chunk.promptFeedback);
      else if (chunk.error) this.streamError(chunk.error);
      return;
    }
    const parts = cand.content?.parts;
    if (parts !== undefined) for (let i = 0; i < parts.length; i++) this.part(parts[i]);
    if (cand.finishReason) {
      this.finishReason = cand.finishReason;
      this.finishCandidate = cand;
    }
    if (cand.groundingMetadata) this.grounding = cand.groundingMetadata;
  }

  private part(p: Raw): void {
    if (p.functionCall) return this.call(p.functionCall, p.thoughtSignature);
    const text = p.text;
    if (typeof text !== 'string') return; // inlineData, executableCode, ...: not offered, not handled
    if (p.thought === true) {
      let s = this.open;
      if (s === undefined || s.kind !== 'thinking') s = this.start('thinking');
      if (p.thoughtSignature) s.signature = p.thoughtSignature;
      if (text === '') return;
      s.parts.push(text);
      this.out.push({ type: 'thinking_delta', index: s.out, text });
      return;
    }
    let s = this.open;
    const sig = p.thoughtSignature;
    if (sig) {
      if (s === undefined || s.kind !== 'text' || s.signature) s = this.start('text');
      s.signature = sig;
    }
    if (text === '') return;
    if (s === undefined || s.kind !== 'text') s = this.start('text');
    s.parts.push(text);
    this.out.push({ type: 'text_delta', index: s.out, text });
  }

  private start(kind: Slot['kind']): Slot {
    if (this.open) this.close();
    const s: Slot = { kind, out: this.next++, parts: [] };
    this.open = s;
    this.hasOutput = true;
    this.out.push({ type: 'block_start', index: s.out, block: { type: kind } });
    return s;
  }

  private close(citations?: Citation[]): void {
    const s = this.open;
    if (!s) return;
    this.open = undefined;
    if (s.kind === 'text') {
      const block: TextBlock = { type: 'text', text: s.parts.join('') };
      if (citations?.length) block.citations = citations;
      if (s.signature) block.signature = s.signature;
      this.out.push({ type: 'block_end', index: s.out, block });
    } else {
      const block: ThinkingBlock = { type: 'thinking', thinking: s.parts.join(''), provider: this.providerId };
      if (s.signature) block.signature = s.signature;
      this.out.push({ type: 'block_end', index: s.out, block });
    }
  }

  private call(fc: Raw, sig: string | undefined): void {
    if (this.open) this.close();
    const name = String(fc.name ?? '');
    const input: JsonObject = fc.args && typeof fc.args === 'object' && !Array.isArray(fc.args) ? fc.args : {};
    const id = typeof fc.id === 'string' && fc.id ? normalizeToolCallId(fc.id) : newToolCallId();
    const index = this.next++;
    this.calls++;
    this.hasOutput = true;
    this.out.push({ type: 'block_start', index, block: { type: 'tool_call', id, name } });
    this.out.push({ type: 'tool_input_delta', index, json: JSON.stringify(input) });
    const providerData: JsonObject = {};
    if (sig) providerData.thoughtSignature = sig;
    if (typeof fc.id === 'string' && fc.id) providerData.id = fc.id;
    this.out.push({ type: 'block_end', index, block: { type: 'tool_call', id, name, input, ...(Object.keys(providerData).length ? { providerData } : {}) } });
  }

  private citations(text: string): Citation[] | undefined {
    const g = this.grounding;
    if (!g || !Array.isArray(g.groundingSupports) || !Array.isArray(g.groundingChunks)) return undefined;
    const out: Citation[] = [];
    let bytes: Buffer | undefined;
    for (const sup of g.groundingSupports) {
      const seg = sup?.segment ?? {};
      let cited: string | undefined = typeof seg.text === 'string' ? seg.text : undefined;
      if (cited === undefined && typeof seg.endIndex === 'number') {
        // Segment offsets are UTF-8 byte offsets into the answer.
        bytes ??= Buffer.from(text, 'utf8');
        cited = bytes.subarray(seg.startIndex ?? 0, seg.endIndex).toString('utf8');
      }
      if (cited !== undefined && !text.includes(cited)) continue; // it anchors text of another block
      for (const i of Array.isArray(sup?.groundingChunkIndices) ? sup.groundingChunkIndices : []) {
        const web = g.groundingChunks[i]?.web;
        if (!web || typeof web.uri !== 'string') continue;
        const c: Citation = { url: web.uri };
        if (typeof web.title === 'string') c.title = web.title;
        if (cited) c.citedText = cited;
        out.push(c);
      }
    }
    return out;
  }

  private search(): void {
    const g = this.grounding;
    if (!g) return;
    const queries: string[] = Array.isArray(g.webSearchQueries) ? g.webSearchQueries.filter((q: unknown) => typeof q === 'string') : [];
    const chunks: Raw[] = Array.isArray(g.groundingChunks) ? g.groundingChunks : [];
    if (!queries.length && !chunks.length) return;
    const sources = chunks.filter((c) => typeof c?.web?.uri === 'string').map((c) => ({ title: String(c.web.title ?? ''), url: String(c.web.uri) }));
    const block: HostedSearchBlock = { type: 'hosted_search', provider: this.providerId, queries, sources, status: 'completed' };
    if (this.responseId) block.id = this.responseId;
    // Google requires showing the Search Suggestions widget with grounded answers: keep its HTML.
    const rendered = g.searchEntryPoint?.renderedContent;
    if (typeof rendered === 'string') block.providerData = { renderedContent: rendered };
    this.out.push({ type: 'block_end', index: this.next++, block });
  }

  private pushUsage(): void {
    const u = this.usage;
    if (!u) return;
    const cached = u.cachedContentTokenCount ?? 0;
    const thoughts = u.thoughtsTokenCount ?? 0;
    // Like the other providers: input excludes cache reads; output includes the thinking tokens (billed as output).
    const usage: Usage = {
      inputTokens: Math.max(0, (u.promptTokenCount ?? 0) + (u.toolUsePromptTokenCount ?? 0) - cached),
      outputTokens: (u.candidatesTokenCount ?? 0) + thoughts,
    };
    if (cached) usage.cacheReadTokens = cached;
    if (thoughts) usage.reasoningTokens = thoughts;
    this.out.push({ type: 'usage', usage });
    this.usage = undefined;
  }

  /** Google's error envelope as a data line (a failure after the 200 headers). */
  private streamError(e: Raw): void {
    const status = typeof e.code === 'number' ? e.code : undefined;
    const c = classifyStatus(status, `${e.status ?? ''} ${e.message ?? ''}`);
    const label = [status, e.status].filter(Boolean).join(' ');
    this.error({ code: c.code, message: `stream error${label ? ` ${label}` : ''}: ${String(e.message ?? 'unknown error')}`, retryable: c.retryable && !this.hasOutput, ...(status ? { status } : {}) });
  }

  private blockedPrompt(reason: string, feedback: Raw): void {
    this.error({ code: 'refusal', message: `the prompt was blocked (blockReason ${reason}${blockedCategories(feedback?.safetyRatings)})`, retryable: false });
  }

  /** The raw stream ended without throwing: close blocks, then usage and done (or the finish-reason failure). */
  end(aborted: boolean): void {
    if (this.complete || this.failed) return;
    if (aborted) return this.error({ code: 'aborted', message: 'the request was aborted', retryable: false });
    const reason = this.finishReason;
    if (reason === undefined) {
      // A body that ends cleanly between events parses as success; only a missing finishReason tells.
      return this.error({ code: 'stream', message: 'the stream ended before a finishReason: the reply is incomplete', retryable: !this.hasOutput });
    }
    const open = this.open;
    this.close(open?.kind === 'text' && this.grounding ? this.citations(open.parts.join('')) : undefined);
    this.search();
    const stop = NORMAL_FINISH[reason];
    if (stop === undefined) return this.finishFailure(reason);
    this.pushUsage();
    this.out.push({ type: 'done', stopReason: stop === 'end' && this.calls > 0 ? 'tool_use' : stop, ...(this.responseId ? { responseId: this.responseId } : {}) });
    this.complete = true;
  }

  private finishFailure(reason: string): void {
    const cand = this.finishCandidate ?? {};
    const what = FINISH_TEXT[reason] ?? 'the reply stopped';
    const detail = typeof cand.finishMessage === 'string' && cand.finishMessage ? `: ${cand.finishMessage}` : '';
    const blocked = BLOCKED.has(reason);
    // A malformed call is the model's slip: another try may well succeed (the kernel retries only before output).
    const retryable = reason === 'MALFORMED_FUNCTION_CALL' && !this.hasOutput;
    this.error({ code: blocked ? 'refusal' : reason === 'MALFORMED_FUNCTION_CALL' ? 'malformed' : 'stream', message: `${what} (finishReason ${reason}${blockedCategories(cand.safetyRatings)})${detail}`, retryable });
  }

  /** One error event (after the usage seen so far); the stream ends after it. */
  error(info: ProviderErrorInfo): void {
    if (this.failed || this.complete) return;
    this.pushUsage();
    this.out.push({ type: 'error', error: info });
    this.failed = true;
  }

  /** The raw iteration (or the request) threw. */
  fail(err: unknown, aborted: boolean, timedOut = false): void {
    if (aborted) return this.error({ code: 'aborted', message: 'the request was aborted', retryable: false });
    this.error(geminiErrorInfo(err, this.hasOutput, timedOut));
  }
}
