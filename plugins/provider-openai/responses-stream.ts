/**
 * Turns Responses API stream events into normalized provider events.
 *
 * Mapping: a `message` item's output_text / refusal parts become text blocks (url_citation
 * annotations → `citations`); a `reasoning` item becomes one thinking block (summary parts
 * joined by a blank line; `providerData` keeps the item for the round trip); a `function_call`
 * item becomes a tool call with streamed arguments; every `web_search_call` of the response is
 * aggregated into ONE hosted_search block (queries, sources from `action.sources` and from the
 * citations), re-sent at each search and at the end as it grows. `response.completed` gives
 * usage and `done`; `response.failed`, `response.incomplete` and `error` end with one `error`.
 *
 * Per delta the work is one map lookup (skipped for consecutive deltas of the same part), an
 * array push and one event object: text is joined once, at the block's end.
 */
import type { Citation, ContentBlock, JsonObject, ProviderErrorInfo, ProviderEvent, SearchSource, StopReason, Usage } from '../../plugin-api.js';
import { parseToolInput } from '../../lib/provider-shared/history.js';
import { classifyStreamError } from '../../lib/provider-shared/stream-errors.js';

/** Event types this translator acts on (a test checks the mock sends each of them). */
export const HANDLED_RESPONSES_EVENTS = [
  'response.created',
  'response.output_item.added',
  'response.content_part.added',
  'response.output_text.delta',
  'response.output_text.annotation.added',
  'response.content_part.done',
  'response.refusal.delta',
  'response.reasoning_summary_text.delta',
  'response.reasoning_text.delta',
  'response.function_call_arguments.delta',
  'response.function_call_arguments.done',
  'response.output_item.done',
  'response.completed',
  'response.incomplete',
  'response.failed',
  'error',
] as const;

interface TextState {
  index: number;
  parts: string[];
  citations: Citation[];
  refusal: boolean;
  open: boolean;
}
interface ThinkingState {
  index: number | undefined;
  parts: string[];
  summaryIndex: number;
}
interface ToolState {
  index: number;
  callId: string;
  name: string;
  parts: string[];
  final?: string;
  open: boolean;
}
interface SearchState {
  index: number;
  items: JsonObject[];
  queries: string[];
  sources: Map<string, SearchSource>;
  failed: number;
  /** Changed since the block was last sent (re-send at completion only then). */
  dirty: boolean;
}

type Any = any; // stream events are validated by shape at use: unknown fields and types pass

export class ResponsesTranslator {
  /** Events produced by the last `handle` calls, drained by the caller. */
  readonly out: ProviderEvent[] = [];
  responseId: string | undefined;
  /** A terminal event was handled (completed, incomplete, failed, error). */
  terminal = false;
  /** The response completed normally (only then may storage chain on it). */
  completed = false;
  /** Visible output arrived (a retry after it could duplicate text). */
  hasOutput = false;
  private next = 0;
  private texts = new Map<string, TextState>();
  private lastTextItem: string | undefined;
  private lastTextPart = -1;
  private lastText: TextState | undefined;
  private reasoning = new Map<string, ThinkingState>();
  private tools = new Map<string, ToolState>();
  private search: SearchState | undefined;
  private toolCalls = 0;
  private refused = false;

  constructor(private readonly providerId: string) {}

  handle(ev: Any): void {
    switch (ev.type) {
      case 'response.output_text.delta':
      case 'response.refusal.delta': {
        const st = this.lastTextItem === ev.item_id && this.lastTextPart === ev.content_index ? this.lastText! : this.textState(ev.item_id, ev.content_index, ev.type === 'response.refusal.delta');
        st.parts.push(ev.delta);
        this.out.push({ type: 'text_delta', index: st.index, text: ev.delta });
        return;
      }
      case 'response.function_call_arguments.delta': {
        const st = this.tools.get(ev.item_id) ?? this.openTool(ev.item_id, ev.item_id, '');
        st.parts.push(ev.delta);
        this.out.push({ type: 'tool_input_delta', index: st.index, json: ev.delta });
        return;
      }
      case 'response.reasoning_summary_text.delta':
      case 'response.reasoning_text.delta':
        return this.thinkingDelta(ev);
      case 'response.created':
        this.responseId = ev.response?.id ?? this.responseId;
        return;
      case 'response.output_item.added':
        return this.itemAdded(ev.item);
      case 'response.content_part.added':
        if (ev.part?.type === 'output_text' || ev.part?.type === 'refusal') this.textState(ev.item_id, ev.content_index, ev.part.type === 'refusal');
        return;
      case 'response.output_text.annotation.added':
        this.addAnnotation(this.textState(ev.item_id, ev.content_index, false), ev.annotation);
        return;
      case 'response.content_part.done':
        return this.closeText(ev.item_id, ev.content_index, ev.part);
      case 'response.function_call_arguments.done': {
        const st = this.tools.get(ev.item_id);
        if (st && typeof ev.arguments === 'string') st.final = ev.arguments;
        return;
      }
      case 'response.output_item.done':
        return this.itemDone(ev.item);
      case 'response.completed':
        return this.complete(ev.response);
      case 'response.incomplete': {
        const reason = ev.response?.incomplete_details?.reason ?? 'unknown';
        this.emitUsage(ev.response?.usage);
        const code = reason === 'max_output_tokens' ? 'max_tokens' : reason === 'content_filter' ? 'content_filter' : 'incomplete';
        return this.fail({ code, retryable: false, message: `the response is incomplete (${reason})` });
      }
      case 'response.failed': {
        const err = ev.response?.error;
        return this.fail(classifyStreamError(err?.code, err?.message ?? 'the response failed'));
      }
      case 'error':
        return this.fail(classifyStreamError(ev.code, ev.message ?? 'the provider reported an error'));
    }
  }

  /** The stream ended without a terminal event (a clean but early EOF). */
  endedEarly(): void {
    if (this.terminal) return;
    this.fail({ code: 'network', retryable: !this.hasOutput, message: 'the stream ended before the response was complete' });
  }

  private fail(error: ProviderErrorInfo): void {
    this.terminal = true;
    this.out.push({ type: 'error', error });
  }

  private allocate(): number {
    this.hasOutput = true;
    return this.next++;
  }

  private textState(itemId: string, part: number, refusal: boolean): TextState {
    const key = `${itemId}\u0000${part}`;
    let st = this.texts.get(key);
    if (!st) {
      st = { index: this.allocate(), parts: [], citations: [], refusal, open: true };
      this.texts.set(key, st);
      this.out.push({ type: 'block_start', index: st.index, block: { type: 'text' } });
    }
    if (refusal) st.refusal = true;
    this.lastTextItem = itemId;
    this.lastTextPart = part;
    this.lastText = st;
    return st;
  }

  private closeText(itemId: string, part: number, wire: Any): void {
    let st = this.texts.get(`${itemId}\u0000${part}`);
    // A part seen only in its final form (no streamed deltas) still becomes a block.
    if (!st && (wire?.type === 'output_text' || wire?.type === 'refusal')) st = this.textState(itemId, part, wire.type === 'refusal');
    if (!st || !st.open) return;
    st.open = false;
    if (st.refusal) this.refused = true;
    const final = typeof wire?.text === 'string' ? wire.text : typeof wire?.refusal === 'string' ? wire.refusal : st.parts.join('');
    if (Array.isArray(wire?.annotations) && wire.annotations.length) {
      st.citations = [];
      for (const a of wire.annotations) this.addAnnotation(st, a);
    }
    const block: ContentBlock = st.citations.length ? { type: 'text', text: final, citations: st.citations } : { type: 'text', text: final };
    this.out.push({ type: 'block_end', index: st.index, block });
  }

  private addAnnotation(st: TextState, a: Any): void {
    if (a?.type !== 'url_citation' || typeof a.url !== 'string') return;
    st.citations.push(a.title ? { url: a.url, title: a.title } : { url: a.url });
    const s = this.search;
    if (!s) return;
    const known = s.sources.get(a.url);
    if (!known) s.sources.set(a.url, { title: a.title || a.url, url: a.url });
    else if (a.title && known.title !== a.title) known.title = a.title;
    else return;
    s.dirty = true;
  }

  private thinkingDelta(ev: Any): void {
    const st = this.thinkingState(ev.item_id);
    if (st.index === undefined) {
      st.index = this.allocate();
      this.out.push({ type: 'block_start', index: st.index, block: { type: 'thinking' } });
    }
    const si = ev.summary_index ?? ev.content_index ?? 0;
    if (si !== st.summaryIndex) {
      st.summaryIndex = si;
      if (st.parts.length) {
        st.parts.push('\n\n');
        this.out.push({ type: 'thinking_delta', index: st.index, text: '\n\n' });
      }
    }
    st.parts.push(ev.delta);
    this.out.push({ type: 'thinking_delta', index: st.index, text: ev.delta });
  }

  private thinkingState(itemId: string): ThinkingState {
    let st = this.reasoning.get(itemId);
    if (!st) {
      st = { index: undefined, parts: [], summaryIndex: 0 };
      this.reasoning.set(itemId, st);
    }
    return st;
  }

  private openTool(itemId: string, callId: string, name: string): ToolState {
    const st: ToolState = { index: this.allocate(), callId, name, parts: [], open: true };
    this.tools.set(itemId, st);
    this.out.push({ type: 'block_start', index: st.index, block: { type: 'tool_call', id: callId, name } });
    return st;
  }

  private itemAdded(item: Any): void {
    if (!item || typeof item.id !== 'string') return;
    if (item.type === 'function_call') {
      if (!this.tools.has(item.id)) this.openTool(item.id, item.call_id ?? item.id, item.name ?? '');
    } else if (item.type === 'reasoning') this.thinkingState(item.id);
    else if (item.type === 'web_search_call') this.searchState();
  }

  private itemDone(item: Any): void {
    if (!item) return;
    switch (item.type) {
      case 'message':
        (item.content ?? []).forEach((part: Any, i: number) => this.closeText(item.id, i, part));
        return;
      case 'reasoning':
        return this.closeReasoning(item);
      case 'function_call':
        return this.closeTool(item);
      case 'web_search_call':
        return this.addSearch(item);
    }
  }

  private closeReasoning(item: Any): void {
    const st = this.thinkingState(item.id);
    const summary = Array.isArray(item.summary) ? item.summary : [];
    const text = st.parts.length ? st.parts.join('') : summary.map((s: Any) => s?.text ?? '').filter(Boolean).join('\n\n');
    const providerData: JsonObject = { api: 'responses', id: item.id, summary };
    if (typeof item.encrypted_content === 'string') providerData.encrypted_content = item.encrypted_content;
    const index = st.index ?? this.allocate();
    st.index = index;
    this.out.push({ type: 'block_end', index, block: { type: 'thinking', thinking: text, provider: this.providerId, providerData } });
    this.reasoning.delete(item.id);
  }

  private closeTool(item: Any): void {
    const st = this.tools.get(item.id) ?? this.openTool(item.id, item.call_id ?? item.id, item.name ?? '');
    if (!st.open) return;
    st.open = false;
    this.toolCalls++;
    const args: string = typeof item.arguments === 'string' ? item.arguments : (st.final ?? st.parts.join(''));
    const parsed = parseToolInput(args);
    const block: ContentBlock = parsed.ok
      ? { type: 'tool_call', id: item.call_id ?? st.callId, name: item.name ?? st.name, input: parsed.value as JsonObject }
      : // Kept raw so the model sees what it sent; the empty input fails validation and goes back as an error result.
        { type: 'tool_call', id: item.call_id ?? st.callId, name: item.name ?? st.name, input: {}, providerData: { rawArguments: args, parseError: parsed.error } };
    this.out.push({ type: 'block_end', index: st.index, block });
  }

  private searchState(): SearchState {
    return (this.search ??= { index: this.allocate(), items: [], queries: [], sources: new Map(), failed: 0, dirty: false });
  }

  private addSearch(item: Any): void {
    const s = this.searchState();
    const action = item.action ?? {};
    s.items.push({ type: 'web_search_call', id: item.id, status: item.status ?? 'completed', action });
    if (item.status === 'failed') s.failed++;
    for (const q of [action.query, ...(Array.isArray(action.queries) ? action.queries : [])]) if (typeof q === 'string' && q && !s.queries.includes(q)) s.queries.push(q);
    if (Array.isArray(action.sources)) for (const src of action.sources) if (typeof src?.url === 'string' && !s.sources.has(src.url)) s.sources.set(src.url, { title: src.title || src.url, url: src.url });
    if (typeof action.url === 'string' && !s.sources.has(action.url)) s.sources.set(action.url, { title: action.url, url: action.url });
    this.emitSearch(true);
  }

  private emitSearch(force: boolean): void {
    const s = this.search;
    if (!s || s.items.length === 0 || (!force && !s.dirty)) return;
    s.dirty = false;
    const block: ContentBlock = {
      type: 'hosted_search',
      provider: this.providerId,
      id: String(s.items[0]!.id),
      queries: [...s.queries],
      sources: [...s.sources.values()].map((x) => ({ ...x })),
      status: s.failed === s.items.length ? 'failed' : 'completed',
      providerData: { items: s.items.map((x) => ({ ...x })) },
    };
    this.out.push({ type: 'block_end', index: s.index, block });
  }

  /** Close what is still open at completion (a server that skips `.done` events). */
  private closeOpen(): void {
    for (const [key, st] of this.texts) if (st.open) this.closeText(key.slice(0, key.indexOf('\u0000')), Number(key.slice(key.indexOf('\u0000') + 1)), undefined);
    for (const [id, st] of this.reasoning) if (st.index !== undefined) this.closeReasoning({ id, summary: [] });
    for (const [id, st] of this.tools) if (st.open) this.closeTool({ id, call_id: st.callId, name: st.name });
  }

  private complete(response: Any): void {
    this.closeOpen();
    this.emitSearch(false);
    this.responseId = response?.id ?? this.responseId;
    this.emitUsage(response?.usage);
    const stopReason: StopReason = this.toolCalls > 0 ? 'tool_use' : this.refused ? 'refusal' : 'end';
    this.terminal = true;
    this.completed = true;
    this.out.push(this.responseId ? { type: 'done', stopReason, responseId: this.responseId } : { type: 'done', stopReason });
  }

  private emitUsage(u: Any): void {
    if (!u || typeof u.input_tokens !== 'number') return;
    this.out.push({ type: 'usage', usage: responsesUsage(u) });
  }
}

/** OpenAI counts cached tokens inside input_tokens; ours are disjoint (input excludes cache reads). */
export function responsesUsage(u: Any): Usage {
  const cached = u.input_tokens_details?.cached_tokens ?? 0;
  const usage: Usage = { inputTokens: Math.max(0, u.input_tokens - cached), outputTokens: u.output_tokens ?? 0 };
  if (cached) usage.cacheReadTokens = cached;
  const reasoning = u.output_tokens_details?.reasoning_tokens;
  if (reasoning) usage.reasoningTokens = reasoning;
  return usage;
}
