/**
 * The `compaction` settings section and the per-model budget it yields. The context window comes
 * from the model catalog (the provider plugin's models, or a custom provider's
 * `models[].contextWindow`), unless `compaction.models` overrides it for one model.
 *
 * The default threshold leaves room for the reply: window − reserve, where the reserve is the
 * model's output limit capped at 16k tokens and at a quarter of the window. A user who sets
 * `thresholdPercent` gets exactly that share of the window, higher or lower.
 */
import { z } from 'zod';

const ModelOverride = z.strictObject({
  contextWindow: z.number().int().min(256, 'must be at least 256 tokens').optional(),
  thresholdPercent: z.number().min(10, 'must be at least 10').max(100, 'must be at most 100').optional(),
  reserveTokens: z.number().int().min(0).optional(),
});

export const CompactionSettingsSchema = z.strictObject({
  /** Compact automatically (default true). Manual compaction works either way. */
  enabled: z.boolean().optional(),
  thresholdPercent: z.number().min(10, 'must be at least 10').max(100, 'must be at most 100').optional(),
  reserveTokens: z.number().int().min(0).optional(),
  /** Recent history kept verbatim after a summary (default a fifth of the window, at most 20k tokens). */
  keepRecentTokens: z.number().int().min(0).optional(),
  /** Who writes summaries, as "<provider>/<model>" (default: the conversation's own). */
  model: z.string().regex(/^[^/\s]+\/\S+$/, 'must be "<provider id>/<model id>"').optional(),
  /** Output cap of a summary (default 4096 tokens). */
  summaryMaxTokens: z.number().int().min(256).max(64_000).optional(),
  /** Characters of each tool output the summarizer sees (default 2000). */
  toolOutputChars: z.number().int().min(100).optional(),
  /** Per-model overrides, keyed "<provider>/<model>" or "<model>". */
  models: z.record(z.string().min(1), ModelOverride).optional(),
});

export type CompactionSettings = z.infer<typeof CompactionSettingsSchema>;

/** What the model catalog says about a model (the subset used here). */
export interface ModelFactsLike {
  contextWindow: number;
  maxOutputTokens: number;
}

export interface ModelBudget {
  contextWindow: number;
  thresholdTokens: number;
  reserveTokens: number;
  keepRecentTokens: number;
}

export function budgetFor(s: CompactionSettings, providerId: string, modelId: string, facts: ModelFactsLike): ModelBudget {
  const o = s.models?.[`${providerId}/${modelId}`] ?? s.models?.[modelId] ?? {};
  const contextWindow = o.contextWindow ?? facts.contextWindow;
  const reserveTokens = Math.min(o.reserveTokens ?? s.reserveTokens ?? Math.min(facts.maxOutputTokens, 16_384, Math.floor(contextWindow / 4)), contextWindow - 1);
  const pct = o.thresholdPercent ?? s.thresholdPercent;
  const thresholdTokens = pct !== undefined ? Math.floor((contextWindow * pct) / 100) : contextWindow - reserveTokens;
  const keepRecentTokens = s.keepRecentTokens ?? Math.min(20_000, Math.floor(contextWindow / 5));
  return { contextWindow, thresholdTokens, reserveTokens, keepRecentTokens };
}
