/**
 * Raw Messages API stream events → normalized ProviderEvents. One translator per round; `handle`
 * appends the events one raw event produces to `out`, which the stream drains after each call.
 *
 * The delta path is the hot one (tens of thousands per reply): one array push for the text and
 * one event object, nothing else. Text is joined once, at content_block_stop.
 *
 * Anthropic block indices are not ours: a server_tool_use and its web_search_tool_result become
 * ONE hosted_search block, and redacted thinking has no start event, so output indices are
 * allocated here in arrival order.
 */
import type { Citation, HostedSearchBlock, JsonObject, ProviderErrorInfo, ProviderEvent, StopReason, TextBlock, ThinkingBlock, Usage } from '../../plugin-api.js';
import { parseToolInput } from '../../lib/provider-shared/history.js';
import { anthropicErrorInfo } from './errors.js';

/** Every raw event, content block and delta type the translator acts on (a test checks the fixtures send each). */
export const HANDLED_EVENT_TYPES = ['message_start', 'content_block_start', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop', 'error'] as const;
export const HANDLED_BLOCK_TYPES = ['text', 'thinking', 'redacted_thinking', 'tool_use', 'server_tool_use', 'web_search_tool_result'] as const;
export const HANDLED_DELTA_TYPES = ['text_delta', 'thinking_delta', 'signature_delta', 'input_json_delta', 'citations_delta'] as const;

/** The fields of raw events we read (the SDK yields parsed JSON; unknown shapes are ignored). */
type Raw = { [key: string]: any };

interface RawUsage {
  input_tokens?: number | null;
  output_tokens?: number | null;
  cache_read_input_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
  output_tokens_details?: { thinking_tokens?: number | null } | null;
}

type Slot =
  | { kind: 'text'; out: number; parts: string[]; citations?: Citation[]; rawCitations?: Raw[] }
  | { kind: 'thinking'; out: number; parts: string[]; signature?: string }
  | { kind: 'redacted'; out: number; data: string }
  | { kind: 'tool'; out: number; parts: string[]; id: string; name: string; initial?: Raw }
  | { kind: 'search'; out: number; parts: string[]; raw: Raw }
  | { kind: 'search_result'; raw: Raw }
  /** A block we do not show (another server tool, a future type): kept only to send back on a continuation. */
  | { kind: 'ignored'; raw?: Raw; parts?: string[] };

const STOP_REASONS: Record<string, StopReason> = {
  end_turn: 'end',
  stop_sequence: 'end',
  // Continued inside the stream (see `finish`); a turn still paused past the limit is an
  // incomplete reply, as at max_tokens.
  pause_turn: 'max_tokens',
  tool_use: 'tool_use',
  max_tokens: 'max_tokens',
  model_context_window_exceeded: 'max_tokens',
  refusal: 'refusal',
};

export function mapStopReason(reason: string | null | undefined): StopReason {
  return (reason && STOP_REASONS[reason]) || 'end';
}

/** A server tool's streamed input, as sent back; a fragment that does not parse goes back empty. */
function parseLoose(json: string): unknown {
  const parsed = parseToolInput(json);
  return parsed.ok ? parsed.value : {};
}

function citationOf(c: Raw): Citation | undefined {
  // Only web results carry a URL; document citations (char/page locations) have no anchor to show.
  if (!c || typeof c.url !== 'string') return undefined;
  const out: Citation = { url: c.url };
  if (typeof c.title === 'string') out.title = c.title;
  if (typeof c.cited_text === 'string') out.citedText = c.cited_text;
  return out;
}

export class AnthropicStreamTranslator {
  /** Events produced by the last call, in order. The caller yields and clears them. */
  readonly out: ProviderEvent[] = [];
  /** True once an error event was produced: the stream must end. */
  failed = false;
  /** True once message_stop arrived (the `done` event was produced). */
  complete = false;
  /** True once any content was produced: a retry could duplicate it. */
  hasOutput = false;
  private slots: Slot[] = [];
  private next = 0;
  private searches = new Map<string, { out: number; raw: Raw; queries: string[] }>();
  private startUsage: RawUsage | undefined;
  private endUsage: RawUsage | undefined;
  private usageSent = false;
  private stopReason: string | null | undefined;
  private responseId: string | undefined;
  /**
   * The wire content of this reply so far, across paused responses: what a `pause_turn`
   * continuation sends back as the last assistant message. Built at block stops, off the delta path.
   */
  private wire: Raw[] = [];
  private continuations = 0;
  /** output_tokens of the paused responses before the current one (the reply's output is their sum). */
  private priorOutput = 0;
  /** True after a paused response that is to be continued: the stream opens `continuationBody`. */
  paused = false;
  /** The code-execution container of the turn, which a continuation must name. */
  container: string | undefined;

  /** How many `pause_turn` continuations this reply may make (0: none, the turn ends paused); set once the request is built. */
  maxContinuations = 0;

  constructor(private readonly providerId: string) {}

  /**
   * The documented continuation: the same request with this reply's content so far appended as
   * the last assistant message (joined to one already there, a prefill), plus the container.
   */
  continuationBody<B extends { messages: Array<{ role: string; content: unknown[] }> }>(body: B): B {
    const messages = body.messages.slice();
    const last = messages.at(-1);
    if (last?.role === 'assistant') messages[messages.length - 1] = { ...last, content: [...last.content, ...this.wire] };
    else messages.push({ role: 'assistant', content: this.wire.slice() });
    return { ...body, messages, ...(this.container ? { container: this.container } : {}) };
  }

  /** The continuation's stream starts: its block indices start at 0 again, ours go on. */
  resume(): void {
    this.paused = false;
    this.slots = [];
    this.stopReason = undefined;
    this.startUsage = undefined;
    this.endUsage = undefined;
  }

  handle(ev: Raw): void {
    if (this.failed || this.complete) return;
    const type = ev.type;
    if (type === 'content_block_delta') return this.delta(ev.index, ev.delta);
    switch (type) {
      case 'content_block_start':
        return this.start(ev.index, ev.content_block ?? {});
      case 'content_block_stop':
        return this.stop(ev.index);
      case 'message_start':
        this.responseId = ev.message?.id;
        this.startUsage = ev.message?.usage ?? undefined;
        if (typeof ev.message?.container?.id === 'string') this.container = ev.message.container.id;
        return;
      case 'message_delta':
        this.stopReason = ev.delta?.stop_reason;
        if (ev.usage) this.endUsage = ev.usage;
        if (typeof ev.delta?.container?.id === 'string') this.container = ev.delta.container.id;
        return;
      case 'message_stop':
        return this.finish();
      // Unknown event types (future additions) are ignored; `error` and `ping` never get here (the SDK throws / skips).
    }
  }

  private delta(index: number, d: Raw): void {
    const s = this.slots[index];
    if (!s || !d) return;
    switch (d.type) {
      case 'text_delta':
        if (s.kind === 'text') {
          s.parts.push(d.text);
          this.out.push({ type: 'text_delta', index: s.out, text: d.text });
        }
        return;
      case 'thinking_delta':
        if (s.kind === 'thinking') {
          s.parts.push(d.thinking);
          this.out.push({ type: 'thinking_delta', index: s.out, text: d.thinking });
        }
        return;
      case 'input_json_delta':
        if (s.kind === 'ignored' && s.parts && d.partial_json) s.parts.push(d.partial_json);
        else if ((s.kind === 'tool' || s.kind === 'search') && d.partial_json) {
          s.parts.push(d.partial_json);
          if (s.kind === 'tool') this.out.push({ type: 'tool_input_delta', index: s.out, json: d.partial_json });
        }
        return;
      case 'signature_delta':
        if (s.kind === 'thinking') s.signature = d.signature;
        return;
      case 'citations_delta':
        if (s.kind === 'text') {
          if (d.citation) (s.rawCitations ??= []).push(d.citation);
          const c = citationOf(d.citation);
          if (c) (s.citations ??= []).push(c);
        }
        return;
    }
  }

  private start(index: number, b: Raw): void {
    switch (b.type) {
      case 'text': {
        const s: Slot = { kind: 'text', out: this.next++, parts: [] };
        this.slots[index] = s;
        this.hasOutput = true;
        this.out.push({ type: 'block_start', index: s.out, block: { type: 'text' } });
        if (Array.isArray(b.citations)) for (const c of b.citations) this.delta(index, { type: 'citations_delta', citation: c });
        if (b.text) this.delta(index, { type: 'text_delta', text: b.text });
        return;
      }
      case 'thinking': {
        const s: Slot = { kind: 'thinking', out: this.next++, parts: [] };
        if (b.signature) s.signature = b.signature;
        this.slots[index] = s;
        this.hasOutput = true;
        this.out.push({ type: 'block_start', index: s.out, block: { type: 'thinking' } });
        if (b.thinking) this.delta(index, { type: 'thinking_delta', thinking: b.thinking });
        return;
      }
      case 'redacted_thinking':
        this.slots[index] = { kind: 'redacted', out: this.next++, data: String(b.data ?? '') };
        this.hasOutput = true;
        return;
      case 'tool_use': {
        const s: Slot = { kind: 'tool', out: this.next++, parts: [], id: String(b.id), name: String(b.name) };
        if (b.input && typeof b.input === 'object' && Object.keys(b.input).length) s.initial = b.input;
        this.slots[index] = s;
        this.hasOutput = true;
        this.out.push({ type: 'block_start', index: s.out, block: { type: 'tool_call', id: s.id, name: s.name } });
        return;
      }
      case 'server_tool_use':
        // Reserve the output index now so the search sits where it happened, between text blocks.
        if (b.name === 'web_search') this.slots[index] = { kind: 'search', out: this.next++, parts: [], raw: b };
        else this.slots[index] = { kind: 'ignored', raw: b, parts: [] };
        return;
      case 'web_search_tool_result':
        this.slots[index] = { kind: 'search_result', raw: b };
        return;
      default:
        this.slots[index] = { kind: 'ignored', raw: b };
    }
  }

  private stop(index: number): void {
    const s = this.slots[index];
    if (!s) return;
    switch (s.kind) {
      case 'text': {
        const block: TextBlock = { type: 'text', text: s.parts.join('') };
        if (s.citations?.length) block.citations = s.citations;
        this.wire.push({ type: 'text', text: block.text, ...(s.rawCitations ? { citations: s.rawCitations } : {}) });
        this.out.push({ type: 'block_end', index: s.out, block });
        return;
      }
      case 'thinking': {
        const block: ThinkingBlock = { type: 'thinking', thinking: s.parts.join(''), provider: this.providerId };
        if (s.signature) block.signature = s.signature;
        this.wire.push({ type: 'thinking', thinking: block.thinking, ...(s.signature ? { signature: s.signature } : {}) });
        this.out.push({ type: 'block_end', index: s.out, block });
        return;
      }
      case 'ignored':
        if (s.raw) this.wire.push(s.parts?.length ? { ...s.raw, input: parseLoose(s.parts.join('')) } : s.raw);
        return;
      case 'redacted':
        this.wire.push({ type: 'redacted_thinking', data: s.data });
        this.out.push({ type: 'block_end', index: s.out, block: { type: 'thinking', thinking: '', redacted: true, data: s.data, provider: this.providerId } });
        return;
      case 'tool': {
        const json = s.parts.join('');
        const parsed = json ? parseToolInput(json) : { ok: true as const, value: (s.initial ?? {}) as Record<string, unknown> };
        if (!parsed.ok) {
          this.error({ code: 'malformed', message: `the tool call "${s.name}" (${s.id}) has arguments that are not valid JSON: ${parsed.error}`, retryable: false });
          return;
        }
        this.wire.push({ type: 'tool_use', id: s.id, name: s.name, input: parsed.value });
        this.out.push({ type: 'block_end', index: s.out, block: { type: 'tool_call', id: s.id, name: s.name, input: parsed.value as JsonObject } });
        return;
      }
      case 'search': {
        const parsed = parseToolInput(s.parts.join(''));
        const input = parsed.ok ? parsed.value : {};
        const queries = typeof input.query === 'string' ? [input.query] : [];
        const raw = { ...s.raw, input };
        this.wire.push(raw);
        this.searches.set(String(s.raw.id), { out: s.out, raw, queries });
        return;
      }
      case 'search_result':
        this.wire.push(s.raw);
        return this.searchResult(s.raw);
    }
  }

  private searchResult(raw: Raw): void {
    const id = String(raw.tool_use_id);
    const call = this.searches.get(id);
    this.searches.delete(id);
    const ok = Array.isArray(raw.content);
    const block: HostedSearchBlock = {
      type: 'hosted_search',
      provider: this.providerId,
      id,
      queries: call?.queries ?? [],
      sources: ok ? (raw.content as Raw[]).filter((r) => r?.type === 'web_search_result').map((r) => ({ title: String(r.title ?? ''), url: String(r.url ?? '') })) : [],
      status: ok ? 'completed' : 'failed',
    };
    // Both raw blocks go back next round (encrypted_content included); a result without its call could not.
    if (call) block.providerData = { blocks: [call.raw, raw] as JsonObject[] };
    this.out.push({ type: 'block_end', index: call?.out ?? this.next++, block });
  }

  private usage(): Usage | undefined {
    const a = this.startUsage;
    const b = this.endUsage;
    if (!a && !b) return undefined;
    // message_delta usage is cumulative and may repeat (or null) the input side: prefer it when given.
    const pick = (k: 'input_tokens' | 'output_tokens' | 'cache_read_input_tokens' | 'cache_creation_input_tokens') => b?.[k] ?? a?.[k] ?? undefined;
    // Input and cache are the last request's (it holds the paused parts: that is the context);
    // output is the whole reply's.
    const usage: Usage = { inputTokens: pick('input_tokens') ?? 0, outputTokens: (pick('output_tokens') ?? 0) + this.priorOutput };
    const read = pick('cache_read_input_tokens');
    const write = pick('cache_creation_input_tokens');
    const reasoning = b?.output_tokens_details?.thinking_tokens;
    if (typeof read === 'number') usage.cacheReadTokens = read;
    if (typeof write === 'number') usage.cacheWriteTokens = write;
    if (typeof reasoning === 'number') usage.reasoningTokens = reasoning;
    return usage;
  }

  private pushUsage(): void {
    if (this.usageSent) return;
    const u = this.usage();
    if (u) this.out.push({ type: 'usage', usage: u });
    this.usageSent = true;
  }

  private finish(): void {
    const paused = this.stopReason === 'pause_turn';
    if (paused && this.continuations < this.maxContinuations) {
      // No `done`: the stream sends the continuation and its blocks join this reply. A pending
      // search stays open, as its result comes in the continuation.
      this.continuations++;
      this.priorOutput += this.endUsage?.output_tokens ?? this.startUsage?.output_tokens ?? 0;
      this.paused = true;
      return;
    }
    for (const [id, call] of this.searches) {
      // A call without its result is not sent back: the API refuses one followed by a new user turn.
      const block: HostedSearchBlock = { type: 'hosted_search', provider: this.providerId, id, queries: call.queries, sources: [], status: 'failed' };
      this.out.push({ type: 'block_end', index: call.out, block });
    }
    this.searches.clear();
    this.pushUsage();
    this.out.push({ type: 'done', stopReason: mapStopReason(this.stopReason), ...(this.responseId ? { responseId: this.responseId } : {}) });
    this.complete = true;
  }

  /** One error event (after the usage seen so far); the stream ends after it. */
  error(info: ProviderErrorInfo): void {
    if (this.failed || this.complete) return;
    this.pushUsage();
    this.out.push({ type: 'error', error: info });
    this.failed = true;
  }

  /** The raw iteration ended without throwing. */
  end(aborted: boolean): void {
    if (this.complete || this.failed) return;
    if (aborted) return this.error({ code: 'aborted', message: 'the request was aborted', retryable: false });
    // The SDK ends quietly when a body stops cleanly mid-message; only message_stop proves the reply is whole.
    this.error({ code: 'stream', message: 'the stream ended before message_stop: the reply is incomplete', retryable: !this.hasOutput });
  }

  /** The raw iteration (or the request) threw. */
  fail(err: unknown, aborted: boolean): void {
    if (aborted) return this.error({ code: 'aborted', message: 'the request was aborted', retryable: false });
    this.error(anthropicErrorInfo(err, this.hasOutput));
  }
}
