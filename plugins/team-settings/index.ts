/**
 * team-settings: on a team database (settings `history.url`, else LIVEAGENT_DATABASE_URL, a
 * PostgreSQL URL) the settings live in that database for every process of the team, so a
 * provider key or an MCP server added in the WebUI of one `serve` process is in force on all of
 * them, and on CLIs using the same database, without a restart. Without such a URL it does
 * nothing, and knex and `pg` are never loaded.
 *
 * The kernel does the sharing (`ctx.settings.share`, experimental): which keys stay in the local
 * settings.json, validation, onChange. This plugin only stores the document (backend.ts).
 * It is applied first (`enforce: 'pre'`) and waits for the first load, so every later plugin
 * reads the team's settings at its own apply.
 *
 * Settings (`pluginSettings["team-settings"]`, local to each process, every one optional):
 * `connectTimeoutMs` (5000), `pollMs` (5000). See docs/team-server.md, "Settings on a team".
 */
import { z } from 'zod';
import { definePlugin } from '../../core/define-plugin.js';
import { configuredPostgresUrl, redactUrl } from '../../lib/database/url.js';

const TeamSettingsConfigSchema = z.strictObject({
  connectTimeoutMs: z.number().int().min(1).max(600_000).optional(),
  pollMs: z.number().int().min(10).max(3_600_000).optional(),
});

type TeamSettingsConfig = z.infer<typeof TeamSettingsConfigSchema>;

export const TEAM_SETTINGS_DEFAULTS = { connectTimeoutMs: 5000, pollMs: 5000 };

export default definePlugin({
  name: 'team-settings',
  version: '0.1.0',
  enforce: 'pre',
  experimental: ['shared_settings'],
  settingsSchema: TeamSettingsConfigSchema,
  async apply(ctx) {
    const configured = configuredPostgresUrl(ctx.settings.get());
    if (!configured) return;
    const config = () => ({ ...TEAM_SETTINGS_DEFAULTS, ...((ctx.settings.get().pluginSettings?.['team-settings'] ?? {}) as TeamSettingsConfig) });
    const { PgSettingsBackend } = await import('./backend.js');
    const backend = new PgSettingsBackend({
      url: configured.url,
      logger: ctx.logger,
      connectTimeoutMs: () => config().connectTimeoutMs,
      pollMs: () => config().pollMs,
    });
    // Pushed before `share` (which the kernel tracks): unloading ends the sharing, then closes the connections.
    ctx.subscriptions.push({ dispose: () => void backend.close() });
    const share = ctx.settings.share(backend);
    // Last at shutdown: other plugins' shutdown taps may still save settings.
    ctx.hooks.shutdown.tap(() => backend.close(), { stage: 1000 });
    await share.ready;
    ctx.logger.info(`settings are shared through ${redactUrl(configured.url)} (table team_settings)`);
  },
});
