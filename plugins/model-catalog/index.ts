/**
 * The model catalog: facts about each provider's models (context window, output limit,
 * thinking, prices). One source per model: the provider plugin's own `models`, overridden by a
 * custom provider's `models` in settings. Compaction and the cost figure read it through the
 * `modelCatalog` service. An unknown model gets safe defaults and one warning.
 */
import type { ModelInfo, Usage } from '../../plugin-api.js';
import { definePlugin } from '../../core/define-plugin.js';
import { SAFE_DEFAULTS } from './catalog-data.js';

export interface ModelFacts extends ModelInfo {
  contextWindow: number;
  maxOutputTokens: number;
  thinking: boolean;
  /** False when the model was not found and safe defaults were used. */
  known: boolean;
}

export interface ModelCatalog {
  /** Facts for a model of a provider (id or alias). */
  info(providerId: string, modelId: string): ModelFacts;
  /** Every model known for a provider. */
  models(providerId: string): ModelInfo[];
  /** USD cost of a usage record, or undefined when the model has no price. */
  cost(providerId: string, modelId: string, usage: Usage): number | undefined;
}

export default definePlugin({
  name: 'model-catalog',
  apply(ctx) {
    const warned = new Set<string>();
    const models = (providerId: string): ModelInfo[] => {
      const provider = ctx.runtime.provider(providerId);
      const id = provider?.id ?? providerId;
      const custom = ctx.settings.get().customProviders?.find((p) => p.id === id)?.models ?? [];
      const merged = new Map<string, ModelInfo>();
      for (const list of [provider?.models ?? [], custom]) for (const m of list) merged.set(m.id, { ...merged.get(m.id), ...m });
      return [...merged.values()];
    };
    const info = (providerId: string, modelId: string): ModelFacts => {
      const list = models(providerId);
      // Dated snapshots (claude-sonnet-4-5-20250929) share their family's facts.
      const found = list.find((m) => m.id === modelId) ?? list.find((m) => modelId.startsWith(`${m.id}-`));
      if (!found) {
        const key = `${providerId}/${modelId}`;
        if (!warned.has(key)) {
          warned.add(key);
          ctx.logger.warn(`unknown model "${modelId}" for provider "${providerId}": assuming a ${SAFE_DEFAULTS.contextWindow}-token context and ${SAFE_DEFAULTS.maxOutputTokens} output tokens`);
        }
        return { id: modelId, ...SAFE_DEFAULTS, known: false };
      }
      return { ...SAFE_DEFAULTS, ...found, id: modelId, known: true } as ModelFacts;
    };
    const catalog: ModelCatalog = {
      info,
      models,
      cost(providerId, modelId, usage) {
        const p = info(providerId, modelId).price;
        if (!p?.input || !p.output) return undefined;
        const cached = usage.cacheReadTokens ?? 0;
        const written = usage.cacheWriteTokens ?? 0;
        const perM = 1_000_000;
        return (
          (Math.max(0, usage.inputTokens) * p.input +
            usage.outputTokens * p.output +
            cached * (p.cacheRead ?? p.input) +
            written * (p.cacheWrite ?? p.input)) /
          perM
        );
      },
    };
    ctx.provide('modelCatalog', catalog);
  },
});
