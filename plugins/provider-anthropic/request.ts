/**
 * ProviderRequest → the Messages API body: system blocks, tools (plus the native web search
 * server tool), tool_choice, thinking, max_tokens and prompt-cache breakpoints.
 *
 * Cache breakpoints (Anthropic allows 4): the last tool, the system prompt (parts marked
 * `cache`, else its last block), and the last block of the last two user turns. The prefix is
 * cached in the order tools → system → messages, so these four cover the stable head of the
 * request and the two most recent turns (the previous round's breakpoint is read, the new one
 * written).
 */
import type { ModelInfo, ProviderRequest, ToolSpec } from '../../plugin-api.js';
import { ANTHROPIC_MEDIA_LIMITS, fitMedia } from '../../lib/provider-shared/media-limits.js';
import { toAnthropicMessages, thinkingAllowed, type WireBlock, type WireMessage } from './history.js';
import { DEFAULT_MAX_TOKENS, MIN_THINKING_BUDGET, allowsForcedToolChoice, maxOutputFor, thinkingStyle } from './models.js';
import type { AnthropicConfig } from './settings.js';

export const MAX_CACHE_BREAKPOINTS = 4;
const CACHE = { type: 'ephemeral' } as const;
/** Room left for the answer when a thinking budget would otherwise eat all of max_tokens. */
const ANSWER_ROOM = 4096;
export const WEB_SEARCH_TOOL_TYPE = 'web_search_20250305';

/** A tool definition: a client tool `{name, description, input_schema}` or a server tool `{type, name, ...}`. */
export type WireTool = { [key: string]: unknown };

export interface WireRequest {
  model: string;
  max_tokens: number;
  messages: WireMessage[];
  system?: WireBlock[];
  tools?: WireTool[];
  tool_choice?: WireBlock;
  thinking?: WireBlock;
  stream: true;
}

function toolBlock(t: ToolSpec): WireTool {
  // The API insists on an object schema at the top.
  const schema = t.inputSchema.type ? t.inputSchema : { type: 'object', ...t.inputSchema };
  return { name: t.name, description: t.description, input_schema: schema };
}

function toolChoiceFor(choice: ProviderRequest['toolChoice'] | { type: 'tool'; name: string }, model: string): WireBlock | undefined {
  if (!choice) return undefined;
  let out: WireBlock;
  if (choice === 'auto' || choice === 'any' || choice === 'none') out = { type: choice };
  else out = { type: 'tool', name: choice.name };
  if ((out.type === 'any' || out.type === 'tool') && !allowsForcedToolChoice(model)) return { type: 'auto' };
  return out;
}

/** Build the body. `cfg` is the resolved configuration with request overrides applied. */
export function buildAnthropicRequest(req: ProviderRequest, cfg: AnthropicConfig, providerId: string, models: ModelInfo[] | undefined): WireRequest {
  const model = req.model;
  // Images and PDFs over the API's limits go as notes, never as a request that always fails.
  const messages = toAnthropicMessages(fitMedia(req.messages, ANTHROPIC_MEDIA_LIMITS), providerId);
  // A lean side request (a title) sets no cache breakpoint: writing a cache costs more than it saves once.
  const cache = cfg.cache && !req.lean;
  let breakpoints = MAX_CACHE_BREAKPOINTS;

  const tools: WireTool[] = req.tools.map(toolBlock);
  const toolChoice = tools.length ? toolChoiceFor(req.toolChoice, model) : undefined;
  if (cfg.webSearch && !req.lean && !req.tools.some((t) => t.name === 'web_search')) {
    tools.push({ type: WEB_SEARCH_TOOL_TYPE, name: 'web_search', ...(cfg.webSearch.maxUses ? { max_uses: cfg.webSearch.maxUses } : {}) });
  }
  if (cache && tools.length) {
    tools[tools.length - 1]!.cache_control = CACHE;
    breakpoints--;
  }

  const system: WireBlock[] = [];
  const marked: number[] = [];
  for (const part of req.system) {
    if (!part.text.trim()) continue; // the API refuses empty text blocks
    if (part.cache) marked.push(system.length);
    system.push({ type: 'text', text: part.text });
  }
  const userTurns: number[] = [];
  for (let i = messages.length - 1; i >= 0 && userTurns.length < 2; i--) if (messages[i]!.role === 'user') userTurns.push(i);

  if (cache) {
    const systemSlots = system.length ? 1 : 0;
    for (const i of userTurns.slice(0, Math.max(0, breakpoints - systemSlots))) {
      // Fresh copies of the turn and its last block: the converted messages are kept for the
      // next round (history.ts) and a block may be a raw one shared with stored history.
      const turn = messages[i]!;
      const content = turn.content.slice();
      content[content.length - 1] = { ...content[content.length - 1]!, cache_control: CACHE };
      messages[i] = { ...turn, content };
      breakpoints--;
    }
    if (system.length) {
      // Marked parts win; keep the last ones (the longest prefixes) when there are too many.
      const at = marked.length ? marked.slice(-Math.max(1, breakpoints)) : [system.length - 1];
      for (const i of at) system[i]!.cache_control = CACHE;
    }
  }

  // max_tokens: the request's, else settings', else a default; never above the model's limit.
  const limit = maxOutputFor(model, models);
  let maxTokens = req.maxOutputTokens ?? cfg.maxOutputTokens ?? DEFAULT_MAX_TOKENS;
  if (limit) maxTokens = Math.min(maxTokens, limit);

  let thinking: WireBlock | undefined;
  const budget = req.lean ? 0 : req.thinkingBudget || cfg.thinkingBudget || 0;
  const forced = toolChoice?.type === 'any' || toolChoice?.type === 'tool';
  // Forced tool use and thinking cannot be combined; neither can thinking and a tool turn that did not start with thinking.
  if (budget > 0 && !forced && thinkingAllowed(messages)) {
    if (thinkingStyle(model) === 'adaptive') thinking = { type: 'adaptive' };
    else {
      let budgetTokens = Math.max(MIN_THINKING_BUDGET, budget);
      if (maxTokens <= budgetTokens) maxTokens = budgetTokens + Math.min(ANSWER_ROOM, maxTokens);
      if (limit && maxTokens > limit) {
        maxTokens = limit;
        budgetTokens = Math.max(MIN_THINKING_BUDGET, Math.min(budgetTokens, limit - ANSWER_ROOM));
      }
      thinking = { type: 'enabled', budget_tokens: budgetTokens };
    }
  }

  const body: WireRequest = { model, max_tokens: maxTokens, messages, stream: true };
  if (system.length) body.system = system;
  if (tools.length) body.tools = tools;
  if (toolChoice) body.tool_choice = toolChoice;
  if (thinking) body.thinking = thinking;
  return body;
}
