/**
 * The `uploads` settings section (docs/settings.md). Every key is optional; the defaults suit a
 * single user on one machine: files kept a month, 100 MiB a file.
 */
import { z } from 'zod';
import type { Settings, UploadsSettings } from '../../plugin-api.js';

const MiB = 1024 * 1024;

export const UploadsSettingsSchema = z.strictObject({
  /** Uploads older than this many days (since staged or last attached) are removed at start-up (default 30). */
  retentionDays: z.number().int().min(1, 'must be at least 1 day').max(36_500, 'must be at most 36500 days').optional(),
  /** The largest file one upload may be (bytes, default 100 MiB). */
  maxBytes: z.number().int().min(1, 'must be at least 1 byte').optional(),
  /** The most bytes of attachments one message may carry together (bytes, default 200 MiB). */
  maxMessageBytes: z.number().int().min(1, 'must be at least 1 byte').optional(),
  /** User images keep their bytes in requests for this many of the latest user turns; older ones become a note (default 3). */
  imageWindowTurns: z.number().int().min(0, 'must be 0 or more').max(10_000, 'must be at most 10000').optional(),
  /** Images returned by tools (Image, Read, MCP) keep their bytes for this many of the latest user turns (default 1: the current one). */
  toolImageWindowTurns: z.number().int().min(0, 'must be 0 or more').max(10_000, 'must be at most 10000').optional(),
  /** Text files (and text extracted from PDFs) up to this many bytes are put in the request; larger ones are cut with a note (default 256 KiB). */
  inlineTextBytes: z.number().int().min(0, 'must be 0 or more').optional(),
});

export type UploadsSettingsInput = z.infer<typeof UploadsSettingsSchema>;

// The resolved section is public: the uploads service answers it (UploadsService.settings).
export type { UploadsSettings } from '../../plugin-api.js';

export const UPLOADS_DEFAULTS: Readonly<UploadsSettings> = Object.freeze({
  retentionDays: 30,
  maxBytes: 100 * MiB,
  maxMessageBytes: 200 * MiB,
  imageWindowTurns: 3,
  toolImageWindowTurns: 1,
  inlineTextBytes: 256 * 1024,
});

const resolved = new WeakMap<object, UploadsSettings>();

/** The section with defaults filled in; the store validated it already, so a bad value falls back to the default. */
export function uploadsSettings(settings: Settings): UploadsSettings {
  const raw = settings.uploads;
  if (!raw || typeof raw !== 'object') return UPLOADS_DEFAULTS;
  let hit = resolved.get(raw);
  if (!hit) {
    const r = UploadsSettingsSchema.safeParse(raw);
    hit = { ...UPLOADS_DEFAULTS, ...(r.success ? stripUndefined(r.data) : {}) };
    resolved.set(raw, hit);
  }
  return hit;
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
