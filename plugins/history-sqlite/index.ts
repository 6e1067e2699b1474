/**
 * history-sqlite: the chat-history store. Answers the kernel's persistence hooks (load, user
 * message, coalesced streaming progress, round commit, truncation, turn end) from
 * `$LIVEAGENT_HOME/liveagent.db`, and provides the `history` service (plugin-api.d.ts, ServiceMap
 * `history`; built in lib/history-shared, shared with history-postgres) that hosts and other
 * plugins browse and manage conversations with.
 *
 * Settings (`pluginSettings["history-sqlite"]`): `file` (database path, relative to the home;
 * default `liveagent.db`), `busyTimeoutMs` (how long a write waits for another process holding
 * the lock; default 10000), `migrationLockTimeoutMs` (how long opening waits for another process
 * creating or migrating the schema; default 60000).
 */
import path from 'node:path';
import { z } from 'zod';
import { definePlugin } from '../../core/define-plugin.js';
import { closeDatabase, openDatabase, type HistoryDatabase } from './database.js';
import { configuredDatabaseUrl } from '../../lib/database/url.js';
import { createHistoryService } from './queries.js';
import type { HistoryService } from '../../plugin-api.js';
import { HISTORY_SERVICE, lazyHistoryService } from '../../lib/history-shared/queries.js';
import { runFactsOf } from '../../lib/history-shared/store-rules.js';
import { HistoryStore } from './store.js';
import { storeLifecycle, type StoreLifecycle } from '../../lib/store-lifecycle.js';

export const HistorySettingsSchema = z.strictObject({
  file: z.string().min(1, 'must be a non-empty path').optional(),
  busyTimeoutMs: z.number().int().min(0).optional(),
  migrationLockTimeoutMs: z.number().int().min(0).optional(),
});

export type HistorySettings = z.infer<typeof HistorySettingsSchema>;

export const DEFAULT_DB_FILE = 'liveagent.db';
/** Long enough for a burst of CLIs and `serve` writing at once (each write holds the lock for ~1 ms). */
export const DEFAULT_BUSY_TIMEOUT_MS = 10_000;
export const DEFAULT_MIGRATION_LOCK_TIMEOUT_MS = 60_000;

export default definePlugin({
  name: 'history-sqlite',
  version: '0.1.0',
  settingsSchema: HistorySettingsSchema,
  async apply(ctx) {
    // A database URL hands the history to history-postgres (one backend answers the hooks).
    if (configuredDatabaseUrl(ctx.settings.get())) return void ctx.logger.debug('a database URL is set: history-postgres stores the history');
    const settings = ctx.config;
    const file = path.resolve(ctx.paths.home, settings.file ?? DEFAULT_DB_FILE);

    // The database opens in the background once the host is ready, not during boot (the native
    // module and the schema check cost tens of ms; knex, ~100 ms more, loads only for pending
    // migrations or the first browsing query). Every tap
    // and service call awaits the same opening, so the first run simply waits for it.
    type Opened = { handle: HistoryDatabase; store: HistoryStore; service: HistoryService };
    const life: StoreLifecycle<Opened> = storeLifecycle<Opened>(
      async () => {
        const handle = await openDatabase(file, {
          busyTimeoutMs: settings.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS,
          migrationLockTimeoutMs: settings.migrationLockTimeoutMs ?? DEFAULT_MIGRATION_LOCK_TIMEOUT_MS,
        });
        const store = new HistoryStore(handle.db);
        ctx.logger.info(`history database: ${file}`);
        return { handle, store, service: createHistoryService({ knex: handle.knex, store, runtime: ctx.runtime, track: life.track }) };
      },
      async ({ handle, store }) => {
        store.close();
        await closeDatabase(handle);
        ctx.logger.debug(`closed ${file}`);
      },
    );
    const { open, close } = life;
    ctx.hooks.ready.tap(() => {
      open().catch((err) => ctx.logger.error(`cannot open the history database ${file}: ${(err as Error).message}`));
    });

    // Normal stop: the shutdown hook runs after the kernel stopped the runs, so every round is
    // written. The disposer covers hosts that only dispose.
    ctx.hooks.shutdown.tap(close);
    ctx.subscriptions.push({ dispose: () => void close() });

    const hooks = ctx.sessionHooks;
    const withStore = async () => (await open()).store;
    hooks.loadHistory.tap(async (info) => (await withStore()).loadHistory(info));
    hooks.saveUserMessage.tap(async (message, info) => {
      const store = await withStore();
      store.saveUserMessage(message, info);
      // The conversation row learns what it runs with (shown in lists, used to continue it).
      const facts = runFactsOf(info);
      if (facts) store.saveRunFacts(facts);
    });
    hooks.saveProgress.tap(async (message, info) => (await withStore()).saveProgress(message, info));
    hooks.saveRound.tap(async (round) => (await withStore()).saveRound(round));
    hooks.truncateHistory.tap(async (at) => (await withStore()).truncate(at.conversationId, at.fromMessageId));
    // The runtime owns delete and rename (it stops the run first); the store answers them.
    hooks.deleteConversation.tap(async (at) => (await open()).service.deleteConversation(at.conversationId));
    hooks.renameConversation.tap(async (at) => (await open()).service.renameConversation(at.conversationId, at.title));
    hooks.saveCheckpoint.tap(async (record) => (await withStore()).saveCheckpoint(record));
    hooks.turnEnd.tap(async (_result, info) => (await withStore()).saveLastSeq(info));

    // The service is usable at once; each call waits for the database to be open.
    ctx.provide(HISTORY_SERVICE, lazyHistoryService(open));
  },
});

export type { HistoryService } from './service.js';
