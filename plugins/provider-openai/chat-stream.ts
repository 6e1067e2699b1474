/**
 * Turns Chat Completions chunks into normalized provider events.
 *
 * `delta.content` → text; `delta.reasoning_content` (DeepSeek) or `delta.reasoning` (vLLM,
 * OpenRouter) → thinking; `delta.refusal` → text with a refusal stop; `delta.tool_calls` →
 * tool calls keyed by their `index` (the id and name come once, then argument fragments). A
 * change of kind closes the open text/thinking block, so blocks stay in the order they were
 * written. Usage comes from the extra `stream_options.include_usage` chunk (`choices: []`), so
 * blocks close and `done` is sent when the stream ends, not at `finish_reason`.
 *
 * Hosted search (`web_search_options` on a search model): citations arrive as `annotations`,
 * `{type:'url_citation', url_citation:{url, title, start_index, end_index}}` (the SDK's
 * ChatCompletionMessage.Annotation), streamed on `delta.annotations` of a chunk of their own
 * after the text (vercel/ai openai-chat-language-model.test.ts "should stream
 * annotations/citations"); some routes repeat them or put the list on a final
 * `message.annotations`, so they are de-duplicated. They become `citations` on the text block
 * they arrived in, and at the end one hosted_search block with every cited source (Chat
 * reports no queries).
 */
import type { Citation, ContentBlock, JsonObject, ProviderEvent, SearchSource, StopReason, Usage } from '../../plugin-api.js';
import { parseToolInput } from '../../lib/provider-shared/history.js';

/** Delta fields this translator reads (a test checks the mock sends each of them). */
export const HANDLED_CHAT_FIELDS = ['content', 'reasoning_content', 'reasoning', 'refusal', 'tool_calls', 'annotations', 'finish_reason', 'usage'] as const;

interface Run {
  index: number;
  parts: string[];
  citations?: Citation[];
}
interface ToolState {
  index: number;
  id: string;
  name: string;
  parts: string[];
}

type Any = any; // chunks from compatible servers vary; fields are checked at use

export class ChatTranslator {
  readonly out: ProviderEvent[] = [];
  hasOutput = false;
  finishReason: string | undefined;
  responseId: string | undefined;
  private next = 0;
  private text: Run | undefined;
  private thinking: Run | undefined;
  private tools = new Map<number, ToolState>();
  private openTools: ToolState[] = [];
  private lastTool: ToolState | undefined;
  private usage: Usage | undefined;
  private refused = false;
  /** Cited sources by URL, and the annotations seen (url + span), for de-duplication. */
  private sources: Map<string, SearchSource> | undefined;
  private seenAnnotations: Set<string> | undefined;

  constructor(private readonly providerId: string) {}

  handle(chunk: Any): void {
    const choice = chunk.choices?.[0];
    if (choice) {
      const d = choice.delta;
      if (d) {
        const c = d.content;
        if (c) {
          const t = this.text ?? this.openText();
          t.parts.push(c);
          this.out.push({ type: 'text_delta', index: t.index, text: c });
        }
        const r = d.reasoning_content ?? d.reasoning;
        if (r && typeof r === 'string') this.thinkingDelta(r);
        if (d.refusal) {
          this.refused = true;
          const t = this.text ?? this.openText();
          t.parts.push(d.refusal);
          this.out.push({ type: 'text_delta', index: t.index, text: d.refusal });
        }
        if (d.tool_calls) for (const tc of d.tool_calls) this.toolDelta(tc);
        if (d.annotations) this.annotations(d.annotations);
      }
      if (choice.message?.annotations) this.annotations(choice.message.annotations);
      if (choice.finish_reason) this.finishReason = choice.finish_reason;
    }
    if (chunk.usage) this.usage = chatUsage(chunk.usage);
    if (chunk.id && !this.responseId) this.responseId = chunk.id;
  }

  /** The stream ended: close blocks and report, or fail when no chunk finished the choice. */
  end(): void {
    if (this.finishReason === undefined) {
      this.out.push({ type: 'error', error: { code: 'network', retryable: !this.hasOutput, message: 'the stream ended before the response was complete' } });
      return;
    }
    this.closeThinking();
    this.closeText();
    for (const t of this.openTools) this.closeTool(t);
    this.openTools = [];
    this.emitSearch();
    if (this.usage) this.out.push({ type: 'usage', usage: this.usage });
    const stopReason = mapFinish(this.finishReason, this.tools.size > 0, this.refused);
    this.out.push(this.responseId ? { type: 'done', stopReason, responseId: this.responseId } : { type: 'done', stopReason });
  }

  private allocate(): number {
    this.hasOutput = true;
    return this.next++;
  }

  private openText(): Run {
    this.closeThinking();
    this.text = { index: this.allocate(), parts: [] };
    this.out.push({ type: 'block_start', index: this.text.index, block: { type: 'text' } });
    return this.text;
  }

  private closeText(): void {
    const t = this.text;
    if (!t) return;
    this.text = undefined;
    const block: ContentBlock = t.citations?.length ? { type: 'text', text: t.parts.join(''), citations: t.citations } : { type: 'text', text: t.parts.join('') };
    this.out.push({ type: 'block_end', index: t.index, block });
  }

  private annotations(list: Any): void {
    if (!Array.isArray(list)) return;
    for (const a of list) {
      if (a?.type !== 'url_citation') continue;
      // OpenAI nests the fields under `url_citation`; some compatible routes send them flat.
      const c = a.url_citation ?? a;
      if (typeof c?.url !== 'string' || !c.url) continue;
      const title = typeof c.title === 'string' && c.title ? c.title : undefined;
      const key = `${c.url}\u0000${c.start_index ?? ''}\u0000${c.end_index ?? ''}`;
      const seen = (this.seenAnnotations ??= new Set());
      if (seen.has(key)) continue;
      seen.add(key);
      const sources = (this.sources ??= new Map());
      const known = sources.get(c.url);
      if (!known) sources.set(c.url, { title: title ?? c.url, url: c.url });
      else if (title && known.title === c.url) known.title = title;
      // The open text takes the citation; one that comes after its block ended still counts as a source.
      const t = this.text;
      if (t) (t.citations ??= []).push(title ? { url: c.url, title } : { url: c.url });
    }
  }

  private emitSearch(): void {
    if (!this.sources?.size) return;
    const block: ContentBlock = { type: 'hosted_search', provider: this.providerId, queries: [], sources: [...this.sources.values()], status: 'completed' };
    if (this.responseId) block.id = this.responseId;
    this.out.push({ type: 'block_end', index: this.allocate(), block });
  }

  private thinkingDelta(r: string): void {
    let t = this.thinking;
    if (!t) {
      this.closeText();
      t = this.thinking = { index: this.allocate(), parts: [] };
      this.out.push({ type: 'block_start', index: t.index, block: { type: 'thinking' } });
    }
    t.parts.push(r);
    this.out.push({ type: 'thinking_delta', index: t.index, text: r });
  }

  private closeThinking(): void {
    const t = this.thinking;
    if (!t) return;
    this.thinking = undefined;
    // No signature exists in Chat Completions: the block is for display and is never sent back.
    this.out.push({ type: 'block_end', index: t.index, block: { type: 'thinking', thinking: t.parts.join(''), provider: this.providerId } });
  }

  private toolDelta(tc: Any): void {
    // Servers that omit `index` (some compatible ones) send each call whole, or continue the last.
    let st = typeof tc.index === 'number' ? this.tools.get(tc.index) : tc.id ? undefined : this.lastTool;
    if (!st) {
      this.closeThinking();
      this.closeText();
      const key = typeof tc.index === 'number' ? tc.index : this.tools.size + 1000;
      st = { index: this.allocate(), id: tc.id || `call_${this.next}_${Date.now().toString(36)}`, name: tc.function?.name ?? '', parts: [] };
      this.tools.set(key, st);
      this.openTools.push(st);
      this.out.push({ type: 'block_start', index: st.index, block: { type: 'tool_call', id: st.id, name: st.name } });
    } else if (!st.name && tc.function?.name) st.name = tc.function.name;
    this.lastTool = st;
    const args = tc.function?.arguments;
    if (args) {
      st.parts.push(args);
      this.out.push({ type: 'tool_input_delta', index: st.index, json: args });
    }
  }

  private closeTool(t: ToolState): void {
    const args = t.parts.join('');
    const parsed = parseToolInput(args);
    const block: ContentBlock = parsed.ok
      ? { type: 'tool_call', id: t.id, name: t.name, input: parsed.value as JsonObject }
      : { type: 'tool_call', id: t.id, name: t.name, input: {}, providerData: { rawArguments: args, parseError: parsed.error } };
    this.out.push({ type: 'block_end', index: t.index, block });
  }
}

function mapFinish(reason: string, hadTools: boolean, refused: boolean): StopReason {
  if (reason === 'length') return 'max_tokens';
  if (reason === 'content_filter' || refused) return 'refusal';
  // Some compatible servers say "stop" after tool calls.
  if (reason === 'tool_calls' || reason === 'function_call' || hadTools) return 'tool_use';
  return 'end';
}

/** prompt_tokens includes cached tokens; ours are disjoint (input excludes cache reads). */
export function chatUsage(u: Any): Usage {
  const cached = u.prompt_tokens_details?.cached_tokens ?? u.prompt_cache_hit_tokens ?? 0;
  const usage: Usage = { inputTokens: Math.max(0, (u.prompt_tokens ?? 0) - cached), outputTokens: u.completion_tokens ?? 0 };
  if (cached) usage.cacheReadTokens = cached;
  const reasoning = u.completion_tokens_details?.reasoning_tokens;
  if (reasoning) usage.reasoningTokens = reasoning;
  return usage;
}
