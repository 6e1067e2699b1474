/**
 * The `debugLog` settings section (documented in docs/settings.md and docs/debug-log.md). Every
 * key is optional; the defaults live here, in one place. The section is read for every run, so a
 * change applies to the next run.
 */
import { z } from 'zod';
import type { Settings } from '../../plugin-api.js';
import { ONE_OFF_PARSE } from '../../lib/one-off-parse.js';

export const DebugLogSettingsSchema = z.strictObject({
  /** Log every run, whatever its mode (default false: only `agent-dev` runs are logged). */
  enabled: z.boolean().optional(),
  /** One record per provider event and per `message_update`, instead of one per streamed block (default false). */
  rawEvents: z.boolean().optional(),
  /** A file that would grow past this is rotated first (bytes, default 20 MiB). */
  maxFileBytes: z.number().int().min(1024, 'must be at least 1024 bytes').optional(),
  /** Files kept per conversation, the live one included: `<id>.jsonl`, `<id>.1.jsonl` ... (default 5). */
  maxFiles: z.number().int().min(1, 'must be at least 1').max(100, 'must be at most 100').optional(),
  /** Files not written for this many days are deleted at start-up (default 14; 0 keeps them forever). */
  retentionDays: z.number().min(0, 'must be 0 or more days').optional(),
  /** Records waiting to be written, per file; past it records are dropped and counted (default 10000). */
  bufferRecords: z.number().int().min(1, 'must be at least 1').optional(),
  /** Export OpenTelemetry spans (GenAI conventions) for every run, when @opentelemetry/api is installed (default false). */
  otel: z.boolean().optional(),
});

export type DebugLogSettingsInput = z.infer<typeof DebugLogSettingsSchema>;

export interface DebugLogSettings {
  enabled: boolean;
  rawEvents: boolean;
  maxFileBytes: number;
  maxFiles: number;
  retentionDays: number;
  bufferRecords: number;
  otel: boolean;
}

export const DEBUG_LOG_DEFAULTS: DebugLogSettings = {
  enabled: false,
  rawEvents: false,
  maxFileBytes: 20 * 1024 * 1024,
  maxFiles: 5,
  retentionDays: 14,
  bufferRecords: 10_000,
  otel: false,
};

/**
 * The section of `settings` with defaults filled in. A section that does not validate (the store
 * validates on save, so only a hand edit gets here) falls back to `fallback`.
 */
export function debugLogSettings(settings: Settings, fallback: DebugLogSettingsInput = {}): DebugLogSettings {
  const r = DebugLogSettingsSchema.safeParse(settings.debugLog ?? {}, ONE_OFF_PARSE);
  const given = r.success ? r.data : fallback;
  const out: DebugLogSettings = { ...DEBUG_LOG_DEFAULTS };
  for (const [k, v] of Object.entries(given)) if (v !== undefined) (out as unknown as Record<string, unknown>)[k] = v;
  return out;
}
