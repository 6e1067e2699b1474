/**
 * Where a provider's key and endpoint come from: settings override the environment; a
 * `apiKeyEnv` setting names another variable to read.
 */
import type { ProviderSettings, Settings } from '../../plugin-api.js';

export interface Credentials {
  apiKey?: string;
  baseUrl?: string;
}

export function credentialsFor(settings: Settings, providerId: string, env: { key: string; baseUrl: string }, source: NodeJS.ProcessEnv = process.env): Credentials {
  const ps: ProviderSettings = settings.providers?.[providerId] ?? {};
  const apiKey = ps.apiKey || (ps.apiKeyEnv ? source[ps.apiKeyEnv] : undefined) || source[env.key] || undefined;
  const baseUrl = ps.baseUrl || source[env.baseUrl] || undefined;
  return { ...(apiKey ? { apiKey } : {}), ...(baseUrl ? { baseUrl } : {}) };
}

/**
 * A module imported once, on first use; a failed import is retried next time. Provider SDKs go
 * through this so start-up never pays for a provider nobody uses.
 */
export function lazyModule<T>(load: () => Promise<T>): () => Promise<T> {
  let loading: Promise<T> | undefined;
  return () =>
    (loading ??= load().catch((err) => {
      loading = undefined;
      throw err;
    }));
}

/**
 * `resolve(settings)` remembered while the settings snapshot (frozen, replaced on every change)
 * and the environment variables it reads are the same: a provider resolves its configuration
 * at every request, and a tool loop makes hundreds of requests on one snapshot.
 */
export function memoBySettings<R>(resolve: (settings: Settings) => R, envNames: (settings: Settings) => readonly string[], source: NodeJS.ProcessEnv = process.env): (settings: Settings) => R {
  let last: { settings: Settings; env: (string | undefined)[]; result: R } | undefined;
  return (settings) => {
    const names = envNames(settings);
    if (last && last.settings === settings && names.length === last.env.length && names.every((n, i) => source[n] === last!.env[i])) return last.result;
    const result = resolve(settings);
    last = { settings, env: names.map((n) => source[n]), result };
    return result;
  };
}
