/**
 * history-postgres: the chat-history store on PostgreSQL, for a team server (several processes,
 * one database). Active only when a database URL is configured (settings `history.url`, else
 * LIVEAGENT_DATABASE_URL: see lib/database/url.ts); then history-sqlite stays out of
 * the way and this plugin answers the same persistence hooks and provides the same `history`
 * service. Without a URL it does nothing and loads nothing (knex and `pg` are imported when the
 * database opens).
 *
 * Settings (top-level `history`): `url` (postgres:// or postgresql://), `poolMax` (connections,
 * default 10), `acquireTimeoutMs` (connecting or waiting for a free connection, default 10000),
 * `migrationLockTimeoutMs` (waiting for another process migrating the schema, default 60000).
 */
import { z } from 'zod';
import { definePlugin } from '../../core/define-plugin.js';
import { configuredDatabaseUrl, isPostgresUrl, redactUrl } from '../../lib/database/url.js';
import type { HistoryService } from '../../plugin-api.js';
import { HISTORY_SERVICE, lazyHistoryService } from '../../lib/history-shared/queries.js';
import { runFactsOf } from '../../lib/history-shared/store-rules.js';
import { PgChangeRelay } from './change-relay.js';
import { openDatabase } from './database.js';
import { createPgHistoryService } from './queries.js';
import { PgHistoryStore } from './store.js';
import { storeLifecycle, type StoreLifecycle } from '../../lib/store-lifecycle.js';

export const PostgresHistorySettingsSchema = z.strictObject({
  url: z.string().trim().refine(isPostgresUrl, 'must be a postgres:// or postgresql:// URL').optional(),
  poolMax: z.number().int().min(1).max(1000).optional(),
  acquireTimeoutMs: z.number().int().min(1).optional(),
  migrationLockTimeoutMs: z.number().int().min(1).optional(),
});

export type PostgresHistorySettings = z.infer<typeof PostgresHistorySettingsSchema>;

export const DEFAULT_POOL_MAX = 10;
export const DEFAULT_ACQUIRE_TIMEOUT_MS = 10_000;
export const DEFAULT_MIGRATION_LOCK_TIMEOUT_MS = 60_000;

interface Opened {
  knex: import('knex').Knex;
  store: PgHistoryStore;
  service: HistoryService;
  relay: PgChangeRelay;
}

export default definePlugin({
  name: 'history-postgres',
  version: '0.1.0',
  settingsKey: 'history',
  settingsSchema: PostgresHistorySettingsSchema,
  async apply(ctx) {
    const settings = ctx.config;
    const configured = configuredDatabaseUrl(ctx.settings.get());
    if (!configured) return;
    const url = configured.url;
    if (!isPostgresUrl(url)) throw new Error(`${configured.from}: must be a postgres:// or postgresql:// URL (got "${redactUrl(url).slice(0, 80)}")`);
    const where = redactUrl(url);

    // Opened in the background once the host is ready (connecting and checking the schema take
    // a round trip or two); every hook and service call awaits the same opening.
    const life: StoreLifecycle<Opened> = storeLifecycle<Opened>(
      async () => {
        const knex = await openDatabase(url, {
          poolMax: settings.poolMax ?? DEFAULT_POOL_MAX,
          acquireTimeoutMs: settings.acquireTimeoutMs ?? DEFAULT_ACQUIRE_TIMEOUT_MS,
          migrationLockTimeoutMs: settings.migrationLockTimeoutMs ?? DEFAULT_MIGRATION_LOCK_TIMEOUT_MS,
        });
        const store = new PgHistoryStore(knex);
        ctx.logger.info(`history database: ${where}`);
        // Titles stored by other processes reach this one's watchers (the conversation lists it serves).
        const relay = new PgChangeRelay({ url, knex, logger: ctx.logger });
        return { knex, store, relay, service: createPgHistoryService({ knex, store, runtime: ctx.runtime, track: life.track, relay }) };
      },
      async ({ knex, store, relay }) => {
        store.close();
        await relay.close();
        await knex.destroy();
        ctx.logger.debug(`closed ${where}`);
      },
    );
    // Calls in flight (hooks and service) are tracked: shutdown waits for them before closing the pool.
    const { open, track, close } = life;
    ctx.hooks.ready.tap(() => {
      open().catch((err) => ctx.logger.error(`cannot open the history database ${where}: ${(err as Error).message}`));
    });
    ctx.hooks.shutdown.tap(close);
    ctx.subscriptions.push({ dispose: () => void close() });

    const hooks = ctx.sessionHooks;
    const withStore = async () => (await open()).store;
    hooks.loadHistory.tap((info) => track(async () => (await withStore()).loadHistory(info)));
    hooks.saveUserMessage.tap((message, info) =>
      track(async () => {
        const store = await withStore();
        await store.saveUserMessage(message, info);
        const facts = runFactsOf(info);
        if (facts) await store.saveRunFacts(facts);
      }),
    );
    hooks.saveProgress.tap((message, info) => track(async () => (await withStore()).saveProgress(message, info)));
    hooks.saveRound.tap((round) => track(async () => (await withStore()).saveRound(round)));
    hooks.truncateHistory.tap((at) => track(async () => (await withStore()).truncate(at.conversationId, at.fromMessageId)));
    // The runtime owns delete and rename (it stops the run first); the store answers them.
    hooks.deleteConversation.tap(async (at) => (await open()).service.deleteConversation(at.conversationId));
    hooks.renameConversation.tap(async (at) => (await open()).service.renameConversation(at.conversationId, at.title));
    hooks.saveCheckpoint.tap((record) => track(async () => (await withStore()).saveCheckpoint(record)));
    hooks.turnEnd.tap((_result, info) => track(async () => (await withStore()).saveLastSeq(info)));

    // The service is usable at once; each call waits for the database to be open.
    ctx.provide(HISTORY_SERVICE, lazyHistoryService(open));
  },
});
