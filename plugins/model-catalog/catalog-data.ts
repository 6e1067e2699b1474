/**
 * Known models: context window, output limit, thinking support and USD prices per million
 * tokens. Providers and custom-provider settings may list more; those take precedence.
 */
import type { ModelInfo } from '../../plugin-api.js';

export const KNOWN_MODELS: Record<string, ModelInfo[]> = {
  claude_code: [
    { id: 'claude-opus-4-1', name: 'Claude Opus 4.1', contextWindow: 200_000, maxOutputTokens: 32_000, thinking: true, cache: true, price: { input: 15, output: 75, cacheRead: 1.5, cacheWrite: 18.75 } },
    { id: 'claude-sonnet-4-6', name: 'Claude Sonnet 4.6', contextWindow: 200_000, maxOutputTokens: 64_000, thinking: true, cache: true, price: { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 } },
    { id: 'claude-sonnet-4-5', name: 'Claude Sonnet 4.5', contextWindow: 200_000, maxOutputTokens: 64_000, thinking: true, cache: true, price: { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 } },
    { id: 'claude-haiku-4-5', name: 'Claude Haiku 4.5', contextWindow: 200_000, maxOutputTokens: 64_000, thinking: true, cache: true, price: { input: 1, output: 5, cacheRead: 0.1, cacheWrite: 1.25 } },
  ],
  codex: [
    { id: 'gpt-5', name: 'GPT-5', contextWindow: 400_000, maxOutputTokens: 128_000, thinking: true, cache: true, price: { input: 1.25, output: 10, cacheRead: 0.125 } },
    { id: 'gpt-5-mini', name: 'GPT-5 mini', contextWindow: 400_000, maxOutputTokens: 128_000, thinking: true, cache: true, price: { input: 0.25, output: 2, cacheRead: 0.025 } },
    { id: 'gpt-4.1', name: 'GPT-4.1', contextWindow: 1_047_576, maxOutputTokens: 32_768, thinking: false, cache: true, price: { input: 2, output: 8, cacheRead: 0.5 } },
    { id: 'o4-mini', name: 'o4-mini', contextWindow: 200_000, maxOutputTokens: 100_000, thinking: true, cache: true, price: { input: 1.1, output: 4.4, cacheRead: 0.275 } },
  ],
  gemini: [
    { id: 'gemini-2.5-pro', name: 'Gemini 2.5 Pro', contextWindow: 1_048_576, maxOutputTokens: 65_536, thinking: true, cache: true, price: { input: 1.25, output: 10, cacheRead: 0.31 } },
    { id: 'gemini-2.5-flash', name: 'Gemini 2.5 Flash', contextWindow: 1_048_576, maxOutputTokens: 65_536, thinking: true, cache: true, price: { input: 0.3, output: 2.5, cacheRead: 0.075 } },
  ],
};

/** What an unknown model is assumed to support: small enough to be safe everywhere. */
export const SAFE_DEFAULTS: Required<Pick<ModelInfo, 'contextWindow' | 'maxOutputTokens' | 'thinking' | 'cache'>> = {
  contextWindow: 128_000,
  maxOutputTokens: 8_192,
  thinking: false,
  cache: false,
};
