/**
 * Gemini models (ai.google.dev/gemini-api/docs/models and /pricing; prices are the standard
 * tier for prompts up to 200k tokens) and the per-model thinking facts the request builder needs.
 */
import type { ModelInfo } from '../../plugin-api.js';

export const DEFAULT_GEMINI_MODEL = 'gemini-2.5-flash';

export const GEMINI_MODELS: ModelInfo[] = [
  { id: 'gemini-2.5-pro', name: 'Gemini 2.5 Pro', contextWindow: 1_048_576, maxOutputTokens: 65_536, thinking: true, cache: true, price: { input: 1.25, output: 10, cacheRead: 0.31 } },
  { id: 'gemini-2.5-flash', name: 'Gemini 2.5 Flash', contextWindow: 1_048_576, maxOutputTokens: 65_536, thinking: true, cache: true, price: { input: 0.3, output: 2.5, cacheRead: 0.075 } },
  { id: 'gemini-2.5-flash-lite', name: 'Gemini 2.5 Flash-Lite', contextWindow: 1_048_576, maxOutputTokens: 65_536, thinking: true, cache: true, price: { input: 0.1, output: 0.4, cacheRead: 0.025 } },
  { id: 'gemini-3-pro-preview', name: 'Gemini 3 Pro (preview)', contextWindow: 1_048_576, maxOutputTokens: 65_536, thinking: true, cache: true, price: { input: 2, output: 12, cacheRead: 0.2 } },
  { id: 'gemini-2.0-flash', name: 'Gemini 2.0 Flash', contextWindow: 1_048_576, maxOutputTokens: 8_192, thinking: false, cache: true, price: { input: 0.1, output: 0.4, cacheRead: 0.025 } },
];

/**
 * Thinking budget limits (thinking docs): Pro cannot switch thinking off and needs at least 128
 * tokens; Flash-Lite needs 512 when on. A budget outside the range is clamped, not refused.
 */
interface ThinkingRange {
  min: number;
  max: number;
  canDisable: boolean;
}
const RANGES: Array<[RegExp, ThinkingRange]> = [
  [/^gemini-2\.5-pro/, { min: 128, max: 32_768, canDisable: false }],
  [/^gemini-2\.5-flash-lite/, { min: 512, max: 24_576, canDisable: true }],
  [/^gemini-2\.5-flash/, { min: 1, max: 24_576, canDisable: true }],
  [/^gemini-3/, { min: 128, max: 32_768, canDisable: false }],
];
const UNKNOWN_RANGE: ThinkingRange = { min: 1, max: 32_768, canDisable: true };

/** Models that think: the catalog says so, else the family does (2.5 and later). */
export function modelThinks(model: string, catalog: ModelInfo[] | undefined): boolean {
  const id = model.replace(/^models\//, '');
  const known = catalog?.find((m) => m.id === id) ?? GEMINI_MODELS.find((m) => m.id === id);
  if (known?.thinking !== undefined) return known.thinking;
  return /^gemini-(2\.5|[3-9])/.test(id);
}

export function thinkingRange(model: string): ThinkingRange {
  const id = model.replace(/^models\//, '');
  return RANGES.find(([re]) => re.test(id))?.[1] ?? UNKNOWN_RANGE;
}

/**
 * Gemini 2.x refuses googleSearch next to functionDeclarations ("Tool use with function calling
 * is unsupported"); Gemini 3 takes both.
 */
export function combinesSearchWithFunctions(model: string): boolean {
  return /^(models\/)?gemini-([3-9])/.test(model);
}

export function maxOutputFor(model: string, catalog: ModelInfo[] | undefined): number | undefined {
  const id = model.replace(/^models\//, '');
  return (catalog?.find((m) => m.id === id) ?? GEMINI_MODELS.find((m) => m.id === id))?.maxOutputTokens;
}
