/**
 * One plugin's way in: the context its `apply` receives, and `apply` itself, bounded in time and
 * run in the plugin's blame scope (core/crash-guard.ts). A plugin whose `apply` throws or does
 * not finish within the timeout is reported by name, everything it registered so far is undone,
 * and its context is revoked: a late `registerTool` or `tap` from an `apply` still running
 * throws instead of sneaking a registration past the failure.
 */
import type { Disposable, ExperimentalFeature, KernelHookTaps, Plugin, PluginContext, ProviderEvent, RuntimeApi, RuntimeErrorInfo, RuntimePaths, SessionHookTaps, SettingsStore } from '../plugin-api.js';
import { asKernel, asPlugin, ownTool, settleWithin, type CrashOwner } from './crash-guard.js';
import { ConfigError, PluginError, RuntimeError } from './errors.js';
import { experimentalOf } from './experimental.js';
import { ONE_OFF_PARSE } from './validate-once.js';
import { facadeFor, trackDisposable, type KernelHooks, type SessionHooks, type TapEnv } from './hooks.js';
import type { createLogger } from './logger.js';
import type { ProviderRegistry, ServiceRegistry, ToolRegistry } from './registries.js';
import type { Runtime } from './runtime.js';
import type { FileSettingsStore } from './settings.js';

/** Default bound for a plugin's `apply` (and its `ready` / `shutdown` taps), in ms. */
export const DEFAULT_APPLY_TIMEOUT_MS = 10_000;

export interface ContextDeps {
  kernelHooks: KernelHooks;
  sessionHooks: SessionHooks;
  tools: ToolRegistry;
  providers: ProviderRegistry;
  services: ServiceRegistry;
  settings: FileSettingsStore;
  paths: RuntimePaths;
  runtime: Runtime;
  log: (source: string) => ReturnType<typeof createLogger>;
  reportFailure: (info: RuntimeErrorInfo) => void;
  /** Where a `ready` tap's failure goes (the kernel unloads the plugin after `ready`). */
  pluginFailed: (info: RuntimeErrorInfo) => void;
  owner: CrashOwner;
  timeoutMs: number;
}

/** A plugin's registrations, and whether it may still add to them. */
export interface PluginSlot {
  readonly name: string;
  readonly subs: Disposable[];
  /** Set once the plugin failed or was unloaded: registering then throws this. */
  revoked?: PluginError;
}

/** Undo registrations in reverse order; one failing disposer does not stop the rest. */
export function disposeAll(subs: Disposable[]): void {
  for (const d of subs.splice(0).reverse()) {
    try {
      d.dispose();
    } catch {
      /* keep undoing the rest */
    }
  }
}

/** Revoke a plugin's context and undo everything it registered. */
export function revoke(slot: PluginSlot, why: string): void {
  slot.revoked ??= new PluginError(slot.name, `plugin "${slot.name}" ${why}, so it can no longer register or tap anything`);
  disposeAll(slot.subs);
}

/**
 * Run `plugin.apply` in its blame scope, bounded by `deps.timeoutMs`. Resolves to the slot of a
 * plugin that is now active, or to the failure (already undone, not yet reported).
 */
export async function applyPlugin(plugin: Plugin, deps: ContextDeps): Promise<{ slot: PluginSlot; error?: RuntimeErrorInfo }> {
  const name = plugin.name;
  const slot: PluginSlot = { name, subs: [] };
  try {
    const ctx = makeContext(plugin, slot, deps);
    const work = asPlugin({ plugin: name, hook: 'apply', owner: deps.owner }, async () => plugin.apply(ctx));
    const ms = deps.timeoutMs;
    await settleWithin(work, ms, () => new PluginError(name, `plugin "${name}" did not finish apply within ${ms} ms and was skipped (runtime.pluginApplyTimeoutMs sets the limit)`, { hook: 'apply' }));
    return { slot };
  } catch (err) {
    revoke(slot, 'failed to load');
    const info =
      err instanceof RuntimeError && err.plugin === name
        ? err.toInfo()
        : new PluginError(name, `plugin "${name}" failed to apply: ${(err as Error)?.message ?? String(err)}`, { hook: 'apply', cause: err }).toInfo();
    return { slot, error: info };
  }
}

/** A plugin that did not opt into `wire_request` (Plugin.experimental) never sees one in its providerEvent taps. */
function gateExperimental(hooks: SessionHookTaps, features: ReadonlySet<ExperimentalFeature>): SessionHookTaps {
  if (features.has('wire_request')) return hooks;
  const providerEvent: SessionHookTaps['providerEvent'] = {
    tap: (fn, options) => hooks.providerEvent.tap((ev: ProviderEvent, rc) => (ev.type === 'wire_request' ? undefined : fn(ev, rc)), options),
  };
  return Object.freeze({ ...hooks, providerEvent });
}

function makeContext(plugin: Plugin, slot: PluginSlot, d: ContextDeps): PluginContext {
  const name = plugin.name;
  const current = d.settings.get();
  const raw = plugin.settingsKey ? current[plugin.settingsKey] : current.pluginSettings?.[name];
  let config: unknown = raw;
  if (plugin.settingsSchema) {
    const r = plugin.settingsSchema.safeParse(raw ?? {}, ONE_OFF_PARSE);
    if (!r.success) {
      const i = r.error.issues[0]!;
      const where = plugin.settingsKey ?? `pluginSettings.${name}`;
      throw new ConfigError(`settings for plugin "${name}": ${[where, ...i.path.map(String)].join('.')}: ${i.message}`, { plugin: name });
    }
    config = r.data;
  }
  const subs = slot.subs;
  const track = (register: () => Disposable) => {
    if (slot.revoked) throw slot.revoked;
    return trackDisposable(subs, register());
  };
  if (plugin.settingsSchema) {
    const key = plugin.settingsKey;
    track(() => d.settings.addSection(name, key ?? `pluginSettings.${name}`, (s) => (key ? s[key] : s.pluginSettings?.[name]), plugin.settingsSchema!, plugin.settingsWriteSchema));
  }
  const env: TapEnv = { report: d.reportFailure, pluginFailed: d.pluginFailed, log: d.log('kernel').error, owner: d.owner, timeoutMs: d.timeoutMs };
  const revoked = () => slot.revoked;
  return Object.freeze({
    name,
    hooks: facadeFor<KernelHooks, KernelHookTaps>(name, d.kernelHooks as never, subs, env, revoked),
    sessionHooks: gateExperimental(facadeFor<SessionHooks, SessionHookTaps>(name, d.sessionHooks as never, subs, env, revoked), experimentalOf(plugin)),
    registerTool: (tool) =>
      track(() => {
        const reg = d.tools.add(tool, name);
        if (tool && typeof tool === 'object') ownTool(tool, name, d.owner);
        return reg;
      }),
    registerProvider: (provider) => track(() => d.providers.add(provider, name)),
    provide: (key, service) => track(() => d.services.provide(key, service, name)),
    service: <T>(key: string) => d.services.get<T>(key),
    logger: d.log(name),
    reportFailure: (message, details) => d.reportFailure(new PluginError(name, `plugin "${name}": ${message}`, details ? { details } : {}).toInfo()),
    config,
    settings: settingsFor(plugin, d.settings, track),
    subscriptions: subs,
    paths: d.paths,
    runtime: kernelSide(d.runtime as RuntimeApi),
  } satisfies PluginContext);
}

/**
 * `ctx.settings`: the store as kernel work, with `share` (experimental) only for a plugin that
 * opted into `shared_settings`, and tracked, so unloading that plugin ends the sharing.
 */
function settingsFor(plugin: Plugin, store: FileSettingsStore, track: (register: () => Disposable) => Disposable): SettingsStore {
  const view = kernelSide(store as SettingsStore);
  const allowed = experimentalOf(plugin).has('shared_settings');
  const share: SettingsStore['share'] = (backend) => {
    if (!allowed) throw new ConfigError(`plugin "${plugin.name}": settings.share is experimental: list 'shared_settings' in the plugin's experimental`, { plugin: plugin.name });
    let handle!: ReturnType<SettingsStore['share']>;
    track(() => (handle = view.share(backend)));
    return handle;
  };
  return new Proxy(view, { get: (t, key) => (key === 'share' ? share : Reflect.get(t, key, t)) });
}

const kernelSideCache = new WeakMap<object, object>();

/**
 * A view of a kernel object whose methods run outside the calling plugin's blame scope: a run
 * the gateway starts, or a settings file watch it happens to open first, is kernel work, and
 * what goes wrong in it must not be blamed on the gateway.
 */
function kernelSide<T extends object>(target: T): T {
  const cached = kernelSideCache.get(target);
  if (cached) return cached as T;
  const methods = new Map<PropertyKey, Function>();
  const view = new Proxy(target, {
    get(t, key) {
      const value = Reflect.get(t, key, t) as unknown;
      if (typeof value !== 'function') return value;
      let bound = methods.get(key);
      if (!bound) {
        const fn = value as (...a: unknown[]) => unknown;
        bound = (...args: unknown[]) => asKernel(() => fn.apply(t, args));
        methods.set(key, bound);
      }
      return bound;
    },
  });
  kernelSideCache.set(target, view);
  return view;
}
