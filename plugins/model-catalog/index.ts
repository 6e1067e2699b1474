/**
 * The `modelCatalog` service: the kernel's model facts (`runtime.modelInfo`, one source for
 * providers, compaction, the context meter and the cost figure) offered under the service name
 * plugins already look up (a round's cost is on its usage: `Usage.costUsd`), plus one warning per unknown model so a typo in a model id is seen.
 */
import type { ModelFacts, ModelInfo } from '../../plugin-api.js';
import { definePlugin } from '../../core/define-plugin.js';

export type { ModelFacts };

// Declared here, so a consumer gets `ctx.service('modelCatalog')` typed without importing this plugin.
declare module '../../plugin-api.js' {
  interface ServiceMap {
    modelCatalog: ModelCatalog;
  }
}

export interface ModelCatalog {
  /** Facts for a model of a provider (id or alias). */
  info(providerId: string, modelId: string): ModelFacts;
  /** Every model known for a provider. */
  models(providerId: string): ModelInfo[];
}

export default definePlugin({
  name: 'model-catalog',
  apply(ctx) {
    const warned = new Set<string>();
    const info = (providerId: string, modelId: string): ModelFacts => {
      const facts = ctx.runtime.modelInfo(providerId, modelId);
      const key = `${providerId}/${modelId}`;
      if (!facts.known && !warned.has(key)) {
        warned.add(key);
        ctx.logger.warn(`unknown model "${modelId}" for provider "${providerId}": assuming a ${facts.contextWindow}-token context and ${facts.maxOutputTokens} output tokens`);
      }
      return facts;
    };
    const catalog: ModelCatalog = {
      info,
      models: (providerId) => ctx.runtime.models(providerId),
    };
    ctx.provide('modelCatalog', catalog);
  },
});
