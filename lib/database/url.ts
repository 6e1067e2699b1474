/**
 * Which database a host's shared state lives in: a URL (settings `history.url`, else the
 * environment's LIVEAGENT_DATABASE_URL) selects PostgreSQL (plugins/history-postgres and the team
 * plugins: team-fanout, cron's and settings' central stores); without one, the embedded SQLite
 * files under the home are used. Every plugin asks this one function, so they agree on the
 * backend. Settings win over the environment, as they do for providers.
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

export function isPostgresUrl(url: string): boolean {
  return /^postgres(ql)?:\/\//i.test(url);
}

/** The configured URL when it is a PostgreSQL one (the team backend), else undefined. */
export function configuredPostgresUrl(settings: Settings, env: NodeJS.ProcessEnv = process.env): { url: string; from: string } | undefined {
  const configured = configuredDatabaseUrl(settings, env);
  return configured && isPostgresUrl(configured.url) ? configured : undefined;
}

/** The URL without its password, for logs and errors. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return url.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:***@');
  }
}
