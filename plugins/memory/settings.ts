/**
 * The `memory` settings section (documented in docs/settings.md). Every field is optional; the
 * defaults are here, in one place. Times are milliseconds and all configurable, so tests run in
 * moments.
 */
import { z } from 'zod';
import type { Settings } from '../../plugin-api.js';
import { ONE_OFF_PARSE } from '../../lib/one-off-parse.js';

const ms = z.number().int().min(0, 'must be 0 or more milliseconds');

export const MemorySettingsSchema = z.strictObject({
  /** Memory at all: the overview, the Memory tool and extraction (default true). */
  enabled: z.boolean().optional(),
  /** Propose memories silently after completed turns, into the unreviewed list (default true). */
  autoExtract: z.boolean().optional(),
  /** Provider that extracts (default: the conversation's). */
  extractProvider: z.string().min(1).optional(),
  /** Model that extracts (default: the conversation's, or extractProvider's default). */
  extractModel: z.string().min(1).optional(),
  /** A turn whose user text is shorter than this is not worth an extraction (default 20). */
  minTurnChars: z.number().int().min(0).optional(),
  /** Least time between two extractions of one conversation (default 120000). */
  spacingMs: ms.optional(),
  /** Quiet time after a turn before extracting, so quick follow-ups are read together (default 20000). */
  idleMs: ms.optional(),
  /** An extraction still waiting for the model after this is given up (default 60000). */
  timeoutMs: z.number().int().min(1, 'must be at least 1 ms').optional(),
  /** The overview in the system prompt: at most this many lines (default 200) ... */
  overviewMaxLines: z.number().int().min(1).optional(),
  /** ... and this many bytes (default 16384). */
  overviewMaxBytes: z.number().int().min(256).optional(),
  /** Largest memory file the Memory tool writes (default 65536 bytes). */
  maxFileBytes: z.number().int().min(256).optional(),
});

export type MemorySettingsInput = z.infer<typeof MemorySettingsSchema>;

export interface MemorySettings {
  enabled: boolean;
  autoExtract: boolean;
  extractProvider?: string;
  extractModel?: string;
  minTurnChars: number;
  spacingMs: number;
  idleMs: number;
  timeoutMs: number;
  overviewMaxLines: number;
  overviewMaxBytes: number;
  maxFileBytes: number;
}

export const MEMORY_DEFAULTS: MemorySettings = {
  enabled: true,
  autoExtract: true,
  minTurnChars: 20,
  spacingMs: 120_000,
  idleMs: 20_000,
  timeoutMs: 60_000,
  overviewMaxLines: 200,
  overviewMaxBytes: 16 * 1024,
  maxFileBytes: 64 * 1024,
};

/**
 * The section of `settings` with defaults filled in. A section that does not validate (the
 * store validates on save, so only a hand edit gets here) falls back to `fallback`.
 */
export function memorySettings(settings: Settings, fallback: MemorySettingsInput = {}): MemorySettings {
  const r = MemorySettingsSchema.safeParse(settings.memory ?? {}, ONE_OFF_PARSE);
  const given = r.success ? r.data : fallback;
  const out: MemorySettings = { ...MEMORY_DEFAULTS };
  for (const [k, v] of Object.entries(given)) if (v !== undefined) (out as unknown as Record<string, unknown>)[k] = v;
  return out;
}
