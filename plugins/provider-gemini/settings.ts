/**
 * Settings of the Gemini providers, validated with zod: `providers.gemini` (over GEMINI_API_KEY /
 * GEMINI_BASE_URL, ours since the SDK reads no environment) and `customProviders[]` entries with
 * `format: 'gemini'`. Precedence, lowest first: the factory's fixed options, the environment
 * (gemini only), the settings section, then `request.options` (which the kernel fills from the
 * same section and a `providerRequest` tap may change). A bad value is one line naming the
 * provider and the field; the provider stays registered and answers every request with it.
 */
import { z } from 'zod';
import { connectionShape, customProviderShape } from '../../lib/provider-shared/settings-schemas.js';
import type { JsonObject, Settings } from '../../plugin-api.js';
import { credentialsFor } from '../../lib/provider-shared/keys.js';
import { isUrl, parseOnce } from '../../lib/provider-shared/parse-once.js';

export const GEMINI_ID = 'gemini';
export const DEFAULT_BASE_URL = 'https://generativelanguage.googleapis.com';
export const GEMINI_ENV = { key: 'GEMINI_API_KEY', baseUrl: 'GEMINI_BASE_URL' } as const;

/** Options that shape requests: valid in `providers.<id>`, in a custom entry and in `request.options`. */
const RequestOptionsShape = {
  /** Thinking tokens per round: -1 dynamic (the model decides), 0 off where the model allows it. */
  thinkingBudget: z.number().int().min(-1).optional(),
  /** Stream thought summaries as thinking blocks (default true on thinking models). */
  includeThoughts: z.boolean().optional(),
  /** Offer Google Search grounding (`tools: [{googleSearch: {}}]`). */
  webSearch: z.boolean().optional(),
  maxOutputTokens: z.number().int().min(1).optional(),
  /** Time to wait for the response headers (ms); the body is watched by the kernel's idle timeout. */
  timeoutMs: z.number().int().min(1).optional(),
  /** Another provider's thinking in the history: dropped (default) or sent as `<thinking>` text. */
  foreignThinking: z.enum(['drop', 'text']).optional(),
};

const RequestOptionsSchema = z.object(RequestOptionsShape);
export type GeminiRequestOptions = z.infer<typeof RequestOptionsSchema>;

export const GeminiSettingsSchema = z.object({
  ...connectionShape,
  ...RequestOptionsShape,
});


export const CustomGeminiSchema = z.object({
  ...customProviderShape('gemini'),
  ...RequestOptionsShape,
});
export type CustomGeminiSettings = z.infer<typeof CustomGeminiSchema>;

/** Everything one stream needs. */
export interface GeminiConfig {
  apiKey?: string;
  /** Host root without a trailing slash (the SDK appends `/{apiVersion}/models/...`). */
  baseUrl: string;
  apiVersion?: string;
  /** A custom endpoint configured without any key: requests go out with an empty key header. */
  keyless?: boolean;
  thinkingBudget?: number;
  includeThoughts: boolean;
  webSearch: boolean;
  maxOutputTokens?: number;
  timeoutMs?: number;
  foreignThinking: 'drop' | 'text';
}

export type ConfigResult = { ok: true; config: GeminiConfig } | { ok: false; error: string };

function formatPath(path: ReadonlyArray<PropertyKey>): string {
  return path.map((k, i) => (typeof k === 'number' ? `[${k}]` : `${i ? '.' : ''}${String(k)}`)).join('');
}

/** `provider "<id>": <where>.<field>: <problem>`, one line. */
export function describeIssue(provider: string, where: string, issue: { path: ReadonlyArray<PropertyKey>; message: string }): string {
  const field = formatPath(issue.path);
  return `provider "${provider}": ${where}${field ? (field.startsWith('[') ? field : `.${field}`) : ''}: ${issue.message}`;
}

/** Host root and API version from a URL that may end in `/v1beta` (people paste either). */
export function splitBaseUrl(url: string): { baseUrl: string; apiVersion?: string } {
  const trimmed = url.replace(/\/+$/, '');
  const m = /^(.*)\/(v\d+(?:alpha|beta)?\d*)$/.exec(trimmed);
  return m ? { baseUrl: m[1]!, apiVersion: m[2]! } : { baseUrl: trimmed };
}

export function applyOptions(cfg: GeminiConfig, o: GeminiRequestOptions): GeminiConfig {
  const out = { ...cfg };
  if (o.thinkingBudget !== undefined) out.thinkingBudget = o.thinkingBudget;
  if (o.includeThoughts !== undefined) out.includeThoughts = o.includeThoughts;
  if (o.webSearch !== undefined) out.webSearch = o.webSearch;
  if (o.maxOutputTokens !== undefined) out.maxOutputTokens = o.maxOutputTokens;
  if (o.timeoutMs !== undefined) out.timeoutMs = o.timeoutMs;
  if (o.foreignThinking !== undefined) out.foreignThinking = o.foreignThinking;
  return out;
}

const BASE: Omit<GeminiConfig, 'baseUrl'> = { includeThoughts: true, webSearch: false, foreignThinking: 'drop' };

/** Keys of a section that the schema does not know (typos), to warn about. */
export function unknownKeys(value: unknown, schema: z.ZodObject): string[] {
  if (!value || typeof value !== 'object') return [];
  const known = new Set(Object.keys(schema.shape));
  return Object.keys(value).filter((k) => !known.has(k));
}

/** `providers.<id>` over the environment (the built-in `gemini` provider). */
export function resolveGeminiConfig(settings: Settings, id = GEMINI_ID, env: NodeJS.ProcessEnv = process.env): ConfigResult {
  const parsed = parseOnce(GeminiSettingsSchema, settings.providers?.[id] ?? {});
  if (!parsed.success) return { ok: false, error: describeIssue(id, `settings providers.${id}`, parsed.error.issues[0]!) };
  const creds = credentialsFor(settings, id, GEMINI_ENV, env);
  let url = DEFAULT_BASE_URL;
  if (creds.baseUrl) {
    if (!isUrl(creds.baseUrl)) return { ok: false, error: `provider "${id}": environment ${GEMINI_ENV.baseUrl}: not a URL (${JSON.stringify(creds.baseUrl)})` };
    url = creds.baseUrl;
  }
  const config: GeminiConfig = { ...BASE, ...splitBaseUrl(url), ...(creds.apiKey ? { apiKey: creds.apiKey } : {}) };
  return { ok: true, config: applyOptions(config, parsed.data) };
}

/** A validated custom entry, or the error naming it and its bad field. */
export function parseCustomGemini(entry: unknown, index: number): { ok: true; entry: CustomGeminiSettings } | { ok: false; error: string; id: string } {
  const id = entry && typeof entry === 'object' && typeof (entry as { id?: unknown }).id === 'string' ? (entry as { id: string }).id : `#${index}`;
  const parsed = parseOnce(CustomGeminiSchema, entry);
  if (!parsed.success) return { ok: false, id, error: describeIssue(id, `settings customProviders[${index}]`, parsed.error.issues[0]!) };
  return { ok: true, entry: parsed.data };
}

/**
 * A custom entry: its key comes from `apiKey` or the variable `apiKeyEnv` names (read at each
 * request), never from GEMINI_API_KEY (that belongs to Google). `providers.<id>` may still
 * override request options.
 */
export function resolveCustomConfig(entry: CustomGeminiSettings, settings: Settings | undefined, env: NodeJS.ProcessEnv = process.env): ConfigResult {
  const apiKey = entry.apiKey || (entry.apiKeyEnv ? env[entry.apiKeyEnv] : undefined) || undefined;
  let config: GeminiConfig = { ...BASE, ...splitBaseUrl(entry.baseUrl), ...(apiKey ? { apiKey } : {}) };
  if (!entry.apiKey && !entry.apiKeyEnv) config.keyless = true;
  config = applyOptions(config, entry);
  const section = settings?.providers?.[entry.id];
  if (section) {
    const parsed = parseOnce(RequestOptionsSchema, section);
    if (!parsed.success) return { ok: false, error: describeIssue(entry.id, `settings providers.${entry.id}`, parsed.error.issues[0]!) };
    config = applyOptions(config, parsed.data);
  }
  return { ok: true, config };
}

/** Per-request overrides from `request.options` (validated; credentials and unknown keys ignored). */
export function parseRequestOptions(provider: string, options: JsonObject | undefined): { ok: true; value: GeminiRequestOptions } | { ok: false; error: string } {
  const parsed = parseOnce(RequestOptionsSchema, options ?? {});
  if (!parsed.success) return { ok: false, error: describeIssue(provider, 'request options', parsed.error.issues[0]!) };
  return { ok: true, value: parsed.data };
}
