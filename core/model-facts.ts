/**
 * One source of model facts (context window, output limit, thinking, caching, prices): the
 * provider plugin's own `Provider.models`, overridden field by field by a custom provider's
 * `models` in settings. The kernel prices each round's usage from it, and plugins read it through
 * `runtime.modelInfo` (compaction's budget, the context meter, the model picker, the cost shown).
 * An unknown model gets safe defaults (`known: false`).
 */
import type { ModelFacts, ModelInfo, Provider, Settings, Usage } from '../plugin-api.js';

/** What an unknown model is assumed to support: small enough to be safe everywhere. */
export const SAFE_MODEL_DEFAULTS = Object.freeze({ contextWindow: 128_000, maxOutputTokens: 8_192, thinking: false, cache: false });

/** Every model known for a provider: its own list with settings' entries merged over it. */
export function modelsOf(provider: Provider | undefined, settings: Settings): ModelInfo[] {
  if (!provider) return [];
  const custom = settings.customProviders?.find((p) => p.id === provider.id)?.models ?? [];
  if (!custom.length) return provider.models ?? [];
  const merged = new Map<string, ModelInfo>();
  for (const list of [provider.models ?? [], custom]) for (const m of list) merged.set(m.id, { ...merged.get(m.id), ...m });
  return [...merged.values()];
}

/** Facts for `modelId` (an id, or a dated snapshot of one: claude-sonnet-4-5-20250929). */
export function modelFacts(models: ModelInfo[], modelId: string): ModelFacts {
  const found = models.find((m) => m.id === modelId) ?? models.find((m) => modelId.startsWith(`${m.id}-`));
  if (!found) return { id: modelId, ...SAFE_MODEL_DEFAULTS, known: false };
  return { ...SAFE_MODEL_DEFAULTS, ...found, id: modelId, known: true };
}

/**
 * USD cost of a usage record at the model's prices; undefined without input and output prices.
 * `inputTokens` counts uncached input only (the providers report cache reads and writes apart);
 * cache reads and writes fall back to the input price when the model lists none.
 */
export function costOf(price: ModelInfo['price'], usage: Usage): number | undefined {
  if (price?.input === undefined || price.output === undefined) return undefined;
  const perMillion =
    Math.max(0, usage.inputTokens) * price.input +
    Math.max(0, usage.outputTokens) * price.output +
    (usage.cacheReadTokens ?? 0) * (price.cacheRead ?? price.input) +
    (usage.cacheWriteTokens ?? 0) * (price.cacheWrite ?? price.input);
  // Prices are per million tokens; rounded to a millionth of a cent so sums print cleanly.
  return Math.round(perMillion * 100) / 1e8;
}
