/**
 * The `title` settings section. Every key is optional; the defaults are what a user who never
 * opened settings.json gets: titles on, written by the conversation's provider with its small
 * model when the model catalog knows one.
 */
import { z } from 'zod';

export const TitleSettingsSchema = z.strictObject({
  /** Name new conversations after their first completed turn (default true). */
  enabled: z.boolean().optional(),
  /** Provider that writes titles (default: the conversation's). */
  provider: z.string().min(1, 'must be a provider id').optional(),
  /** Model that writes titles (default: the provider's cheapest model in the catalog, else the conversation's model). */
  model: z.string().min(1, 'must be a model id').optional(),
  /** Output cap of a title request: generous, so a reasoning model cannot spend it all on thinking (default 1024). */
  maxOutputTokens: z.number().int().min(16, 'must be at least 16').max(65_536, 'must be at most 65536').optional(),
  /** A title request that takes longer is given up; the first user text becomes the title (ms, default 30000). */
  timeoutMs: z.number().int().min(1, 'must be at least 1 ms').optional(),
});

export type TitleSettings = z.infer<typeof TitleSettingsSchema>;

export const DEFAULT_MAX_OUTPUT_TOKENS = 1024;
export const DEFAULT_TIMEOUT_MS = 30_000;
