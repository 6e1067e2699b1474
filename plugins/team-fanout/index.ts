/**
 * team-fanout: several `serve` processes behind one address, on the PostgreSQL the history
 * already uses (plugins/history-postgres; the same URL: settings `history.url`, else
 * LIVEAGENT_DATABASE_URL). Active only with such a URL and in a host that runs the gateway (the
 * server, the desktop app); the CLI and SQLite hosts never load knex or `pg` for it.
 *
 * Every process serves clients; each conversation's runs belong to one process at a time (a
 * lease); events go through a shared log with LISTEN/NOTIFY doorbells; items for a conversation
 * another process owns are forwarded to it. See team.ts and docs/team-server.md.
 *
 * Settings (top-level `team`, every one optional): `leaseMs` (15000), `batchDelayMs` (15),
 * `batchMaxRows` (500), `maxBufferedEvents` (100000), `replayMaxEvents` (20000), `replayWaitMs` (2000),
 * `forwardTimeoutMs` (60000), `pollMs` (2000), `retentionMs` (3600000), `retentionEvents`
 * (20000 per conversation), `pruneIntervalMs` (60000), `maxTrackedConversations` (10000), `poolMax` (4),
 * `acquireTimeoutMs` (10000).
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { z } from 'zod';
import { definePlugin } from '../../core/define-plugin.js';
import { configuredDatabaseUrl, isPostgresUrl, redactUrl } from '../../lib/database/url.js';
import type { ChatQueueItem, ServerMessage } from '../../lib/gateway-protocol/protocol.js';
import { loadPg, openTeamDatabase } from './database.js';
import { Team, type TeamLimits } from './team.js';

const ms = z.number().int().min(1).max(86_400_000);

export const TeamSettingsSchema = z.strictObject({
  leaseMs: z.number().int().min(100).max(3_600_000).optional(),
  batchDelayMs: z.number().int().min(0).max(10_000).optional(),
  batchMaxRows: z.number().int().min(1).max(10_000).optional(),
  maxBufferedEvents: z.number().int().min(100).max(10_000_000).optional(),
  replayMaxEvents: z.number().int().min(1).max(1_000_000).optional(),
  replayWaitMs: z.number().int().min(0).max(600_000).optional(),
  forwardTimeoutMs: ms.optional(),
  pollMs: ms.optional(),
  retentionMs: ms.optional(),
  retentionEvents: z.number().int().min(1).max(10_000_000).optional(),
  pruneIntervalMs: ms.optional(),
  maxTrackedConversations: z.number().int().min(10).max(10_000_000).optional(),
  poolMax: z.number().int().min(2).max(100).optional(),
  acquireTimeoutMs: ms.optional(),
});

export type TeamSettings = z.infer<typeof TeamSettingsSchema>;

export const TEAM_DEFAULTS: TeamLimits & { poolMax: number; acquireTimeoutMs: number } = {
  leaseMs: 15_000,
  batchDelayMs: 15,
  batchMaxRows: 500,
  maxBufferedEvents: 100_000,
  replayMaxEvents: 20_000,
  replayWaitMs: 2000,
  forwardTimeoutMs: 60_000,
  pollMs: 2000,
  retentionMs: 3_600_000,
  retentionEvents: 20_000,
  pruneIntervalMs: 60_000,
  maxTrackedConversations: 10_000,
  poolMax: 4,
  acquireTimeoutMs: 10_000,
};

/** The service other plugins (and tests) can ask: which process this is. */
export const TEAM_SERVICE = 'team';

export default definePlugin({
  name: 'team-fanout',
  version: '0.1.0',
  settingsKey: 'team',
  settingsSchema: TeamSettingsSchema,
  apply(ctx) {
    const configured = configuredDatabaseUrl(ctx.settings.get());
    if (!configured || !isPostgresUrl(configured.url)) return;
    const url = configured.url;
    const limits = () => ({ ...TEAM_DEFAULTS, ...ctx.config });
    // Channel names are identifiers: lowercase hex only.
    const self = randomBytes(6).toString('hex');
    let team: Team | undefined;
    let starting: Promise<Team | undefined> | undefined;
    let closed = false;

    ctx.hooks.ready.tap(() => {
      const gateway = ctx.service('gateway');
      if (!gateway || typeof gateway.setRemote !== 'function') return; // a host without the gateway (the CLI)
      starting = (async () => {
        const l = limits();
        const knex = await openTeamDatabase(url, { poolMax: l.poolMax, acquireTimeoutMs: l.acquireTimeoutMs });
        const pg = await loadPg();
        const t = new Team({
          knex,
          self,
          logger: ctx.logger,
          runtime: ctx.runtime,
          gateway,
          limits,
          listen: async () => {
            const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: limits().acquireTimeoutMs });
            await client.connect();
            return client;
          },
        });
        if (closed) {
          await knex.destroy();
          return undefined;
        }
        await t.start();
        team = t;
        ctx.subscriptions.push({ dispose: () => void knex.destroy() });
        ctx.logger.info(`team process ${self} (${os.hostname()} pid ${process.pid}) on ${redactUrl(url)}`);
        return t;
      })();
      starting.catch((err) => ctx.logger.error(`the team fan-out is not running (runs stay local to this process): ${(err as Error).message}`));
      // Routing waits for the opening: a send that arrives first must not start a second owner's run.
      ctx.subscriptions.push(
        // The gateway hands its remote only items it validated (ChatQueueSchema) and server messages it built.
        gateway.setRemote({
          route: async (item) => (await starting!.catch(() => undefined))?.route(item as ChatQueueItem),
          catchUp: async (c) => (await starting!.catch(() => undefined))?.catchUp(c),
          replay: async (c, lastSeq, deliver) => (await (await starting!.catch(() => undefined))?.replay(c, lastSeq, deliver)) ?? false,
          running: (c) => team?.running(c) ?? false,
          queue: async (c) => (await starting!.catch(() => undefined))?.queue(c),
          notified: (c, m) => team?.notified(c, m as ServerMessage),
        }),
      );
      ctx.subscriptions.push(ctx.runtime.onEvent((e) => team?.observe(e)));
    });

    ctx.hooks.shutdown.tap(async () => {
      closed = true;
      const t = team ?? (await starting?.catch(() => undefined));
      await t?.close();
    });
    ctx.provide(TEAM_SERVICE, { self: () => self });
  },
});
