// ────────────────────────────────────────────────────────────────────────────────────────────
// Plugins and their context
// ────────────────────────────────────────────────────────────────────────────────────────────

import type { PluginEvents, ServiceMap } from '../plugin-api.js';
import type { Disposable, JsonObject, Logger, SchemaLike } from './basics.js';
import type { LifecycleEvent } from './events.js';
import type { KernelHookTaps, SessionHookTaps } from './hooks.js';
import type { Provider, ProviderEvent } from './providers.js';
import type { RequestContext, RuntimeApi, SessionInfo } from './runtime.js';
import type { SettingsPatchOp, SettingsStore, SharedSettingsBackend } from './settings.js';
import type { ToolDefinition } from './tools.js';

/**
 * A plugin: a plain object. `apply` runs once at boot, in load order.
 * Contract: load order follows `requires` (a plugin loads after what it requires), then
 * `enforce` ('pre' first, 'post' last), then the order given. A missing requirement or a cycle
 * stops boot with an error that names the plugins. Names are unique: a third-party plugin whose
 * name a builtin (or a third-party plugin earlier in sorted folder order) already has is skipped
 * and reported as a failed plugin naming both sources; the host boots with the first one.
 */
export interface Plugin<Config = unknown> {
  /** Unique name, e.g. `provider-anthropic` or `acme-weather`. Used in every error and tap. */
  name: string;
  /** Semver-ish version, informational. */
  version?: string;
  /** Names of plugins that must load before this one. */
  requires?: string[];
  /** Place relative to plugins without `enforce`. */
  enforce?: 'pre' | 'post';
  /**
   * Settings section this plugin reads, validated at boot and on every save. The section lives in
   * settings.json under `pluginSettings.<name>` unless `settingsKey` names a top-level key
   * (builtins use it, e.g. `mcpServers`). Its output type is `ctx.config`'s type: no cast needed.
   */
  settingsSchema?: SchemaLike<Config>;
  /** Top-level settings key this plugin owns instead of `pluginSettings.<name>` (e.g. `mcpServers`). */
  settingsKey?: string;
  /**
   * A stricter check of the section, on a save that changes it ({@link SettingsStore.set}), on
   * top of `settingsSchema`: for values the running plugin tolerates (at boot, or in an edit of
   * the file made elsewhere) but a save should refuse. E.g. MCP: at boot a bad server entry fails
   * only its server; a save that writes one is refused, naming the entry and field. A save that
   * leaves the section as it was never runs it (so a bad value already on disk does not block
   * saving other sections).
   */
  settingsWriteSchema?: SchemaLike;
  /**
   * Wire the plugin up. May be async. Contract: a throw or rejection here, or not settling
   * within `runtime.pluginApplyTimeoutMs` (default 10 s), is reported as a plugin failure with
   * the plugin's name; what it registered so far is undone, its context is revoked (registering
   * or tapping later throws), plugins requiring it are skipped, and the host goes on without it.
   * Errors thrown later by code `apply` started (a timer, a promise nobody awaits) are reported
   * with the plugin's name and the host keeps running (see {@link SessionHookTaps}).
   */
  apply(ctx: PluginContext<Config>): void | Promise<void>;
  /**
   * The `@experimental` members this plugin uses: without its name here, an experimental event
   * is not delivered to the plugin's taps. The kernel applies it to every plugin (a plain object
   * too) and fails the plugin on a name that is not an {@link ExperimentalFeature}.
   */
  experimental?: ExperimentalFeature[];
}

/**
 * Members of this contract that may change in any release; a plugin names those it uses in
 * {@link Plugin.experimental}. `wire_request`: the {@link ProviderEvent} carrying the provider's
 * HTTP body, for observers such as the debug log. `shared_settings`: {@link SettingsStore.share},
 * settings kept centrally for several processes (plugins/team-settings).
 */
export type ExperimentalFeature = 'wire_request' | 'shared_settings';

/**
 * Types a plugin (`Config` from its `settingsSchema`, so `ctx.config` needs no cast) and checks
 * its {@link Plugin.experimental} names at once (throws on an unknown one; the kernel applies the
 * opt-in either way). A plugin module default-exports its result (or a factory returning it).
 */
export declare function definePlugin<Config = unknown>(plugin: Plugin<Config>): Plugin<Config>;

/** Identity helper that types `execute`'s (and `prepareArguments`') arguments from `parameters`: a zod schema's output type. */
export declare function defineTool<Args>(tool: ToolDefinition<Args>): ToolDefinition<Args>;

/**
 * The payload of `event` when it is the plugin event `name` (under its own `type`, or as
 * `type: 'custom'` with that `name`), typed as {@link PluginEvents} declares it; else undefined.
 * It is the emitter's payload as sent, not validated: parse it when the emitter is not trusted.
 */
export declare function pluginEvent<K extends keyof PluginEvents>(event: LifecycleEvent, name: K): PluginEvents[K] | undefined;

/**
 * `value` made safe inside a double-quoted attribute of a tag the model reads (`<file name="…">`),
 * on one line: `& < > " '` become entities, control, line-separator and bidi characters `&#x…;`.
 */
export declare function escapeAttribute(value: string): string;

/**
 * `text` with every closing `</tag` (any case, spaces allowed after `<` and `/`) made inert
 * (`&lt;/tag`), so untrusted text (a file, a tool output, a summary) wrapped in `<tag>…</tag>`
 * cannot end the wrapper early and speak outside it.
 */
export declare function neutralizeClosingTag(text: string, tag: string): string;

/**
 * `base` with a settings save's changes applied, as every save merges them (a copy; `base` is
 * untouched): `value` set at `path` (parents made objects as needed), a key removed when `value`
 * is absent, an object ensured with `object`. A {@link SharedSettingsBackend} applies a save's
 * ops to its stored document with this.
 */
export declare function applySettingsPatch(base: Record<string, unknown>, ops: readonly SettingsPatchOp[]): Record<string, unknown>;

/** What a plugin module may default-export. */
export type PluginModule = Plugin | ((options?: JsonObject) => Plugin | Promise<Plugin>);

/** The object each plugin receives. Made for that plugin alone: its taps and registrations carry its name. */
export interface PluginContext<Config = unknown> {
  /** The plugin's name. */
  readonly name: string;
  /** Process-wide hooks (ready, shutdown, session created, failed). Tap-only. */
  readonly hooks: KernelHookTaps;
  /**
   * Per-conversation hooks. A tap made here is applied to every session (existing and future);
   * the tap receives the session's {@link RequestContext} or {@link SessionInfo}.
   */
  readonly sessionHooks: SessionHookTaps;
  /** Register a tool. Disposing it withdraws the tool. Like every `register*` and `provide`, throws once the plugin failed to load or was unloaded. */
  registerTool<Args>(tool: ToolDefinition<Args>): Disposable;
  /** Register a provider. Disposing it withdraws the provider. */
  registerProvider(provider: Provider): Disposable;
  /** Share a service with other plugins under a key (one owner per key); a key in {@link ServiceMap} must get its declared type. */
  provide<K extends string>(key: K, service: K extends keyof ServiceMap ? ServiceMap[K] : unknown): Disposable;
  /** Get a service another plugin provides, typed by {@link ServiceMap}; undefined when nobody does. */
  service<K extends keyof ServiceMap>(key: K): ServiceMap[K] | undefined;
  /** A service no {@link ServiceMap} declaration in this program types: name its type yourself. */
  service<T = unknown>(key: string): T | undefined;
  /** The plugin's logger. */
  readonly logger: Logger;
  /**
   * Report a problem that does not stop the plugin (a bad entry in its settings, a server that
   * gave up): it is logged and reaches the kernel's `failed` hook with the plugin named.
   */
  reportFailure(message: string, details?: JsonObject): void;
  /** The plugin's settings section as `settingsSchema` parsed it (raw, `unknown`, without a schema). */
  readonly config: Config;
  /** The whole settings store (read, write, watch). */
  readonly settings: SettingsStore;
  /**
   * Everything pushed here is disposed when the plugin unloads (in reverse order). Registrations
   * and taps are tracked here too, and leave the list when disposed earlier.
   */
  readonly subscriptions: Disposable[];
  /** Paths the host runs with. */
  readonly paths: RuntimePaths;
  /**
   * The runtime: tools, providers, sessions. For hosts and plugins that drive conversations (the
   * gateway). Its calls run as the kernel's work: what goes wrong in a run a plugin starts is not
   * blamed on that plugin.
   */
  readonly runtime: RuntimeApi;
}

/** Where things live. */
export interface RuntimePaths {
  /** `$LIVEAGENT_HOME`, default `~/.liveagent`. */
  home: string;
  /** `<home>/settings.json`. */
  settingsFile: string;
  /** `<home>/uploads` (readable by tools, never writable). */
  uploads: string;
  /** `<home>/plugins`. */
  plugins: string;
}
