/**
 * The settings store: `$LIVEAGENT_HOME/settings.json`, validated with zod on every read and
 * write. A bad value is refused with a message that names the field (and the provider, for
 * custom providers); the file on disk is only ever replaced atomically by a valid one, so
 * nothing already stored is lost.
 */
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import type { Disposable, SchemaLike, Settings, SettingsStore } from '../plugin-api.js';
import { ConfigError } from './errors.js';

const ModelInfoSchema = z.object({
  id: z.string().min(1),
  name: z.string().optional(),
  contextWindow: z.number().int().positive().optional(),
  maxOutputTokens: z.number().int().positive().optional(),
  thinking: z.boolean().optional(),
  cache: z.boolean().optional(),
  price: z
    .object({ input: z.number().optional(), output: z.number().optional(), cacheRead: z.number().optional(), cacheWrite: z.number().optional() })
    .optional(),
});

const ProviderSettingsSchema = z
  .object({
    apiKey: z.string().optional(),
    apiKeyEnv: z.string().optional(),
    baseUrl: z.url().optional(),
    defaultModel: z.string().optional(),
  })
  .passthrough();

export const CustomProviderSchema = z
  .object({
    id: z.string().regex(/^[A-Za-z0-9_-]+$/, 'must use only letters, digits, _ and -'),
    name: z.string().optional(),
    format: z.enum(['anthropic', 'openai-chat', 'openai-responses', 'gemini']),
    baseUrl: z.url(),
    apiKey: z.string().optional(),
    apiKeyEnv: z.string().optional(),
    defaultModel: z.string().optional(),
    models: z.array(ModelInfoSchema).optional(),
  })
  .passthrough();

export const SettingsSchema = z
  .object({
    defaultProvider: z.string().optional(),
    defaultModel: z.string().optional(),
    defaultMode: z.enum(['text', 'tools', 'agent-dev']).optional(),
    systemPrompt: z.string().optional(),
    providers: z.record(z.string(), ProviderSettingsSchema).optional(),
    customProviders: z.array(CustomProviderSchema).optional(),
    plugins: z.array(z.string().min(1)).optional(),
    pluginSettings: z.record(z.string(), z.unknown()).optional(),
    runtime: z
      .object({
        maxRounds: z.number().int().min(1).max(1000).optional(),
        persistIntervalMs: z.number().int().min(0).optional(),
        retryMaxAttempts: z.number().int().min(1).max(20).optional(),
        retryBaseDelayMs: z.number().int().min(0).optional(),
        retryMaxDelayMs: z.number().int().min(0).optional(),
        streamIdleTimeoutMs: z.number().int().min(10).optional(),
      })
      .passthrough()
      .optional(),
  })
  .passthrough();

function formatPath(p: ReadonlyArray<PropertyKey>, value: unknown): string {
  let out = '';
  let cur: unknown = value;
  p.forEach((k, i) => {
    out += typeof k === 'number' ? `[${k}]` : `${out ? '.' : ''}${String(k)}`;
    cur = cur && typeof cur === 'object' ? (cur as Record<PropertyKey, unknown>)[k as string] : undefined;
    // Name the custom provider, not just its index: users know providers by id.
    if (i === 1 && p[0] === 'customProviders' && cur && typeof cur === 'object' && typeof (cur as { id?: unknown }).id === 'string') {
      out += ` (provider "${(cur as { id: string }).id}")`;
    }
  });
  return out || '(root)';
}

/** Validate settings; throws a ConfigError whose message names the first bad field. */
export function validateSettings(value: unknown, source = 'settings'): Settings {
  const r = SettingsSchema.safeParse(value);
  if (r.success) return r.data as Settings;
  const issue = r.error.issues[0]!;
  throw new ConfigError(`${source}: ${formatPath(issue.path, value)}: ${issue.message}`, {
    details: { issues: r.error.issues.map((i) => ({ path: formatPath(i.path, value), message: i.message })) },
  });
}

export function readSettingsFile(file: string): Settings {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new ConfigError(`cannot read ${file}: ${(err as Error).message}`);
  }
  if (!text.trim()) return {};
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`${file} is not valid JSON: ${(err as Error).message}`);
  }
  return validateSettings(json, path.basename(file));
}

/** A plugin's own settings section, checked on every change as it was at boot. */
interface SectionCheck {
  plugin: string;
  /** A top-level key (`settingsKey`) or `pluginSettings.<name>`. */
  where: string;
  read(settings: Settings): unknown;
  schema: SchemaLike;
}

export class FileSettingsStore implements SettingsStore {
  private current: Settings;
  private listeners = new Set<(s: Settings) => void>();
  private writing: Promise<unknown> = Promise.resolve();
  private sections = new Set<SectionCheck>();

  constructor(private readonly file: string, initial?: Settings) {
    this.current = Object.freeze(initial ?? readSettingsFile(file));
  }

  get(): Settings {
    return this.current;
  }

  /**
   * Validate a plugin's section on every later change too (the kernel adds one per plugin with
   * a settingsSchema), so a value that would stop the plugin at the next start is refused now.
   */
  addSection(plugin: string, where: string, read: (s: Settings) => unknown, schema: SchemaLike): Disposable {
    const check: SectionCheck = { plugin, where, read, schema };
    this.sections.add(check);
    return { dispose: () => this.sections.delete(check) };
  }

  async set(next: Settings): Promise<Settings> {
    const valid = validateSettings(next);
    for (const c of this.sections) {
      const value = c.read(valid);
      if (value === undefined) continue;
      const r = c.schema.safeParse(value);
      if (!r.success) {
        const i = r.error.issues[0]!;
        throw new ConfigError(`settings: ${[c.where, ...i.path.map(String)].join('.')}: ${i.message}`, { plugin: c.plugin });
      }
    }
    // Serialize writes so two quick saves cannot interleave their temp files.
    const write = this.writing.then(() => writeAtomic(this.file, JSON.stringify(valid, null, 2) + '\n'));
    this.writing = write.catch(() => undefined);
    await write;
    this.current = Object.freeze(valid);
    for (const l of this.listeners) {
      try {
        l(this.current);
      } catch {
        /* listeners are notifications */
      }
    }
    return this.current;
  }

  update(patch: Partial<Settings>): Promise<Settings> {
    return this.set({ ...this.current, ...patch });
  }

  onChange(listener: (s: Settings) => void): Disposable {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }
}

async function writeAtomic(file: string, text: string): Promise<void> {
  await fs.promises.mkdir(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.${Date.now()}.tmp`;
  await fs.promises.writeFile(tmp, text, { mode: 0o600 });
  await fs.promises.rename(tmp, file);
}
