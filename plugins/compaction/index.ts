/**
 * compaction: keeps long conversations inside the model's context window. It answers the
 * kernel's `compaction` hook at every trigger (pre-send, post-tool, mid-stream, overflow,
 * manual) with the budget or a checkpoint; the kernel stores the checkpoint as a new history
 * segment and carries its summary and file ledger in the system prompt from then on.
 *
 * Settings: the top-level `compaction` section (see settings.ts and docs/settings.md), read
 * again whenever settings change; an invalid change is reported and the last valid one kept.
 */
import type { ModelInfo } from '../../plugin-api.js';
import { definePlugin } from '../../core/define-plugin.js';
import { Compactor } from './compactor.js';
import { CompactionSettingsSchema, type ModelFactsLike } from './settings.js';

/** The subset of the model catalog this plugin reads (plugins/model-catalog). */
interface CatalogLike {
  info(providerId: string, modelId: string): ModelInfo & ModelFactsLike;
}

const FALLBACK: ModelFactsLike = { contextWindow: 128_000, maxOutputTokens: 8_192 };

export default definePlugin({
  name: 'compaction',
  version: '0.1.0',
  settingsKey: 'compaction',
  settingsSchema: CompactionSettingsSchema,
  apply(ctx) {
    let settings = ctx.config;
    ctx.subscriptions.push(
      ctx.settings.onChange((next) => {
        const r = CompactionSettingsSchema.safeParse(next.compaction ?? {});
        if (r.success) settings = r.data;
        else ctx.reportFailure(`settings compaction.${r.error.issues[0]!.path.join('.')}: ${r.error.issues[0]!.message}; keeping the previous compaction settings`);
      }),
    );
    const compactor = new Compactor({
      runtime: ctx.runtime,
      logger: ctx.logger,
      settings: () => settings,
      facts: (provider, model) => ctx.service<CatalogLike>('modelCatalog')?.info(provider, model) ?? FALLBACK,
    });
    ctx.sessionHooks.compaction.tap((request, rctx) => compactor.answer(request, rctx.conversationId));
  },
});
