/**
 * The `hooks` settings section: the user's hook entries plus plugin-wide options.
 *
 * Two shapes are accepted: a bare list of entries (`"hooks": [ … ]`), or an object that also
 * carries the options (`"hooks": { "entries": [ … ], "defaultTimeoutMs": 60000, … }`). The
 * WebUI writes the object form. What the kernel validates ({@link HooksSectionSchema}) is only
 * that shape: entries are checked one by one here, so one bad entry is skipped and reported
 * (naming its index and field) while the others run, and a typo can never unload the plugin,
 * which would silently drop every guard the user set up.
 */
import { z } from 'zod';

/** The events a hook can be attached to (the lifecycle table of the design). */
export const HOOK_EVENTS = [
  'agent_start',
  'agent_end',
  'turn_start',
  'turn_end',
  'message_start',
  'message_update',
  'message_end',
  'tool_execution_start',
  'tool_execution_update',
  'tool_execution_end',
] as const;
export type HookEventName = (typeof HOOK_EVENTS)[number];

/** Events that carry a tool name, so a `matcher` applies. */
export const TOOL_EVENTS: ReadonlySet<string> = new Set(['tool_execution_start', 'tool_execution_update', 'tool_execution_end']);
/** Events whose hooks may block: the run waits for their decision. */
export const BLOCKING_EVENTS: ReadonlySet<string> = new Set(['agent_start', 'tool_execution_start']);

export const HTTP_METHODS = ['POST', 'PUT', 'PATCH'] as const;

/**
 * What the kernel checks for `settingsKey: 'hooks'` (at boot and on every save): the shape only.
 * The option keys are listed (as `unknown`) so the kernel keeps them; their values are checked
 * in {@link parseHooksSection}.
 */
export const HooksSectionSchema = z.union([
  z.array(z.unknown()),
  z.object({
    entries: z.array(z.unknown()).optional(),
    defaultTimeoutMs: z.unknown().optional(),
    maxQueue: z.unknown().optional(),
    killGraceMs: z.unknown().optional(),
    maxOutputBytes: z.unknown().optional(),
    shutdownDrainMs: z.unknown().optional(),
  }),
]);

const OPTION_SCHEMAS = {
  /** A hook without its own `timeoutMs` is stopped after this long (ms). */
  defaultTimeoutMs: z.number().int().min(1).max(86_400_000),
  /** Events waiting for the observing hooks of one conversation; more are dropped (counted). */
  maxQueue: z.number().int().min(1).max(100_000),
  /** SIGTERM to SIGKILL of a timed-out command hook's process tree (ms). */
  killGraceMs: z.number().int().min(0).max(60_000),
  /** Bytes of a hook's stdout, stderr or HTTP response kept. */
  maxOutputBytes: z.number().int().min(1024).max(64 * 1024 * 1024),
  /** At shutdown, how long queued observing hooks may still run (ms). */
  shutdownDrainMs: z.number().int().min(0).max(600_000),
} as const;

export type HookOptions = { [K in keyof typeof OPTION_SCHEMAS]: number };

export const DEFAULT_OPTIONS: HookOptions = {
  defaultTimeoutMs: 60_000,
  maxQueue: 1000,
  killGraceMs: 500,
  maxOutputBytes: 1024 * 1024,
  shutdownDrainMs: 5000,
};

const common = {
  event: z.enum(HOOK_EVENTS, { error: `must be one of ${HOOK_EVENTS.join(', ')}` }),
  name: z.string().max(120, 'must be at most 120 characters').optional(),
  matcher: z.string().trim().min(1, 'must not be empty').optional(),
  timeoutMs: z.number().int().min(1).max(86_400_000).optional(),
  blocking: z.boolean().optional(),
  onFailure: z.enum(['block', 'allow'], { error: 'must be "block" or "allow"' }).optional(),
};

const CommandEntrySchema = z
  .object({ ...common, type: z.literal('command'), command: z.string().trim().min(1, 'must not be empty') })
  .strict();

const HttpEntrySchema = z
  .object({
    ...common,
    type: z.literal('http'),
    url: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }),
    method: z.enum(HTTP_METHODS, { error: `must be one of ${HTTP_METHODS.join(', ')}` }).optional(),
    headers: z.record(z.string(), z.string(), { error: 'must be an object of string values' }).optional(),
  })
  .strict();

export type CommandEntry = z.output<typeof CommandEntrySchema>;
export type HttpEntry = z.output<typeof HttpEntrySchema>;
export type HookEntry = CommandEntry | HttpEntry;

export interface ParsedSection {
  /** Valid entries with their index in the list (the index names the hook in messages). */
  entries: Array<{ index: number; entry: HookEntry }>;
  options: HookOptions;
  /** One line each: what is wrong, naming the entry index (or option) and the field. */
  errors: string[];
  /** How entries are named in messages: `hooks` (a bare list) or `hooks.entries`. */
  prefix: string;
}

function at(prefix: string, path: ReadonlyArray<PropertyKey>): string {
  return prefix + path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`)).join('');
}

/** Validate one entry; the error names the entry (`hooks[2]`) and the field. */
export function parseEntry(raw: unknown, where: string): { ok: true; entry: HookEntry } | { ok: false; error: string } {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return { ok: false, error: `${where}: must be an object` };
  const type = (raw as { type?: unknown }).type;
  if (type !== 'command' && type !== 'http') return { ok: false, error: `${where}.type: must be "command" or "http"` };
  const r = type === 'command' ? CommandEntrySchema.safeParse(raw) : HttpEntrySchema.safeParse(raw);
  if (!r.success) {
    // Every problem, not the first only: a misspelt key usually comes with the field it missed.
    const issues = r.error.issues.slice(0, 3).map((i) => `${at(where, i.path)}: ${/received undefined$/.test(i.message) ? 'is required' : i.message}`);
    return { ok: false, error: issues.join(', and ') };
  }
  const entry = r.data;
  if (entry.blocking && !BLOCKING_EVENTS.has(entry.event)) {
    return { ok: false, error: `${where}.blocking: only agent_start and tool_execution_start hooks can block (this one is on ${entry.event})` };
  }
  if (entry.matcher !== undefined && !TOOL_EVENTS.has(entry.event)) {
    return { ok: false, error: `${where}.matcher: only the tool events (tool_execution_start, _update, _end) take a matcher` };
  }
  return { ok: true, entry };
}

/** Read the whole section: bad entries and bad options are reported, never fatal. */
export function parseHooksSection(raw: unknown): ParsedSection {
  const errors: string[] = [];
  const options: HookOptions = { ...DEFAULT_OPTIONS };
  let list: unknown[] = [];
  let prefix = 'hooks';
  if (raw === undefined || raw === null) return { entries: [], options, errors, prefix };
  if (Array.isArray(raw)) list = raw;
  else if (typeof raw === 'object') {
    const obj = raw as Record<string, unknown>;
    prefix = 'hooks.entries';
    if (obj.entries !== undefined) {
      if (Array.isArray(obj.entries)) list = obj.entries;
      else errors.push('hooks.entries: must be a list of hooks');
    }
    for (const [key, value] of Object.entries(obj)) {
      if (key === 'entries') continue;
      const schema = OPTION_SCHEMAS[key as keyof typeof OPTION_SCHEMAS];
      // An unknown key is the settings store's warning (with a did-you-mean), not ours.
      if (!schema || value === undefined) continue;
      const r = schema.safeParse(value);
      if (r.success) (options as Record<string, number>)[key] = r.data;
      else errors.push(`hooks.${key}: ${r.error.issues[0]!.message} (using the default, ${DEFAULT_OPTIONS[key as keyof HookOptions]})`);
    }
  } else {
    errors.push('hooks: must be a list of hooks, or an object with "entries"');
  }
  const entries: ParsedSection['entries'] = [];
  list.forEach((item, index) => {
    const r = parseEntry(item, `${prefix}[${index}]`);
    if (r.ok) entries.push({ index, entry: r.entry });
    else errors.push(`${r.error}; this hook is skipped`);
  });
  return { entries, options, errors, prefix };
}

const MAX_LABEL = 60;

function shorten(text: string, max = MAX_LABEL): string {
  const one = text.replace(/\s+/g, ' ').trim();
  return one.length > max ? `${one.slice(0, max - 1)}…` : one;
}

/** How a hook is named in results and reports: index, name, and what it runs (never a header or a URL's query). */
export function hookLabel(index: number, entry: HookEntry): string {
  const named = entry.name ? ` "${shorten(entry.name, 40)}"` : '';
  if (entry.type === 'command') return `hook #${index}${named} (command: ${shorten(entry.command)})`;
  let where = entry.url;
  try {
    const u = new URL(entry.url);
    where = `${u.origin}${u.pathname}`;
  } catch {
    /* validated already */
  }
  return `hook #${index}${named} (${entry.method ?? 'POST'} ${shorten(where)})`;
}
