/**
 * The `tools` settings section the builtin tools share. Each sub-section belongs to one tool
 * plugin and is strict, so a misspelt key is refused by name; the section itself stays open
 * because later tools (skills, MCP) add their own keys.
 *
 * Boot validates each plugin's slice (through `settingsSchema` + `settingsKey: 'tools'`); execute
 * re-reads the run's settings snapshot, because settings can change between runs.
 */
import path from 'node:path';
import { z } from 'zod';
import type { Settings } from '../../plugin-api.js';
import { ONE_OFF_PARSE } from '../one-off-parse.js';

const ms = (def: number, min = 1) => z.number().int().min(min).default(def);
const bytes = (def: number, min = 1) => z.number().int().min(min).default(def);

export const ReadSettingsSchema = z
  .strictObject({
    /** Lines shown by one Read when `limit` is not given. */
    maxLines: z.number().int().min(1).default(2000),
    /** Longer lines are cut, with a marker. */
    maxLineLength: z.number().int().min(16).default(2000),
    /** Text one Read returns at most; the rest is paged. */
    maxBytes: bytes(256 * 1024, 1024),
  })
  .prefault({});

export const BashSettingsSchema = z
  .strictObject({
    defaultTimeoutMs: ms(120_000),
    maxTimeoutMs: ms(600_000),
    /** Output kept per call (head and tail; the middle is dropped with a marker). */
    outputLimitBytes: bytes(30_000, 64),
    /** Wait between SIGTERM and SIGKILL to the process group. */
    killGraceMs: ms(500, 0),
    /** Minimum gap between progress updates. */
    progressIntervalMs: ms(500, 0),
    /** After the shell exits, how long background holders of its output may keep it open. */
    exitDrainMs: ms(200, 0),
  })
  .refine((s) => s.defaultTimeoutMs <= s.maxTimeoutMs, { message: 'defaultTimeoutMs must not exceed maxTimeoutMs', path: ['defaultTimeoutMs'] })
  .prefault({});

export const ManagedProcessSettingsSchema = z
  .strictObject({
    /** Log kept per process (the newest bytes). */
    logLimitBytes: bytes(1024 * 1024, 1024),
    defaultTailLines: z.number().int().min(1).default(50),
    maxTailLines: z.number().int().min(1).default(2000),
    stopGraceMs: ms(2000, 0),
    /** How long `start` waits to report an immediate failure. */
    startupWaitMs: ms(300, 0),
    maxRunning: z.number().int().min(1).default(16),
    /** Exited processes kept for `list` and `tail`. */
    keepExited: z.number().int().min(0).default(32),
  })
  .prefault({});

export const ImageSettingsSchema = z
  .strictObject({
    /** Largest image file Image (and Read) will load. */
    maxBytes: bytes(5 * 1024 * 1024, 1024),
  })
  .prefault({});

export const DeleteRootsSchema = z.array(z.string().min(1).refine((p) => path.isAbsolute(p), 'must be an absolute path')).prefault([]);

export type ReadSettings = z.output<typeof ReadSettingsSchema>;
export type BashSettings = z.output<typeof BashSettingsSchema>;
export type ManagedProcessSettings = z.output<typeof ManagedProcessSettingsSchema>;
export type ImageSettings = z.output<typeof ImageSettingsSchema>;

const slices = {
  read: ReadSettingsSchema,
  bash: BashSettingsSchema,
  managedProcess: ManagedProcessSettingsSchema,
  image: ImageSettingsSchema,
  deleteRoots: DeleteRootsSchema,
} as const;

type Slices = typeof slices;
export type ToolSettingsKey = keyof Slices;

/** The plugin-level schema for one slice of `tools` (what `settingsSchema` validates at boot). */
export function sectionSchema<K extends ToolSettingsKey>(key: K) {
  return z.looseObject({ [key]: slices[key].optional() } as { [P in K]: z.ZodOptional<Slices[P]> });
}

const cache = new WeakMap<object, Map<string, unknown>>();

/**
 * One slice of the run's `tools` settings, with defaults. Throws a one-line error naming the
 * field when the value is bad (settings saved at runtime are not validated by the tools).
 */
export function toolSettings<K extends ToolSettingsKey>(settings: Settings, key: K): z.output<Slices[K]> {
  let perSettings = cache.get(settings);
  if (!perSettings) {
    perSettings = new Map();
    cache.set(settings, perSettings);
  }
  if (perSettings.has(key)) return perSettings.get(key) as z.output<Slices[K]>;
  const section = settings.tools;
  const raw = section && typeof section === 'object' ? (section as Record<string, unknown>)[key] : undefined;
  const r = slices[key].safeParse(raw, ONE_OFF_PARSE);
  if (!r.success) {
    const i = r.error.issues[0]!;
    throw new Error(`invalid settings: ${['tools', key, ...i.path.map(String)].join('.')}: ${i.message}`);
  }
  perSettings.set(key, r.data);
  return r.data as z.output<Slices[K]>;
}
