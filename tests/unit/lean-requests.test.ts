/**
 * A lean side request (`ProviderRequest.lean`, set by `runtime.complete({ lean: true })` for
 * titles and memory extraction) sends no thinking, no hosted search, no cache breakpoints and no
 * server-side storage, whatever the settings ask for every other request.
 */
import { describe, expect, it } from 'vitest';
import type { ProviderRequest } from '../../plugin-api.js';
import { buildAnthropicRequest } from '../../plugins/provider-anthropic/request.js';
import { buildGeminiRequest } from '../../plugins/provider-gemini/request.js';
import { buildChatBody } from '../../plugins/provider-openai/chat-request.js';
import { buildResponsesBody } from '../../plugins/provider-openai/responses-request.js';
import { leanEffort, resolveConfig } from '../../plugins/provider-openai/config.js';

const request = (model: string, extra: Partial<ProviderRequest> = {}): ProviderRequest => ({
  model,
  system: [{ id: 'base', text: 'Write a title.', cache: true }],
  messages: [{ id: 'm1', role: 'user', content: [{ type: 'text', text: 'hello there' }], createdAt: 1 }],
  tools: [],
  options: {},
  conversationId: 'conv-lean',
  thinkingBudget: 8000,
  ...extra,
});

const hasCacheControl = (v: unknown): boolean => JSON.stringify(v).includes('cache_control');

describe('lean side requests', () => {
  it('Anthropic: no thinking, no web_search tool, no cache_control', () => {
    const cfg = { baseUrl: 'http://x', apiKey: 'k', cache: true, thinkingBudget: 8000, webSearch: {} };
    const full = buildAnthropicRequest(request('claude-sonnet-4-5'), cfg, 'claude_code', undefined) as unknown as Record<string, unknown>;
    expect(full.thinking).toBeDefined();
    expect(hasCacheControl(full)).toBe(true);
    expect(JSON.stringify(full.tools)).toContain('web_search');

    const lean = buildAnthropicRequest(request('claude-sonnet-4-5', { lean: true }), cfg, 'claude_code', undefined) as unknown as Record<string, unknown>;
    expect(lean.thinking).toBeUndefined();
    expect(hasCacheControl(lean)).toBe(false);
    expect(lean.tools).toBeUndefined();
  });

  it('Gemini: thinking off where the model allows it, no googleSearch', () => {
    const cfg = { baseUrl: 'http://x', apiKey: 'k', thinkingBudget: 8000, includeThoughts: true, webSearch: true, foreignThinking: 'drop' as const };
    const full = buildGeminiRequest(request('gemini-2.5-flash'), cfg, 'gemini', undefined) as Record<string, any>;
    expect(full.generationConfig?.thinkingConfig?.thinkingBudget).toBe(8000);
    expect(JSON.stringify(full.tools)).toContain('googleSearch');

    const lean = buildGeminiRequest(request('gemini-2.5-flash', { lean: true }), cfg, 'gemini', undefined) as Record<string, any>;
    expect(lean.generationConfig?.thinkingConfig).toEqual({ thinkingBudget: 0 });
    expect(lean.tools).toBeUndefined();
  });

  it('OpenAI Responses: store false, no web_search, the lowest common effort', () => {
    const r = resolveConfig({ id: 'codex', base: { apiKey: 'k', store: true, reasoningEffort: 'high' }, settings: undefined, env: {}, keyOptional: false });
    if (!r.ok) throw new Error(r.error);
    const full = buildResponsesBody(request('gpt-5'), { providerId: 'codex', config: r.config, reasoning: true, search: true });
    expect(full).toMatchObject({ store: true, reasoning: { effort: 'high' } });
    const lean = buildResponsesBody(request('gpt-5', { lean: true }), { providerId: 'codex', config: r.config, reasoning: true, search: false });
    expect(lean).toMatchObject({ store: false, reasoning: { effort: 'low' } });
    expect(JSON.stringify(lean.tools ?? [])).not.toContain('web_search');
  });

  it('OpenAI Chat Completions: the lowest common effort', () => {
    const r = resolveConfig({ id: 'codex', base: { apiKey: 'k', api: 'chat', reasoningEffort: 'xhigh' }, settings: undefined, env: {}, keyOptional: false });
    if (!r.ok) throw new Error(r.error);
    expect(buildChatBody(request('gpt-5'), { providerId: 'codex', config: r.config, reasoning: true }).reasoning_effort).toBe('xhigh');
    expect(buildChatBody(request('gpt-5', { lean: true }), { providerId: 'codex', config: r.config, reasoning: true }).reasoning_effort).toBe('low');
  });

  it('keeps an effort already at most low', () => {
    expect(leanEffort('minimal')).toBe('minimal');
    expect(leanEffort('none')).toBe('none');
    expect(leanEffort(undefined)).toBe('low');
    expect(leanEffort('medium')).toBe('low');
  });
});
