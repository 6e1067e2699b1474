/**
 * A small catalog of Claude models (platform.claude.com model pages) and the few per-model facts
 * the request builder needs. Models not listed here (new releases, custom endpoints) are treated
 * as taking a manual thinking budget, which is what the Messages API documents for `thinking`.
 */
import type { ModelInfo } from '../../plugin-api.js';

export const DEFAULT_MODEL = 'claude-sonnet-4-6';

/** Output tokens asked for when neither the request nor settings say (capped by the model's limit). */
export const DEFAULT_MAX_TOKENS = 16_384;

/** The API's minimum `budget_tokens`. */
export const MIN_THINKING_BUDGET = 1024;

const price = (input: number, output: number) => ({ input, output, cacheRead: input / 10, cacheWrite: input * 1.25 });

export const CLAUDE_MODELS: ModelInfo[] = [
  { id: 'claude-sonnet-4-6', name: 'Claude Sonnet 4.6', contextWindow: 1_000_000, maxOutputTokens: 64_000, thinking: true, cache: true, price: price(3, 15) },
  { id: 'claude-sonnet-4-5', name: 'Claude Sonnet 4.5', contextWindow: 200_000, maxOutputTokens: 64_000, thinking: true, cache: true, price: price(3, 15) },
  { id: 'claude-haiku-4-5', name: 'Claude Haiku 4.5', contextWindow: 200_000, maxOutputTokens: 64_000, thinking: true, cache: true, price: price(1, 5) },
  { id: 'claude-opus-4-1', name: 'Claude Opus 4.1', contextWindow: 200_000, maxOutputTokens: 32_000, thinking: true, cache: true, price: price(15, 75) },
  { id: 'claude-sonnet-5-5', name: 'Claude Sonnet 5.5', contextWindow: 1_000_000, maxOutputTokens: 128_000, thinking: true, cache: true, price: { input: 2, output: 10, cacheRead: 0.1, cacheWrite: 2.5 } },
  { id: 'claude-opus-5-5', name: 'Claude Opus 5.5', contextWindow: 1_000_000, maxOutputTokens: 128_000, thinking: true, cache: true, price: price(4, 20) },
  { id: 'claude-sonnet-5', name: 'Claude Sonnet 5', contextWindow: 1_000_000, maxOutputTokens: 128_000, thinking: true, cache: true, price: price(2, 10) },
  { id: 'claude-opus-5', name: 'Claude Opus 5', contextWindow: 1_000_000, maxOutputTokens: 128_000, thinking: true, cache: true, price: price(5, 25) },
  { id: 'claude-opus-4-6', name: 'Claude Opus 4.6', contextWindow: 1_000_000, maxOutputTokens: 128_000, thinking: true, cache: true, price: price(5, 25) },
];

/**
 * Models that refuse a manual `budget_tokens` (they think adaptively; claude-opus-4-6 still takes
 * one but the SDK warns it is deprecated): a thinking budget becomes `{type: 'adaptive'}`.
 */
const ADAPTIVE_THINKING = /^claude-(opus-4-6|sonnet-5|opus-5|fable-5|mythos-5)/;

/** Models that answer a forced tool choice (`any` / a named tool) with a 400: it becomes `auto`. */
const NO_FORCED_TOOL_CHOICE = /^claude-(sonnet-5-5|opus-5-5|fable-5|mythos-5)/;

export function thinkingStyle(model: string): 'budget' | 'adaptive' {
  return ADAPTIVE_THINKING.test(model) ? 'adaptive' : 'budget';
}

export function allowsForcedToolChoice(model: string): boolean {
  return !NO_FORCED_TOOL_CHOICE.test(model);
}

/** The model's output limit from a catalog (custom providers bring their own), if known. */
export function maxOutputFor(model: string, catalog: ModelInfo[] | undefined): number | undefined {
  return catalog?.find((m) => m.id === model)?.maxOutputTokens;
}
