/**
 * The codex model catalog: a few current OpenAI models with their limits and list prices (USD
 * per million tokens). It feeds the model picker and cost display; the API itself is the
 * authority on what a model accepts, so an unlisted model id still works.
 */
import type { ModelInfo } from '../../plugin-api.js';

export const DEFAULT_OPENAI_MODEL = 'gpt-5';

export const OPENAI_MODELS: ModelInfo[] = [
  { id: 'gpt-5', name: 'GPT-5', contextWindow: 400_000, maxOutputTokens: 128_000, thinking: true, cache: true, price: { input: 1.25, output: 10, cacheRead: 0.125 } },
  { id: 'gpt-5-mini', name: 'GPT-5 mini', contextWindow: 400_000, maxOutputTokens: 128_000, thinking: true, cache: true, price: { input: 0.25, output: 2, cacheRead: 0.025 } },
  { id: 'gpt-5-nano', name: 'GPT-5 nano', contextWindow: 400_000, maxOutputTokens: 128_000, thinking: true, cache: true, price: { input: 0.05, output: 0.4, cacheRead: 0.005 } },
  // Responses API only.
  { id: 'gpt-5-codex', name: 'GPT-5 Codex', contextWindow: 400_000, maxOutputTokens: 128_000, thinking: true, cache: true, price: { input: 1.25, output: 10, cacheRead: 0.125 } },
  { id: 'gpt-4.1', name: 'GPT-4.1', contextWindow: 1_047_576, maxOutputTokens: 32_768, thinking: false, cache: true, price: { input: 2, output: 8, cacheRead: 0.5 } },
  { id: 'gpt-4.1-mini', name: 'GPT-4.1 mini', contextWindow: 1_047_576, maxOutputTokens: 32_768, thinking: false, cache: true, price: { input: 0.4, output: 1.6, cacheRead: 0.1 } },
  { id: 'o3', name: 'o3', contextWindow: 200_000, maxOutputTokens: 100_000, thinking: true, cache: true, price: { input: 2, output: 8, cacheRead: 0.5 } },
  { id: 'o4-mini', name: 'o4-mini', contextWindow: 200_000, maxOutputTokens: 100_000, thinking: true, cache: true, price: { input: 1.1, output: 4.4, cacheRead: 0.275 } },
  { id: 'gpt-4o', name: 'GPT-4o', contextWindow: 128_000, maxOutputTokens: 16_384, thinking: false, cache: true, price: { input: 2.5, output: 10, cacheRead: 1.25 } },
];

/**
 * Whether a model reasons (takes `reasoning` / `reasoning_effort`, returns reasoning items).
 * Sending reasoning parameters to a model without reasoning is a 400, so unknown ids only
 * count when they look like a reasoning family; a catalog entry (built-in or a custom
 * provider's `models`) always wins, also for dated snapshots (`gpt-5-2025-08-07`).
 */
export function isReasoningModel(model: string, catalog: ModelInfo[] = OPENAI_MODELS): boolean {
  let best: ModelInfo | undefined;
  for (const m of catalog) {
    if ((model === m.id || model.startsWith(`${m.id}-`)) && (!best || m.id.length > best.id.length)) best = m;
  }
  if (best?.thinking !== undefined && (best.id === model || !/chat/.test(model))) return best.thinking;
  return /^(o\d|gpt-5|codex)/i.test(model) && !/chat/i.test(model);
}
