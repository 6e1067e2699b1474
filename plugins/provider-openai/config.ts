/**
 * Configuration of one OpenAI-format provider (codex, or a custom `openai-*` provider), resolved
 * per request so that a settings change applies to the next round without re-registering.
 *
 * Precedence, lowest first: the factory's fixed options (a custom provider's entry, or what a
 * benchmark passes), the environment (codex only: OPENAI_API_KEY / OPENAI_BASE_URL), the
 * settings section `providers.<id>`, then the request's `options` (which the kernel fills from
 * the same section, and a `providerRequest` tap may change). Same rules as
 * provider-shared/keys.ts `credentialsFor`: settings override the environment, `apiKeyEnv`
 * names another variable.
 */
import { z } from 'zod';
import type { JsonObject, Settings } from '../../plugin-api.js';
import { parseOnce } from '../../lib/provider-shared/parse-once.js';

export const REASONING_EFFORTS = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh'] as const;
export type ReasoningEffort = (typeof REASONING_EFFORTS)[number];

const shape = {
  apiKey: z.string().min(1).optional(),
  /** Name of an environment variable holding the key. */
  apiKeyEnv: z.string().min(1).optional(),
  /** Endpoint ending in `/v1`. */
  baseUrl: z.url().optional(),
  defaultModel: z.string().min(1).optional(),
  /** Which OpenAI API to speak. */
  api: z.enum(['responses', 'chat']).optional(),
  /** Responses: store responses server-side and chain rounds with `previous_response_id`. */
  store: z.boolean().optional(),
  /** Hosted web search, probed per model and API: the Responses `web_search` tool, or Chat Completions `web_search_options`. */
  webSearch: z.boolean().optional(),
  reasoningEffort: z.enum(REASONING_EFFORTS).optional(),
  /** Responses: reasoning summaries to request from reasoning models (`off` sends none). */
  reasoningSummary: z.enum(['auto', 'concise', 'detailed', 'off']).optional(),
  maxOutputTokens: z.number().int().positive().optional(),
  /** Time to wait for response headers (the SDK's `timeout`); the body is watched by the kernel. */
  timeoutMs: z.number().int().positive().optional(),
  /** Another provider's thinking in the history: dropped (default) or sent as marked text. */
  foreignThinking: z.enum(['drop', 'text']).optional(),
};

/** `providers.<id>` in settings.json: strict, so a misspelt key is refused by name. */
export const OpenAISettingsSchema = z.strictObject(shape);
/** Request options may carry other plugins' keys: known ones are validated, the rest ignored. */
const RequestOptionsSchema = z.object(shape);

export type OpenAISettings = z.infer<typeof OpenAISettingsSchema>;

export interface ResolvedConfig {
  apiKey: string | undefined;
  baseUrl: string;
  /** The endpoint is api.openai.com (enables OpenAI-only parameters). */
  official: boolean;
  api: 'responses' | 'chat';
  /** `api` was set (settings, options, a custom provider's format): no fallback from Responses to Chat. */
  apiForced?: boolean;
  store: boolean;
  webSearch: boolean;
  reasoningEffort?: ReasoningEffort;
  reasoningSummary: 'auto' | 'concise' | 'detailed' | 'off';
  maxOutputTokens?: number;
  timeoutMs?: number;
  foreignThinking: 'drop' | 'text';
}

export const OFFICIAL_BASE_URL = 'https://api.openai.com/v1';
/** What a keyless OpenAI-compatible endpoint (Ollama, vLLM) gets: the SDK refuses to run without a key. */
export const PLACEHOLDER_API_KEY = 'liveagent-no-key';

export interface ConfigSource {
  id: string;
  /** Fixed options, lowest precedence. */
  base: OpenAISettings;
  settings: Settings | undefined;
  env: NodeJS.ProcessEnv;
  /** Environment variable names to read (codex), or none (custom providers). */
  envNames?: { key: string; baseUrl: string };
  /** Custom providers may run without a key (a placeholder is sent). */
  keyOptional: boolean;
  /** Where `base` came from, for error messages (e.g. `customProviders[0] (provider "local")`). */
  baseLabel?: string;
}

export function isOfficial(baseUrl: string): boolean {
  return /^https:\/\/api\.openai\.com(\/|$)/i.test(baseUrl);
}

function issueText(label: string, issue: z.core.$ZodIssue): string {
  const where = [label, ...issue.path.map(String)].join('.');
  const msg = issue.code === 'unrecognized_keys' ? `unknown key(s) ${issue.keys.map((k) => `"${k}"`).join(', ')}` : issue.message;
  return `${where}: ${msg}`;
}

/** Validate the settings section of a provider; a one-line error naming provider and field. */
export function checkSettingsSection(id: string, section: unknown): { ok: true; value: OpenAISettings } | { ok: false; error: string } {
  if (section === undefined) return { ok: true, value: {} };
  const r = parseOnce(OpenAISettingsSchema, section);
  if (r.success) return { ok: true, value: r.data };
  return { ok: false, error: `settings for provider "${id}": ${issueText(`providers.${id}`, r.error.issues[0]!)}` };
}

export function resolveConfig(src: ConfigSource, options: JsonObject = {}): { ok: true; config: ResolvedConfig } | { ok: false; error: string } {
  const section = checkSettingsSection(src.id, src.settings?.providers?.[src.id]);
  if (!section.ok) return section;
  const opts = parseOnce(RequestOptionsSchema, options);
  if (!opts.success) return { ok: false, error: `request options for provider "${src.id}": ${issueText('options', opts.error.issues[0]!)}` };
  const fromEnv = (name: string | undefined) => (name ? src.env[name] || undefined : undefined);
  const layers = [src.base, section.value, opts.data];
  let apiKey: string | undefined;
  let baseUrl: string | undefined = src.envNames ? fromEnv(src.envNames.baseUrl) : undefined;
  if (src.envNames) apiKey = fromEnv(src.envNames.key);
  for (const l of layers) {
    const k = l.apiKey || fromEnv(l.apiKeyEnv);
    if (k) apiKey = k;
    if (l.baseUrl) baseUrl = l.baseUrl;
  }
  const merged: OpenAISettings = Object.assign({}, ...layers);
  const url = (baseUrl ?? OFFICIAL_BASE_URL).replace(/\/+$/, '');
  const official = isOfficial(url);
  if (!apiKey && (src.keyOptional || !official)) apiKey = PLACEHOLDER_API_KEY;
  const config: ResolvedConfig = {
    apiKey,
    baseUrl: url,
    official,
    // Unset: Responses everywhere; an endpoint without it falls back to Chat once (api-fallback.ts).
    api: merged.api ?? 'responses',
    apiForced: merged.api !== undefined,
    store: merged.store ?? false,
    webSearch: merged.webSearch ?? false,
    reasoningSummary: merged.reasoningSummary ?? 'auto',
    foreignThinking: merged.foreignThinking ?? 'drop',
  };
  if (merged.reasoningEffort) config.reasoningEffort = merged.reasoningEffort;
  if (merged.maxOutputTokens) config.maxOutputTokens = merged.maxOutputTokens;
  if (merged.timeoutMs) config.timeoutMs = merged.timeoutMs;
  return { ok: true, config };
}

/** A custom provider entry's extra keys (beyond id/name/format/baseUrl/...), validated. */
export function customBase(entry: Record<string, unknown>, index: number): { ok: true; value: OpenAISettings; label: string } | { ok: false; error: string } {
  const label = `customProviders[${index}] (provider "${String(entry.id)}")`;
  const picked: Record<string, unknown> = {};
  for (const k of Object.keys(shape)) if (entry[k] !== undefined) picked[k] = entry[k];
  if (entry.format === 'openai-chat') picked.api = 'chat';
  if (entry.format === 'openai-responses') picked.api = 'responses';
  const r = parseOnce(OpenAISettingsSchema, picked);
  if (!r.success) return { ok: false, error: `settings: ${issueText(label, r.error.issues[0]!)}` };
  return { ok: true, value: r.data, label };
}

/** Map a thinking budget (tokens) onto an effort, for requests that give a budget and no effort. */
/**
 * The effort of a lean side request: the configured one when it is already at most `low`, else
 * `low` (every reasoning model takes it; `minimal` and `none` exist only on some).
 */
export function leanEffort(configured: ReasoningEffort | undefined): ReasoningEffort {
  return configured === 'none' || configured === 'minimal' || configured === 'low' ? configured : 'low';
}

export function effortForBudget(budget: number | undefined): ReasoningEffort | undefined {
  if (!budget || budget <= 0) return undefined;
  if (budget <= 2048) return 'low';
  if (budget <= 16_384) return 'medium';
  return 'high';
}
