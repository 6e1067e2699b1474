/**
 * Which history backend a host runs: a database URL (settings `history.url`, else the
 * environment's LIVEAGENT_DATABASE_URL) selects PostgreSQL (plugins/history-postgres), and
 * history-sqlite then stays out of the way; without one, the embedded SQLite file is the store.
 * Both plugins ask this one function, so exactly one of them answers the persistence hooks.
 * Settings win over the environment, as they do for providers.
 */
import type { Settings } from '../../plugin-api.js';

export const DATABASE_URL_ENV = 'LIVEAGENT_DATABASE_URL';

/** The configured database URL (any scheme: the PostgreSQL plugin refuses a wrong one by name), or undefined. */
export function configuredDatabaseUrl(settings: Settings, env: NodeJS.ProcessEnv = process.env): { url: string; from: string } | undefined {
  const section = settings.history;
  const fromSettings = section && typeof section === 'object' ? (section as { url?: unknown }).url : undefined;
  if (typeof fromSettings === 'string' ? fromSettings.trim() : fromSettings !== undefined && fromSettings !== null) {
    return { url: typeof fromSettings === 'string' ? fromSettings.trim() : String(fromSettings), from: 'history.url' };
  }
  const fromEnv = env[DATABASE_URL_ENV]?.trim();
  return fromEnv ? { url: fromEnv, from: DATABASE_URL_ENV } : undefined;
}
