/**
 * The kernel's settings schema: the sections it owns (defaults, providers, runtime limits) and
 * the open rest, which plugins validate with their own schemas.
 */
import { z } from 'zod';
import type { Settings } from '../plugin-api.js';
import { ConfigError } from './errors.js';
import { ONE_OFF_PARSE } from './validate-once.js';

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
        // Read by the kernel's run and boot code; listed here so they are validated and not warned about as unknown.
        toolAbortGraceMs: z.number().int().min(0).optional(),
        pluginApplyTimeoutMs: z.number().int().min(1).optional(),
        afterTurnTimeoutMs: z.number().int().min(1).optional(),
        afterTurnConcurrency: z.number().int().min(1).max(64).optional(),
        heldWindowMessages: z.number().int().min(0).optional(),
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
  const r = SettingsSchema.safeParse(value, ONE_OFF_PARSE);
  if (r.success) return r.data as Settings;
  const issue = r.error.issues[0]!;
  throw new ConfigError(`${source}: ${formatPath(issue.path, value)}: ${issue.message}`, {
    details: { issues: r.error.issues.map((i) => ({ path: formatPath(i.path, value), message: i.message })) },
  });
}
