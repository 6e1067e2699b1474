/**
 * The kernel: builds the container, loads plugins through one door (builtins and third-party
 * alike), owns the frozen hooks, and hands out the runtime. It knows no provider, tool,
 * database, socket or UI.
 */
import { asClass, asValue, createContainer, InjectionMode, type AwilixContainer } from 'awilix';
import type { Disposable, KernelHookTaps, Plugin, PluginContext, PluginModule, RuntimeErrorInfo, RuntimePaths, SessionHookTaps, Settings } from '../plugin-api.js';
import { ConfigError, PluginError, RuntimeError, toErrorInfo } from './errors.js';
import { createKernelHooks, createSessionHooks, facadeFor, trackDisposable, type KernelHooks, type SessionHooks } from './hooks.js';
import { createLogger, type LogSink } from './logger.js';
import { resolvePaths } from './paths.js';
import { tapKernelRequestParts } from './request-parts.js';
import { discoverThirdParty, orderPlugins, resolvePluginModule } from './plugin-loader.js';
import { ProviderRegistry, ServiceRegistry, ToolRegistry } from './registries.js';
import { Runtime } from './runtime.js';
import { SessionManager } from './sessions.js';
import { FileSettingsStore, validateSettings } from './settings.js';


/** Every container key, in one place. */
export const Keys = {
  paths: 'paths',
  settings: 'settings',
  logger: 'logger',
  kernelHooks: 'kernelHooks',
  sessionHooks: 'sessionHooks',
  tools: 'tools',
  providers: 'providers',
  services: 'services',
  sessions: 'sessions',
  runtime: 'runtime',
} as const;

export interface KernelOptions {
  /** `$LIVEAGENT_HOME` (default: the environment, else ~/.liveagent). */
  home?: string;
  /** Plugins that ship with the host, loaded first in the order given. */
  builtins?: PluginModule[];
  /** Extra plugins (tests, embedders). */
  plugins?: PluginModule[];
  /** Use these settings instead of reading settings.json (still validated). */
  settings?: Settings;
  /** Load third-party plugins from `<home>/plugins` and settings (default true). */
  thirdParty?: boolean;
  logSink?: LogSink;
}

export interface LoadedPlugin {
  name: string;
  status: 'active' | 'failed' | 'unloaded';
  /** How long `apply` took (ms), for start-up budgets. */
  applyMs?: number;
  error?: RuntimeErrorInfo;
}

export class Kernel {
  readonly loaded: LoadedPlugin[] = [];
  private readonly disposers: Array<{ name: string; subs: Disposable[] }> = [];
  private stopped = false;

  constructor(
    readonly container: AwilixContainer,
    readonly hooks: KernelHooks,
    readonly sessionHooks: SessionHooks,
    readonly runtime: Runtime,
    readonly settings: FileSettingsStore,
    readonly paths: RuntimePaths,
    readonly services: ServiceRegistry,
    readonly sessions: SessionManager,
  ) {}

  /** Failures of plugins that did not load. */
  get failures(): RuntimeErrorInfo[] {
    return this.loaded.filter((p) => p.status === 'failed').map((p) => p.error!);
  }

  track(name: string, subs: Disposable[]) {
    this.disposers.push({ name, subs });
  }

  /**
   * Unload one plugin: everything it registered or tapped is undone, in reverse order (its
   * tools and providers disappear, its taps stop running). Plugins that require it are unloaded
   * first. Returns the names unloaded.
   */
  unload(name: string): string[] {
    if (!this.disposers.some((d) => d.name === name)) return [];
    const dependents = this.loaded.filter((p) => p.status === 'active' && this.requiresOf.get(p.name)?.includes(name)).map((p) => p.name);
    const done = dependents.flatMap((d) => this.unload(d));
    const [entryToUndo] = this.disposers.splice(this.disposers.findIndex((d) => d.name === name), 1);
    if (entryToUndo) disposeAll(entryToUndo.subs);
    const entry = this.loaded.find((p) => p.name === name);
    if (entry) entry.status = 'unloaded';
    return [...done, name];
  }

  /** `requires` of every loaded plugin, for unloading dependents first. */
  readonly requiresOf = new Map<string, string[]>();

  /** Stop runs, let plugins finish their writes, then undo every registration in reverse order. */
  async shutdown(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    const runs = this.sessions.all().flatMap((s) => (s.activeRun ? [s.activeRun] : []));
    for (const r of runs) r.abort('shutdown');
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all(runs.map((r) => r.result)), new Promise((r) => (timer = setTimeout(r, 5000)))]);
    clearTimeout(timer);
    await this.hooks.shutdown.promise();
    for (const { subs } of this.disposers.reverse()) disposeAll(subs);
    this.sessions.clear();
    await this.container.dispose();
  }
}

/** Undo registrations in reverse order; one failing disposer does not stop the rest. */
function disposeAll(subs: Disposable[]): void {
  for (const d of subs.splice(0).reverse()) {
    try {
      d.dispose();
    } catch {
      /* keep undoing the rest */
    }
  }
}

export async function createKernel(options: KernelOptions = {}): Promise<Kernel> {
  const paths = resolvePaths(options.home);
  const log = (source: string) => createLogger(source, options.logSink);
  const logger = log('kernel');
  const settings = new FileSettingsStore(paths.settingsFile, options.settings ? validateSettings(options.settings) : undefined);
  const kernelHooks = createKernelHooks();
  const sessionHooks = createSessionHooks();
  const container = createContainer({ injectionMode: InjectionMode.PROXY, strict: true });
  container.register({
    [Keys.paths]: asValue(paths),
    [Keys.settings]: asValue(settings),
    [Keys.logger]: asValue(logger),
    [Keys.kernelHooks]: asValue(kernelHooks),
    [Keys.sessionHooks]: asValue(sessionHooks),
    [Keys.tools]: asValue(new ToolRegistry()),
    [Keys.providers]: asValue(new ProviderRegistry()),
    [Keys.services]: asValue(new ServiceRegistry()),
    [Keys.sessions]: asClass(SessionManager).singleton(),
    [Keys.runtime]: asClass(Runtime).singleton(),
  });
  const tools = container.resolve<ToolRegistry>(Keys.tools);
  const providers = container.resolve<ProviderRegistry>(Keys.providers);
  const services = container.resolve<ServiceRegistry>(Keys.services);
  const runtime = container.resolve<Runtime>(Keys.runtime);
  const kernel = new Kernel(container, kernelHooks, sessionHooks, runtime, settings, paths, services, container.resolve(Keys.sessions));

  const reportFailure = (info: RuntimeErrorInfo) => {
    logger.error(info.message);
    if (kernelHooks.failed.isUsed()) kernelHooks.failed.call(info);
  };
  // The kernel's own request parts sit at their documented stages, tapped before any plugin.
  kernel.track('kernel', tapKernelRequestParts(sessionHooks, reportFailure));

  // Gather every plugin: builtins, extras, then third-party. A third-party plugin that cannot
  // be imported is reported by name and skipped; the host keeps going.
  const candidates: Plugin[] = [];
  const origins = new Map<string, string>();
  const add = async (mod: PluginModule, origin: string) => {
    const p = await resolvePluginModule(mod, origin);
    candidates.push(p);
    origins.set(p.name, origin);
  };
  for (const mod of options.builtins ?? []) await add(mod, 'builtin');
  for (const mod of options.plugins ?? []) await add(mod, 'embedded');
  if (options.thirdParty !== false) {
    for (const found of discoverThirdParty(paths.plugins, paths.home, settings.get().plugins)) {
      try {
        await add(await found.load(), found.origin);
      } catch (err) {
        const info = err instanceof RuntimeError ? err.toInfo() : toErrorInfo(new PluginError(found.origin, `cannot load plugin from ${found.origin}: ${(err as Error).message}`, { cause: err }));
        kernel.loaded.push({ name: found.origin, status: 'failed', error: info });
        reportFailure(info);
      }
    }
  }

  const ordered = orderPlugins(candidates); // throws DependencyError naming the plugins
  const failed = new Set<string>();
  for (const plugin of ordered) {
    const blocker = (plugin.requires ?? []).find((r) => failed.has(r));
    if (blocker) {
      const info = new PluginError(plugin.name, `plugin "${plugin.name}" was not loaded because plugin "${blocker}", which it requires, failed`).toInfo();
      failed.add(plugin.name);
      kernel.loaded.push({ name: plugin.name, status: 'failed', error: info });
      reportFailure(info);
      continue;
    }
    const subs: Disposable[] = [];
    const started = performance.now();
    try {
      const ctx = makeContext(plugin, subs, { kernelHooks, sessionHooks, tools, providers, services, settings, paths, runtime, log, reportFailure });
      await plugin.apply(ctx);
      kernel.track(plugin.name, subs);
      kernel.requiresOf.set(plugin.name, plugin.requires ?? []);
      kernel.loaded.push({ name: plugin.name, status: 'active', applyMs: performance.now() - started });
    } catch (err) {
      disposeAll(subs);
      const info =
        err instanceof RuntimeError && err.plugin === plugin.name
          ? err.toInfo()
          : new PluginError(plugin.name, `plugin "${plugin.name}" failed to apply: ${(err as Error)?.message ?? String(err)}`, { hook: 'apply', cause: err }).toInfo();
      failed.add(plugin.name);
      kernel.loaded.push({ name: plugin.name, status: 'failed', error: info });
      reportFailure(info);
    }
  }
  await kernelHooks.ready.promise();
  return kernel;
}

interface ContextDeps {
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
}

function makeContext(plugin: Plugin, subs: Disposable[], d: ContextDeps): PluginContext {
  const name = plugin.name;
  const current = d.settings.get();
  const raw = plugin.settingsKey ? current[plugin.settingsKey] : current.pluginSettings?.[name];
  let config: unknown = raw;
  if (plugin.settingsSchema) {
    const r = plugin.settingsSchema.safeParse(raw ?? {});
    if (!r.success) {
      const i = r.error.issues[0]!;
      const where = plugin.settingsKey ?? `pluginSettings.${name}`;
      throw new ConfigError(`settings for plugin "${name}": ${[where, ...i.path.map(String)].join('.')}: ${i.message}`, { plugin: name });
    }
    config = r.data;
  }
  const track = (disp: Disposable) => trackDisposable(subs, disp);
  if (plugin.settingsSchema) {
    const key = plugin.settingsKey;
    track(d.settings.addSection(name, key ?? `pluginSettings.${name}`, (s) => (key ? s[key] : s.pluginSettings?.[name]), plugin.settingsSchema));
  }
  return Object.freeze({
    name,
    hooks: facadeFor<KernelHooks, KernelHookTaps>(name, d.kernelHooks as never, subs, d.reportFailure),
    sessionHooks: facadeFor<SessionHooks, SessionHookTaps>(name, d.sessionHooks as never, subs, d.reportFailure),
    registerTool: (tool) => track(d.tools.add(tool, name)),
    registerProvider: (provider) => track(d.providers.add(provider, name)),
    provide: (key, service) => track(d.services.provide(key, service, name)),
    service: <T>(key: string) => d.services.get<T>(key),
    logger: d.log(name),
    reportFailure: (message, details) => d.reportFailure(new PluginError(name, `plugin "${name}": ${message}`, details ? { details } : {}).toInfo()),
    config,
    settings: d.settings,
    subscriptions: subs,
    paths: d.paths,
    runtime: d.runtime,
  } satisfies PluginContext);
}
