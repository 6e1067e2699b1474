/**
 * Builds a Chat Completions request: the system prompt as the first message, history as
 * user / assistant (with `tool_calls`) / tool messages, tools, tool choice and usage reporting.
 *
 * Chat Completions has nowhere to put reasoning, so no thinking is sent back (ours included; a
 * DeepSeek-style endpoint even refuses `reasoning_content` in input). Tool messages take text
 * only: images a tool returned follow the round's tool messages in one user message.
 */
import type { Message, ProviderRequest } from '../../plugin-api.js';
import { mapToolCallIds, normalizeToolCallId } from '../../lib/provider-shared/history.js';
import type { ResolvedConfig } from './config.js';
import { effortForBudget, leanEffort } from './config.js';
import { fitMedia, openaiMediaLimits } from '../../lib/provider-shared/media-limits.js';
import { documentFile, documentText, foreignThinkingText, imagePlaceholder, imageUrl, resultText, systemText, userText } from './history-common.js';

type Obj = Record<string, unknown>;

export interface ChatBuild {
  providerId: string;
  config: ResolvedConfig;
  reasoning: boolean;
  /**
   * Ask for hosted web search: `web_search_options: {}` (the guide's minimal form; only the
   * search models take it, the probe decides when to send it).
   */
  search?: boolean;
}

/** OpenAI caps chat tool-call ids at 40 characters. */
const CHAT_ID_MAX = 40;

export function buildChatBody(request: ProviderRequest, b: ChatBuild): Obj {
  // Images and PDFs over the API's limits go as notes, never as a request that always fails.
  const messages = mapToolCallIds(fitMedia(request.messages, openaiMediaLimits(b.config.official)), (id) => normalizeToolCallId(id, CHAT_ID_MAX));
  const wire: Obj[] = [];
  const sys = systemText(request.system);
  if (sys) wire.push({ role: 'system', content: sys });
  wire.push(...toChatMessages(messages, b));
  const body: Obj = {
    model: request.model,
    messages: wire,
    stream: true,
    stream_options: { include_usage: true },
  };
  if (request.tools.length) {
    body.tools = request.tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.inputSchema } }));
    const choice = request.toolChoice;
    if (choice) body.tool_choice = choice === 'any' ? 'required' : typeof choice === 'object' ? { type: 'function', function: { name: choice.name } } : choice;
  }
  const maxTokens = request.maxOutputTokens ?? b.config.maxOutputTokens;
  // OpenAI's reasoning models only take max_completion_tokens; compatible servers know max_tokens.
  if (maxTokens) body[b.config.official ? 'max_completion_tokens' : 'max_tokens'] = maxTokens;
  const effort = request.lean && b.reasoning && b.config.official ? leanEffort(b.config.reasoningEffort) : (b.config.reasoningEffort ?? (b.reasoning && b.config.official ? effortForBudget(request.thinkingBudget) : undefined));
  if (effort) body.reasoning_effort = effort;
  if (b.config.official) body.prompt_cache_key = request.conversationId;
  if (b.search) body.web_search_options = {};
  return body;
}

export function toChatMessages(messages: Message[], b: ChatBuild): Obj[] {
  const out: Obj[] = [];
  for (const m of messages) {
    if (m.role === 'user') {
      const parts: Obj[] = [];
      let media = false;
      for (const c of m.content) {
        const text = userText(c);
        if (text) parts.push({ type: 'text', text });
        else if (c.type === 'image') {
          const url = imageUrl(c);
          media ||= !!url;
          parts.push(url ? { type: 'image_url', image_url: { url } } : { type: 'text', text: imagePlaceholder(c) });
        } else if (c.type === 'document') {
          // Chat Completions takes PDFs as `file` parts (OpenAI's own endpoint only).
          const file = documentFile(c, b.config.official);
          media ||= !!file;
          parts.push(file ? { type: 'file', file: { filename: file.filename, file_data: file.fileData } } : { type: 'text', text: documentText(c) });
        }
      }
      if (!parts.length) continue;
      // Plain string content without images or files: some compatible servers accept nothing else.
      out.push({ role: 'user', content: media ? parts : parts.map((p) => p.text as string).join('\n\n') });
    } else if (m.role === 'assistant') {
      const texts: string[] = [];
      const calls: Obj[] = [];
      for (const c of m.content) {
        if (c.type === 'text' && c.text) texts.push(c.text);
        else if (c.type === 'thinking' && c.provider !== b.providerId) {
          const t = foreignThinkingText(c, b.providerId, b.config.foreignThinking);
          if (t) texts.push(t);
        } else if (c.type === 'tool_call') {
          const raw = c.providerData?.rawArguments;
          calls.push({ id: c.id, type: 'function', function: { name: c.name, arguments: typeof raw === 'string' ? raw : JSON.stringify(c.input) } });
        }
      }
      if (!texts.length && !calls.length) continue;
      const msg: Obj = { role: 'assistant', content: texts.length ? texts.join('\n\n') : null };
      if (calls.length) msg.tool_calls = calls;
      out.push(msg);
    } else if (m.role === 'tool') {
      const images: Obj[] = [];
      for (const r of m.content) {
        if (r.type !== 'tool_result') continue;
        out.push({ role: 'tool', tool_call_id: r.toolCallId, content: resultText(r) });
        for (const c of r.content) {
          if (c.type !== 'image') continue;
          const url = imageUrl(c);
          if (!images.length) images.push({ type: 'text', text: 'Images returned by the tool calls above:' });
          images.push(url ? { type: 'image_url', image_url: { url } } : { type: 'text', text: imagePlaceholder(c) });
        }
      }
      if (images.length) out.push({ role: 'user', content: images });
    }
  }
  return out;
}
