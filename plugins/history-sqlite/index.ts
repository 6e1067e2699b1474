/**
 * history-sqlite: the chat-history store. Answers the kernel's persistence hooks (load, user
 * message, coalesced streaming progress, round commit, truncation, turn end) from
 * `$LIVEAGENT_HOME/liveagent.db`, and provides the `history` service (see service.ts) that
 * hosts and other plugins browse and manage conversations with.
 *
 * Settings (`pluginSettings["history-sqlite"]`): `file` (database path, relative to the home;
 * default `liveagent.db`), `busyTimeoutMs` (how long a write waits for another process holding
 * the lock; default 5000).
 */
import path from 'node:path';
import { z } from 'zod';
import { definePlugin } from '../../core/define-plugin.js';
import { closeDatabase, openDatabase } from './database.js';
import { createHistoryService } from './queries.js';
import { HISTORY_SERVICE } from './service.js';
import { HistoryStore } from './store.js';

export const HistorySettingsSchema = z.strictObject({
  file: z.string().min(1, 'must be a non-empty path').optional(),
  busyTimeoutMs: z.number().int().min(0).optional(),
});

export type HistorySettings = z.infer<typeof HistorySettingsSchema>;

export const DEFAULT_DB_FILE = 'liveagent.db';

export default definePlugin({
  name: 'history-sqlite',
  version: '0.1.0',
  settingsSchema: HistorySettingsSchema,
  async apply(ctx) {
    const settings = ctx.config as HistorySettings;
    const file = path.resolve(ctx.paths.home, settings.file ?? DEFAULT_DB_FILE);
    const handle = await openDatabase(file, { busyTimeoutMs: settings.busyTimeoutMs ?? 5000 });
    const store = new HistoryStore(handle.db);

    // Service calls in flight (knex is async); shutdown waits for them before closing.
    const pending = new Set<Promise<unknown>>();
    let closing: Promise<void> | undefined;
    const track = <T>(op: () => Promise<T>): Promise<T> => {
      if (closing) return Promise.reject(new Error('the history database is closed'));
      const p = op();
      pending.add(p);
      const forget = () => void pending.delete(p);
      p.then(forget, forget);
      return p;
    };
    const close = () =>
      (closing ??= (async () => {
        await Promise.allSettled([...pending]);
        store.close();
        await closeDatabase(handle);
        ctx.logger.debug(`closed ${file}`);
      })());
    // Normal stop: the shutdown hook runs after the kernel stopped the runs, so every round is
    // written. The disposer covers the rest (apply failing below, or a host that only disposes).
    ctx.hooks.shutdown.tap(close);
    ctx.subscriptions.push({
      dispose() {
        if (closing) return;
        closing = Promise.resolve();
        store.close();
        void handle.knex.destroy();
        if (handle.db.open) handle.db.close();
      },
    });

    const hooks = ctx.sessionHooks;
    hooks.loadHistory.tap((info) => store.loadHistory(info));
    hooks.saveUserMessage.tap((message, info) => store.saveUserMessage(message, info));
    hooks.saveProgress.tap((message, info) => store.saveProgress(message, info));
    hooks.saveRound.tap((round) => store.saveRound(round));
    hooks.truncateHistory.tap((at) => store.truncate(at.conversationId, at.fromMessageId));
    hooks.turnEnd.tap((_result, info) => store.saveLastSeq(info));
    // The request context is the only hook argument that carries a run's provider, model, mode
    // and workdir (SessionInfo does not), so the conversation row learns them here, once per run.
    hooks.providerRequest.tap(
      (request, rc) => {
        if (rc.round === 1) store.saveRunFacts({ conversationId: rc.conversationId, provider: rc.provider.id, model: rc.model, mode: rc.mode, workdir: rc.workdir });
        return request;
      },
      { stage: 10_000 },
    );

    ctx.provide(HISTORY_SERVICE, createHistoryService({ knex: handle.knex, store, runtime: ctx.runtime, track }));
    ctx.logger.info(`history database: ${file}`);
  },
});

export type { HistoryService } from './service.js';
