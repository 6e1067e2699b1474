/**
 * Settings of the Anthropic providers, validated with zod: `providers.claude_code` (over the
 * environment's ANTHROPIC_API_KEY / ANTHROPIC_BASE_URL) and `customProviders[]` entries with
 * `format: 'anthropic'`. A bad value becomes a one-line error naming the provider and the field;
 * the provider stays registered and reports that error when used, so one typo does not take the
 * other providers down with it.
 */
import { z } from 'zod';
import { connectionShape, customProviderShape } from '../../lib/provider-shared/settings-schemas.js';
import type { JsonObject, Settings } from '../../plugin-api.js';
import { credentialsFor } from '../../lib/provider-shared/keys.js';
import { isUrl, parseOnce } from '../../lib/provider-shared/parse-once.js';

export const CLAUDE_CODE_ID = 'claude_code';
export const DEFAULT_BASE_URL = 'https://api.anthropic.com';
export const DEFAULT_MAX_PAUSE_CONTINUATIONS = 5;
export const ENV = { key: 'ANTHROPIC_API_KEY', baseUrl: 'ANTHROPIC_BASE_URL' } as const;

/** The environment variables `resolveClaudeCodeConfig` reads for these settings. */
export function claudeCodeEnvNames(settings: Settings): string[] {
  const keyEnv = settings.providers?.[CLAUDE_CODE_ID]?.apiKeyEnv;
  return typeof keyEnv === 'string' && keyEnv ? [ENV.key, ENV.baseUrl, keyEnv] : [ENV.key, ENV.baseUrl];
}

const WebSearchSchema = z.union([z.boolean(), z.object({ maxUses: z.number().int().min(1).optional() }).strict()]);

/** Options that shape requests: valid in `providers.claude_code`, in a custom entry, and in `request.options`. */
const RequestOptionsShape = {
  thinkingBudget: z.number().int().min(0).optional(),
  maxOutputTokens: z.number().int().min(1).optional(),
  webSearch: WebSearchSchema.optional(),
  cache: z.boolean().optional(),
  timeoutMs: z.number().int().min(1).optional(),
  /** How many times one reply the API paused (`pause_turn`, a long server-tool turn) is continued; 0: never. */
  maxPauseContinuations: z.number().int().min(0).max(100).optional(),
};

export const RequestOptionsSchema = z.object(RequestOptionsShape);

export const ClaudeCodeSettingsSchema = z.object({
  ...connectionShape,
  ...RequestOptionsShape,
});


export const CustomAnthropicSchema = z.object({
  ...customProviderShape('anthropic'),
  ...RequestOptionsShape,
});

export type RequestOptions = z.infer<typeof RequestOptionsSchema>;
export type CustomAnthropicSettings = z.infer<typeof CustomAnthropicSchema>;

/** Everything a stream needs, resolved from settings and the environment. */
export interface AnthropicConfig {
  apiKey?: string;
  /** Host root, without a trailing slash (the SDK appends `/v1/messages`). */
  baseUrl: string;
  /** A custom endpoint configured without any key: requests go out without a real one. */
  keyless?: boolean;
  thinkingBudget?: number;
  maxOutputTokens?: number;
  webSearch?: { maxUses?: number };
  cache: boolean;
  timeoutMs?: number;
  maxPauseContinuations?: number;
}

export type ConfigResult = { ok: true; config: AnthropicConfig } | { ok: false; error: string };

function formatPath(path: ReadonlyArray<PropertyKey>): string {
  return path.map((k) => (typeof k === 'number' ? `[${k}]` : `.${String(k)}`)).join('');
}

/**
 * One line naming the provider and the field, in the shape the kernel and the other providers
 * use: `settings for provider "claude_code": providers.claude_code.thinkingBudget: <problem>`.
 */
export function describeIssue(prefix: string, where: string, issue: { path: ReadonlyArray<PropertyKey>; message: string }): string {
  return `${prefix}: ${where}${formatPath(issue.path)}: ${issue.message}`;
}

function normalizeBaseUrl(url: string): string {
  return url.replace(/\/+$/, '');
}

function webSearchOf(v: boolean | { maxUses?: number } | undefined): { maxUses?: number } | undefined {
  if (!v) return undefined;
  return v === true ? {} : { ...v };
}

/** Request-shaping options picked from validated settings. */
function requestOptions(v: RequestOptions): Omit<AnthropicConfig, 'baseUrl' | 'apiKey' | 'keyless'> {
  const out: Omit<AnthropicConfig, 'baseUrl' | 'apiKey' | 'keyless'> = { cache: v.cache !== false };
  if (v.thinkingBudget !== undefined) out.thinkingBudget = v.thinkingBudget;
  if (v.maxOutputTokens !== undefined) out.maxOutputTokens = v.maxOutputTokens;
  const ws = webSearchOf(v.webSearch);
  if (ws) out.webSearch = ws;
  if (v.timeoutMs !== undefined) out.timeoutMs = v.timeoutMs;
  if (v.maxPauseContinuations !== undefined) out.maxPauseContinuations = v.maxPauseContinuations;
  return out;
}

/** Known keys of a section, so unknown ones (typos) can be reported. */
export function unknownKeys(value: unknown, schema: z.ZodObject): string[] {
  if (!value || typeof value !== 'object') return [];
  const known = new Set(Object.keys(schema.shape));
  return Object.keys(value).filter((k) => !known.has(k));
}

/** `providers.claude_code` over ANTHROPIC_API_KEY / ANTHROPIC_BASE_URL. */
export function resolveClaudeCodeConfig(settings: Settings, env: NodeJS.ProcessEnv = process.env): ConfigResult {
  const raw = settings.providers?.[CLAUDE_CODE_ID] ?? {};
  const parsed = parseOnce(ClaudeCodeSettingsSchema, raw);
  if (!parsed.success) return { ok: false, error: describeIssue(`settings for provider "${CLAUDE_CODE_ID}"`, `providers.${CLAUDE_CODE_ID}`, parsed.error.issues[0]!) };
  const creds = credentialsFor(settings, CLAUDE_CODE_ID, ENV, env);
  let baseUrl = DEFAULT_BASE_URL;
  if (creds.baseUrl) {
    if (!isUrl(creds.baseUrl)) {
      return { ok: false, error: `settings for provider "${CLAUDE_CODE_ID}": environment ${ENV.baseUrl}: not a URL (${JSON.stringify(creds.baseUrl)})` };
    }
    baseUrl = normalizeBaseUrl(creds.baseUrl);
  }
  return { ok: true, config: { ...(creds.apiKey ? { apiKey: creds.apiKey } : {}), baseUrl, ...requestOptions(parsed.data) } };
}

/** A validated custom provider entry, or the error naming it and its bad field. */
export function parseCustomProvider(entry: unknown, index: number): { ok: true; entry: CustomAnthropicSettings } | { ok: false; error: string; id: string } {
  const id = entry && typeof entry === 'object' && typeof (entry as { id?: unknown }).id === 'string' ? (entry as { id: string }).id : `#${index}`;
  const parsed = parseOnce(CustomAnthropicSchema, entry);
  if (!parsed.success) return { ok: false, id, error: describeIssue('settings', `customProviders[${index}] (provider "${id}")`, parsed.error.issues[0]!) };
  return { ok: true, entry: parsed.data };
}

/** A custom entry's key comes from `apiKey` or the variable `apiKeyEnv` names, never from ANTHROPIC_API_KEY (another service). */
export function resolveCustomConfig(entry: CustomAnthropicSettings, env: NodeJS.ProcessEnv = process.env): ConfigResult {
  const apiKey = entry.apiKey || (entry.apiKeyEnv ? env[entry.apiKeyEnv] : undefined) || undefined;
  const keyless = !entry.apiKey && !entry.apiKeyEnv;
  return {
    ok: true,
    config: { ...(apiKey ? { apiKey } : {}), ...(keyless ? { keyless } : {}), baseUrl: normalizeBaseUrl(entry.baseUrl), ...requestOptions(entry) },
  };
}

/** Per-request overrides from `request.options` (validated; foreign keys such as apiKey are ignored). */
export function parseRequestOptions(provider: string, options: JsonObject | undefined): { ok: true; value: RequestOptions } | { ok: false; error: string } {
  const parsed = parseOnce(RequestOptionsSchema, options ?? {});
  if (!parsed.success) return { ok: false, error: describeIssue(`request options for provider "${provider}"`, 'options', parsed.error.issues[0]!) };
  return { ok: true, value: parsed.data };
}

/** Merge request overrides over the configured options. */
export function withRequestOptions(cfg: AnthropicConfig, o: RequestOptions): AnthropicConfig {
  const out = { ...cfg };
  if (o.thinkingBudget !== undefined) out.thinkingBudget = o.thinkingBudget;
  if (o.maxOutputTokens !== undefined) out.maxOutputTokens = o.maxOutputTokens;
  if (o.cache !== undefined) out.cache = o.cache;
  if (o.maxPauseContinuations !== undefined) out.maxPauseContinuations = o.maxPauseContinuations;
  if (o.webSearch !== undefined) {
    const ws = webSearchOf(o.webSearch);
    if (ws) out.webSearch = ws;
    else delete out.webSearch;
  }
  return out;
}
