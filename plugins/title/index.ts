/**
 * title: names a conversation after its first completed turn, in the background (a `turnEnd`
 * tap, which the kernel runs once the run is over, so the next message never waits for it). A
 * small model writes a short title in the user's language from the first exchange; an answer
 * that is no title (empty, a refusal, too long, an echo of the prompt) gives way to the first
 * user text. Stored through the history service's `setTitle`, which never replaces a title the
 * user gave; the gateway broadcasts the change to every client's conversation list.
 *
 * Settings: the top-level `title` section (settings.ts, docs/settings.md), read again whenever
 * settings change; an invalid change is reported and the last valid one kept.
 */
import { definePlugin } from '../../core/define-plugin.js';
import { TitleSettingsSchema } from './settings.js';
import { Titler, type CatalogLike } from './titler.js';

export { cleanTitle, fallbackTitle } from './clean.js';
export { smallModel } from './titler.js';

export default definePlugin({
  name: 'title',
  version: '0.1.0',
  settingsKey: 'title',
  settingsSchema: TitleSettingsSchema,
  apply(ctx) {
    let settings = ctx.config;
    ctx.subscriptions.push(
      ctx.settings.onChange((next) => {
        const r = TitleSettingsSchema.safeParse(next.title ?? {});
        if (r.success) settings = r.data;
        else ctx.reportFailure(`settings title.${r.error.issues[0]!.path.join('.')}: ${r.error.issues[0]!.message}; keeping the previous title settings`);
      }),
    );
    const titler = new Titler({
      runtime: ctx.runtime,
      history: () => ctx.service('history'),
      catalog: () => ctx.service<CatalogLike>('modelCatalog'),
      settings: () => settings,
      logger: ctx.logger,
      reportFailure: (message) => ctx.reportFailure(message),
    });
    ctx.sessionHooks.turnEnd.tap((result, info) => titler.onTurnEnd(result, info));
  },
});
