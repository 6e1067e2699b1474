/**
 * Builds a Responses API request from our normalized request: history as input items, tools,
 * tool choice, reasoning, storage chaining and the hosted search tool.
 *
 * Items we send back follow what the API returned, minus server ids (as the Codex CLI does), so
 * they are valid with `store: false`: our reasoning goes back as `{type:'reasoning', summary,
 * encrypted_content}` (we ask reasoning models for `reasoning.encrypted_content`), tool calls as
 * `function_call` + `function_call_output`, hosted searches as `web_search_call`.
 */
import type { JsonObject, Message, ProviderRequest, ThinkingBlock, ToolResultBlock } from '../../plugin-api.js';
import { mapToolCallIds, normalizeToolCallId } from '../../lib/provider-shared/history.js';
import type { Continuation } from './chains.js';
import type { ResolvedConfig } from './config.js';
import { effortForBudget, leanEffort } from './config.js';
import { fitMedia, openaiMediaLimits } from '../../lib/provider-shared/media-limits.js';
import { documentFile, documentText, foreignThinkingText, imagePlaceholder, imageUrl, resultText, systemText, userText } from './history-common.js';

export interface ResponsesBuild {
  providerId: string;
  config: ResolvedConfig;
  /** The model reasons (reasoning parameters and items apply). */
  reasoning: boolean;
  /** Offer the hosted web_search tool. */
  search: boolean;
  continuation?: Continuation;
}

type Item = Record<string, unknown>;

export function buildResponsesBody(request: ProviderRequest, b: ResponsesBuild): Item {
  const history = b.continuation ? b.continuation.newMessages : request.messages;
  // Images and PDFs over the API's limits go as notes, never as a request that always fails.
  const messages = mapToolCallIds(fitMedia(history, openaiMediaLimits(b.config.official)), (id) => normalizeToolCallId(id, 64));
  const body: Item = {
    model: request.model,
    input: toResponsesInput(messages, b),
    stream: true,
    store: b.config.store && !request.lean,
  };
  const instructions = systemText(request.system);
  // Instructions never carry over through previous_response_id: send them every time.
  if (instructions) body.instructions = instructions;
  if (b.continuation) body.previous_response_id = b.continuation.previousResponseId;
  const tools: Item[] = request.tools.map((t) => ({ type: 'function', name: t.name, description: t.description, parameters: t.inputSchema, strict: false }));
  if (b.search) tools.push({ type: 'web_search' });
  if (tools.length) {
    body.tools = tools;
    const choice = request.toolChoice;
    if (choice) body.tool_choice = choice === 'any' ? 'required' : typeof choice === 'object' ? { type: 'function', name: choice.name } : choice;
  }
  const maxTokens = request.maxOutputTokens ?? b.config.maxOutputTokens;
  if (maxTokens) body.max_output_tokens = maxTokens;
  const include: string[] = [];
  if (b.reasoning) {
    const effort = request.lean ? leanEffort(b.config.reasoningEffort) : (b.config.reasoningEffort ?? effortForBudget(request.thinkingBudget));
    const reasoning: Item = {};
    if (effort) reasoning.effort = effort;
    if (b.config.reasoningSummary !== 'off') reasoning.summary = b.config.reasoningSummary;
    if (Object.keys(reasoning).length) body.reasoning = reasoning;
    include.push('reasoning.encrypted_content');
  } else if (b.config.reasoningEffort) {
    // Explicitly configured for a model we do not know to reason: the user knows better.
    body.reasoning = { effort: b.config.reasoningEffort };
  }
  if (b.search) include.push('web_search_call.action.sources');
  if (include.length) body.include = include;
  if (b.config.official) body.prompt_cache_key = request.conversationId;
  return body;
}

export function toResponsesInput(messages: Message[], b: ResponsesBuild): Item[] {
  const out: Item[] = [];
  for (const m of messages) {
    if (m.role === 'user') {
      const content: Item[] = [];
      for (const c of m.content) {
        const text = userText(c);
        if (text) content.push({ type: 'input_text', text });
        else if (c.type === 'image') {
          const url = imageUrl(c);
          content.push(url ? { type: 'input_image', image_url: url, detail: 'auto' } : { type: 'input_text', text: imagePlaceholder(c) });
        } else if (c.type === 'document') {
          const file = documentFile(c, b.config.official);
          content.push(file ? { type: 'input_file', filename: file.filename, file_data: file.fileData } : { type: 'input_text', text: documentText(c) });
        }
      }
      if (content.length) out.push({ role: 'user', content });
    } else if (m.role === 'assistant') {
      for (const c of m.content) {
        if (c.type === 'text') {
          if (c.text) out.push(assistantText(c.text));
        } else if (c.type === 'thinking') {
          const item = reasoningItem(c, b);
          if (typeof item === 'string') out.push(assistantText(item));
          else if (item) out.push(item);
        } else if (c.type === 'tool_call') {
          const raw = c.providerData?.rawArguments;
          out.push({ type: 'function_call', call_id: c.id, name: c.name, arguments: typeof raw === 'string' ? raw : JSON.stringify(c.input) });
        } else if (c.type === 'hosted_search' && c.provider === b.providerId) {
          const items = c.providerData?.items;
          if (Array.isArray(items)) for (const it of items) out.push(searchItem(it as JsonObject));
        }
      }
    } else if (m.role === 'tool') {
      for (const r of m.content) if (r.type === 'tool_result') out.push(functionOutput(r));
    }
  }
  return out;
}

function assistantText(text: string): Item {
  return { type: 'message', role: 'assistant', content: [{ type: 'output_text', text }] };
}

/** Our reasoning item (verifiable only with its encrypted content), another's thinking as text, or nothing. */
function reasoningItem(block: ThinkingBlock, b: ResponsesBuild): Item | string | undefined {
  if (block.provider !== b.providerId) return foreignThinkingText(block, b.providerId, b.config.foreignThinking);
  const pd = block.providerData;
  if (!b.reasoning || pd?.api !== 'responses' || typeof pd.encrypted_content !== 'string') return undefined;
  return { type: 'reasoning', summary: Array.isArray(pd.summary) ? pd.summary : [], encrypted_content: pd.encrypted_content };
}

function searchItem(it: JsonObject): Item {
  const a = (it.action ?? {}) as JsonObject;
  // Only the fields the API takes back; `sources` is output-only detail.
  const action: Item = { type: a.type ?? 'search' };
  for (const k of ['query', 'url', 'pattern'] as const) if (typeof a[k] === 'string') action[k] = a[k];
  return { type: 'web_search_call', status: typeof it.status === 'string' ? it.status : 'completed', action };
}

function functionOutput(r: ToolResultBlock): Item {
  const images = r.content.filter((c) => c.type === 'image');
  if (images.length === 0) return { type: 'function_call_output', call_id: r.toolCallId, output: resultText(r) };
  const output: Item[] = [{ type: 'input_text', text: resultText(r) }];
  for (const img of images) {
    if (img.type !== 'image') continue;
    const url = imageUrl(img);
    output.push(url ? { type: 'input_image', image_url: url, detail: 'auto' } : { type: 'input_text', text: imagePlaceholder(img) });
  }
  return { type: 'function_call_output', call_id: r.toolCallId, output };
}
