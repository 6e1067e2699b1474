/**
 * LiveAgent plugin API: the one public contract.
 *
 * A plugin written against this file alone, loaded from `$LIVEAGENT_HOME/plugins/<name>/` or from
 * an npm package named in settings, can add tools, providers, services and hook taps without a
 * change to the kernel. Built-in plugins use exactly this surface.
 *
 * Import it as `liveagent/plugin-api`. At runtime it holds {@link definePlugin} and
 * {@link defineTool} (typing helpers; `definePlugin` also checks the `experimental` opt-in),
 * {@link pluginEvent}, the stage constants, two prompt-wrapping helpers and the error classes
 * ({@link RuntimeError} and its subclasses). A plain object that satisfies {@link Plugin} loads too.
 *
 * Extension points are open interfaces a plugin merges into (declaration merging):
 * {@link ServiceMap} types `ctx.service(key)`, {@link PluginEvents} types the events a plugin
 * emits, so a consumer gets both types without importing the owner's files:
 * `declare module 'liveagent/plugin-api' { interface ServiceMap { weather: WeatherService } }`.
 * Members tagged `@experimental` may change in any release and are only delivered to a plugin
 * that names them in {@link Plugin.experimental}.
 *
 * The contract reads in lifecycle order: basics, content, plugin + context, tools, providers, the
 * session and its hooks, events, shared services, errors. This entry re-exports each section from
 * its file in plugin-api/ and declares the open interfaces ({@link ServiceMap},
 * {@link PluginEvents}) itself, so that `declare module` merging into this module reaches them.
 * Lines beginning "Contract:" are behaviour the kernel guarantees and tests pin.
 */

import type { JsonObject } from './plugin-api/basics.js';
import type { pluginEvent } from './plugin-api/plugins.js';
import type { ContextBudget } from './plugin-api/runtime.js';
import type { GatewayService, HistoryService, UploadsService } from './plugin-api/services.js';
import type { ToolContext } from './plugin-api/tools.js';

export * from './plugin-api/basics.js';
export * from './plugin-api/content.js';
export * from './plugin-api/plugins.js';
export * from './plugin-api/settings.js';
export * from './plugin-api/tools.js';
export * from './plugin-api/providers.js';
export * from './plugin-api/runtime.js';
export * from './plugin-api/hooks.js';
export * from './plugin-api/events.js';
export * from './plugin-api/services.js';
export * from './plugin-api/errors.js';

/**
 * Services by key, for `ctx.provide` and `ctx.service`. The plugin that owns a service declares
 * it by merging, and every plugin compiled with that declaration gets the type without importing
 * the owner's files:
 * `declare module 'liveagent/plugin-api' { interface ServiceMap { weather: WeatherService } }`.
 * The services several plugins implement (or a third party could) are declared here.
 */
export interface ServiceMap {
  /** Stored conversations: provided by one history backend (history-sqlite, history-postgres, or any plugin). */
  history: HistoryService;
  /** Files users attach, staged for messages: provided by the uploads plugin. */
  uploads: UploadsService;
  /** WebSocket and `/api/*` access for the WebUI and remote clients: provided by the gateway plugin (hosts that serve one). */
  gateway: GatewayService;
}

/**
 * Payloads of the events plugins emit ({@link ToolContext.emit}), by name. The kernel's own are
 * here; a plugin declares its own by merging (`interface PluginEvents { weather_alert: {...} }`),
 * and readers get them typed with {@link pluginEvent}. Payloads must be JSON values.
 */
export interface PluginEvents {
  /** A compaction: `phase` `start`, then `end` or `error`, with `trigger` and `round`; `end` carries the checkpoint's `tokensBefore`, `tokensAfter`, `coveredMessageCount`, `kind`, `summary`. */
  compaction: JsonObject;
  /** The context budget of a request: a {@link ContextBudget} plus `round`. */
  context: JsonObject;
  /** A notice that is not an error: `kind` (`retry`, `provider`, ...), `message`. */
  notice: JsonObject;
}
