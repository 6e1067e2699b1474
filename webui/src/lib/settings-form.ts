/**
 * The settings page edits a plain form; these turn settings into that form and back. Empty
 * fields are dropped (not saved as empty strings) so the environment and defaults still apply.
 */
import type { CustomProviderSettings, ExecutionMode, ProviderSettings, Settings } from '../../../plugin-api.js';
import { formatMcpServers, parseMcpServers } from './mcp-config.js';

export interface ProviderForm {
  id: string;
  apiKey: string;
  baseUrl: string;
  defaultModel: string;
  /** Options the page does not edit, kept as they were. */
  rest: Record<string, unknown>;
}

export interface CustomProviderForm {
  id: string;
  name: string;
  format: CustomProviderSettings['format'];
  baseUrl: string;
  apiKey: string;
  defaultModel: string;
  /** Model ids, one per line or comma-separated. */
  models: string;
  rest: Record<string, unknown>;
}

export interface SettingsForm {
  defaultProvider: string;
  defaultModel: string;
  defaultMode: ExecutionMode | '';
  systemPrompt: string;
  providers: ProviderForm[];
  custom: CustomProviderForm[];
  /** The `mcpServers` block as JSON text (checked with parseMcpServers before saving). */
  mcpServers: string;
}

const str = (v: unknown) => (typeof v === 'string' ? v : '');

export function toForm(s: Settings, providerIds: string[]): SettingsForm {
  const stored = s.providers ?? {};
  const customIds = new Set((s.customProviders ?? []).map((c) => c.id));
  const ids = [...new Set([...providerIds.filter((id) => !customIds.has(id)), ...Object.keys(stored)])];
  return {
    defaultProvider: str(s.defaultProvider),
    defaultModel: str(s.defaultModel),
    defaultMode: s.defaultMode ?? '',
    systemPrompt: str(s.systemPrompt),
    providers: ids.map((id) => {
      const { apiKey, baseUrl, defaultModel, ...rest } = (stored[id] ?? {}) as ProviderSettings;
      return { id, apiKey: str(apiKey), baseUrl: str(baseUrl), defaultModel: str(defaultModel), rest };
    }),
    custom: (s.customProviders ?? []).map((c) => {
      const { id, name, format, baseUrl, apiKey, defaultModel, models, ...rest } = c;
      return {
        id,
        name: str(name),
        format,
        baseUrl: str(baseUrl),
        apiKey: str(apiKey),
        defaultModel: str(defaultModel),
        models: (models ?? []).map((m) => m.id).join('\n'),
        rest: { ...rest, ...(models ? { modelInfo: models } : {}) },
      };
    }),
    mcpServers: formatMcpServers(s.mcpServers),
  };
}

function set<T extends object>(obj: T, key: string, value: string): void {
  const v = value.trim();
  if (v) (obj as Record<string, unknown>)[key] = v;
}

export function fromForm(base: Settings, f: SettingsForm): Settings {
  const next: Settings = { ...base };
  for (const k of ['defaultProvider', 'defaultModel', 'defaultMode', 'systemPrompt'] as const) delete next[k];
  set(next, 'defaultProvider', f.defaultProvider);
  set(next, 'defaultModel', f.defaultModel);
  if (f.defaultMode) next.defaultMode = f.defaultMode;
  if (f.systemPrompt.trim()) next.systemPrompt = f.systemPrompt;

  const providers: Record<string, ProviderSettings> = {};
  for (const p of f.providers) {
    const entry: ProviderSettings = { ...p.rest };
    set(entry, 'apiKey', p.apiKey);
    set(entry, 'baseUrl', p.baseUrl);
    set(entry, 'defaultModel', p.defaultModel);
    if (Object.keys(entry).length) providers[p.id] = entry;
  }
  if (Object.keys(providers).length) next.providers = providers;
  else delete next.providers;

  const custom = f.custom.map((c) => {
    const { modelInfo, ...rest } = c.rest as { modelInfo?: Array<{ id: string }> } & Record<string, unknown>;
    const ids = c.models.split(/[\n,]/).map((m) => m.trim()).filter(Boolean);
    const known = new Map((modelInfo ?? []).map((m) => [m.id, m]));
    const entry = { ...rest, id: c.id.trim(), format: c.format, baseUrl: c.baseUrl.trim() } as CustomProviderSettings;
    set(entry, 'name', c.name);
    set(entry, 'apiKey', c.apiKey);
    set(entry, 'defaultModel', c.defaultModel);
    // Keep catalog details (context window, prices) of models that are still listed.
    if (ids.length) entry.models = ids.map((id) => known.get(id) ?? { id });
    return entry;
  });
  if (custom.length) next.customProviders = custom;
  else delete next.customProviders;

  const mcp = parseMcpServers(f.mcpServers);
  if (!mcp.ok) throw new Error(mcp.error);
  if (Object.keys(mcp.value).length) next.mcpServers = mcp.value;
  else delete next.mcpServers;
  return next;
}

export function emptyCustom(): CustomProviderForm {
  return { id: '', name: '', format: 'openai-chat', baseUrl: '', apiKey: '', defaultModel: '', models: '', rest: {} };
}
