/**
 * cron: scheduled tasks. A task is a prompt (a run of the runtime), a bash command or an HTTP
 * request, on a 5- or 6-field cron expression or a one-shot ISO time, in a time zone. Tasks and
 * their runs live in `$LIVEAGENT_HOME/cron.db` (store-sqlite.ts), or in PostgreSQL when a
 * PostgreSQL URL is configured (store-postgres.ts; shared by every process of a team server).
 * Every host can manage them (the `cron` service, the Cron tool, `liveagent cron`); only the
 * host that calls `start()` (the server host) runs them, and of several such hosts on one
 * database only the lease holder.
 * Settings: the top-level `cron` section (settings.ts). Docs: docs/cron.md.
 */
import os from 'node:os';
import { randomBytes } from 'node:crypto';
import type { PluginContext } from '../../plugin-api.js';
import { definePlugin } from '../../core/define-plugin.js';
import { configuredPostgresUrl, redactUrl } from '../../lib/database/url.js';
import { acquireHostProcesses, releaseHostProcesses, type HostProcesses } from '../../lib/tool-shared/process-records.js';
import { registerGatewayHandlers } from './gateway-handlers.js';
import { Scheduler, type CronChange } from './scheduler.js';
import { CRON_SERVICE, type CronService } from './service.js';
import { CronSettingsSchema, cronSettings, type CronSettings } from './settings.js';
import { CronTasks, openCronStore } from './tasks.js';
import { cronTool } from './tool.js';

export { CRON_SERVICE, type CronService } from './service.js';

function createService(ctx: PluginContext<CronSettings>): CronService & { close(): Promise<void> } {
  const boot = ctx.config;
  // Settings saved at runtime are re-read; an invalid edit keeps the last good ones.
  let good = boot;
  const settings = (): CronSettings => {
    try {
      good = cronSettings(ctx.settings.get().cron);
    } catch (err) {
      ctx.logger.warn(`${(err as Error).message}; keeping the previous cron settings`);
    }
    return good;
  };
  const listeners = new Set<(c: CronChange) => void>();
  const emit = (c: CronChange) => {
    for (const l of listeners) {
      try {
        l(c);
      } catch (err) {
        ctx.logger.warn(`a cron change listener failed: ${(err as Error).message}`);
      }
    }
  };
  let opened: Promise<CronTasks> | undefined;
  let closing = false;
  const open = () =>
    (opened ??= (async () => {
      if (closing) throw new Error('the cron database is closed');
      // The backend is chosen once, at first use, by the same rule as the history's.
      const pg = configuredPostgresUrl(ctx.settings.get());
      const store = await openCronStore(ctx.paths.home, boot, pg?.url);
      if (closing) {
        await store.close();
        throw new Error('the cron database is closed');
      }
      if (pg) ctx.logger.info(`cron: tasks are kept in PostgreSQL (${redactUrl(pg.url)}, from ${pg.from})`);
      return new CronTasks(store, settings);
    })().catch((err) => {
      opened = undefined; // a busy or unreadable file may be fine at the next call
      throw err;
    }));
  let scheduler: Scheduler | undefined;
  let records: HostProcesses | undefined;
  // A change made here reaches the scheduler at once (other processes' changes: at its next poll).
  const changed = () => {
    scheduler?.poke();
    emit({ kind: 'tasks' });
  };

  return {
    async start() {
      if (scheduler || closing) return;
      if (!settings().schedulerEnabled) return void ctx.logger.info('cron: the scheduler is off (cron.schedulerEnabled is false)');
      const tasks = await open();
      if (scheduler || closing) return;
      records = acquireHostProcesses(ctx.paths.home, { warn: (m) => ctx.logger.warn(m) });
      const holder = `${os.hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
      scheduler = new Scheduler({ tasks, settings, holder, runtime: ctx.runtime, home: ctx.paths.home, records, logger: ctx.logger, emit });
      scheduler.start();
    },
    isScheduling: () => scheduler?.isHolder ?? false,
    async listTasks() {
      return (await open()).list();
    },
    async addTask(input, createdBy) {
      const view = await (await open()).add(input, createdBy);
      changed();
      return view;
    },
    async updateTask(id, patch) {
      const view = await (await open()).update(id, patch);
      changed();
      return view;
    },
    async removeTask(id) {
      const removed = await (await open()).remove(id);
      changed();
      return removed;
    },
    async runs(id, limit) {
      return (await open()).runs(id, limit);
    },
    async preview(schedule, timezone) {
      return (await open()).preview(schedule, timezone);
    },
    onChange(listener) {
      listeners.add(listener);
      return { dispose: () => void listeners.delete(listener) };
    },
    async close() {
      if (closing) return;
      closing = true;
      await scheduler?.stop();
      if (records) releaseHostProcesses(records);
      const tasks = await opened?.catch(() => undefined);
      await tasks?.store.close();
    },
  };
}

export default definePlugin({
  name: 'cron',
  version: '0.1.0',
  settingsKey: 'cron',
  settingsSchema: CronSettingsSchema,
  apply(ctx) {
    const service = createService(ctx);
    ctx.provide(CRON_SERVICE, service);
    ctx.registerTool(cronTool(service));
    // The gateway may load after this plugin: its handlers are registered once every plugin is in.
    ctx.hooks.ready.tap(() => registerGatewayHandlers(ctx, service));
    ctx.hooks.shutdown.tap(() => service.close());
    ctx.subscriptions.push({ dispose: () => void service.close() });
  },
});
