/**
 * The kernel: builds the container, loads plugins through one door (builtins and third-party
 * alike), owns the frozen hooks, and hands out the runtime. It knows no provider, tool,
 * database, socket or UI.
 */
import { asClass, asValue, createContainer, InjectionMode, type AwilixContainer } from 'awilix';
import type { Disposable, Plugin, PluginModule, RuntimeErrorInfo, RuntimePaths, Settings } from '../plugin-api.js';
import { asPlugin, installCrashGuard, registerCrashOwner } from './crash-guard.js';
import { PluginError, RuntimeError, toErrorInfo } from './errors.js';
import { createKernelHooks, createSessionHooks, type KernelHooks, type SessionHooks } from './hooks.js';
import { kernelCrashOwner } from './kernel-crashes.js';
import { createLogger, type LogSink } from './logger.js';
import { resolvePaths } from './paths.js';
import { applyPlugin, DEFAULT_APPLY_TIMEOUT_MS, disposeAll, revoke, type ContextDeps, type PluginSlot } from './plugin-context.js';
import { tapKernelRequestParts } from './request-parts.js';
import { dedupePlugins, discoverThirdParty, orderPlugins, resolvePluginModule, type PluginCandidate } from './plugin-loader.js';
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
  /**
   * How long a plugin's `apply` (and each `ready` / `shutdown` tap) may take before it is
   * reported failed and skipped (ms). Default: settings `runtime.pluginApplyTimeoutMs`, else 10000.
   */
  applyTimeoutMs?: number;
  /**
   * Catch uncaught exceptions and unhandled rejections while the kernel is alive, blaming the
   * plugin whose code threw (default true). Off for embedders that install their own handlers.
   */
  crashGuard?: boolean;
}

export interface LoadedPlugin {
  /** The plugin's name; for one that was never applied (import failed, name taken), where it came from. */
  name: string;
  /** `builtin`, `embedded`, a plugin folder or an npm package. */
  origin?: string;
  status: 'active' | 'failed' | 'unloaded';
  /** How long `apply` took (ms), for start-up budgets. */
  applyMs?: number;
  error?: RuntimeErrorInfo;
}

export class Kernel {
  readonly loaded: LoadedPlugin[] = [];
  private readonly disposers: PluginSlot[] = [];
  /** Undone at shutdown: the process-level crash handlers and this kernel's place among their owners. */
  readonly guards: Disposable[] = [];
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

  track(slot: PluginSlot) {
    this.disposers.push(slot);
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
    if (entryToUndo) revoke(entryToUndo, 'was unloaded');
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
    for (const slot of this.disposers.reverse()) revoke(slot, 'was unloaded at shutdown');
    this.sessions.clear();
    await this.container.dispose();
    disposeAll(this.guards);
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
  const owner = kernelCrashOwner({ logger, reportFailure, sessions: kernel.sessions });
  if (options.crashGuard !== false) kernel.guards.push(installCrashGuard());
  kernel.guards.push(registerCrashOwner(owner));
  settings.holdReports();
  try {
    await loadPlugins(kernel, options, { kernelHooks, sessionHooks, tools, providers, services, settings, paths, runtime, log, reportFailure, owner });
  } catch (err) {
    disposeAll(kernel.guards);
    throw err;
  } finally {
    settings.releaseReports();
  }
  return kernel;
}

type LoadDeps = Omit<ContextDeps, 'pluginFailed' | 'timeoutMs'>;

async function loadPlugins(kernel: Kernel, options: KernelOptions, deps: LoadDeps): Promise<void> {
  const { reportFailure, settings, paths } = deps;
  // The kernel's own request parts sit at their documented stages, tapped before any plugin.
  kernel.track({ name: 'kernel', subs: tapKernelRequestParts(deps.sessionHooks, reportFailure) });
  const fail = (name: string, info: RuntimeErrorInfo, origin?: string) => {
    kernel.loaded.push({ name, ...(origin ? { origin } : {}), status: 'failed', error: info });
    reportFailure(info);
  };

  // Gather every plugin: builtins, extras, then third-party. A third-party plugin that cannot
  // be imported, or whose name is taken, is reported by name and skipped; the host keeps going.
  const candidates: PluginCandidate[] = [];
  const add = async (mod: PluginModule, origin: string, thirdParty: boolean) => {
    candidates.push({ plugin: await resolvePluginModule(mod, origin), origin, thirdParty });
  };
  for (const mod of options.builtins ?? []) await add(mod, 'builtin', false);
  for (const mod of options.plugins ?? []) await add(mod, 'embedded', false);
  if (options.thirdParty !== false) {
    for (const found of discoverThirdParty(paths.plugins, paths.home, settings.get().plugins)) {
      try {
        // Module code runs at import: what it schedules is blamed on the folder (no name yet).
        await asPlugin({ plugin: found.origin, hook: 'load', owner: deps.owner }, async () => add(await found.load(), found.origin, true));
      } catch (err) {
        const info = err instanceof RuntimeError ? err.toInfo() : toErrorInfo(new PluginError(found.origin, `cannot load plugin from ${found.origin}: ${(err as Error).message}`, { cause: err }));
        fail(found.origin, info, found.origin);
      }
    }
  }
  const { kept, skipped } = dedupePlugins(candidates); // throws DependencyError for two builtins of one name
  for (const s of skipped) fail(s.origin, s.error, s.origin);
  const origins = new Map(kept.map((c) => [c.plugin.name, c.origin]));

  const ordered = orderPlugins(kept.map((c) => c.plugin)); // throws DependencyError naming the plugins
  const limit = options.applyTimeoutMs ?? settings.get().runtime?.pluginApplyTimeoutMs;
  const timeoutMs = typeof limit === 'number' && limit > 0 ? limit : DEFAULT_APPLY_TIMEOUT_MS;
  const readyFailures: RuntimeErrorInfo[] = [];
  const pluginFailed = (info: RuntimeErrorInfo) => {
    readyFailures.push(info);
    reportFailure(info);
  };
  const failed = new Set<string>();
  for (const plugin of ordered) {
    const origin = origins.get(plugin.name);
    const blocker = (plugin.requires ?? []).find((r) => failed.has(r));
    if (blocker) {
      failed.add(plugin.name);
      fail(plugin.name, new PluginError(plugin.name, `plugin "${plugin.name}" was not loaded because plugin "${blocker}", which it requires, failed`).toInfo(), origin);
      continue;
    }
    const started = performance.now();
    const { slot, error } = await applyPlugin(plugin, { ...deps, pluginFailed, timeoutMs });
    if (error) {
      failed.add(plugin.name);
      fail(plugin.name, error, origin);
      continue;
    }
    kernel.track(slot);
    kernel.requiresOf.set(plugin.name, plugin.requires ?? []);
    kernel.loaded.push({ name: plugin.name, ...(origin ? { origin } : {}), status: 'active', applyMs: performance.now() - started });
  }
  // A `ready` tap that throws (or hangs) fails its plugin alone: it is unloaded, the host boots.
  await deps.kernelHooks.ready.promise();
  for (const info of readyFailures) {
    const name = info.plugin;
    const entry = kernel.loaded.find((p) => p.name === name && p.status === 'active');
    if (!name || !entry) continue;
    kernel.unload(name);
    entry.status = 'failed';
    entry.error = info;
  }
}
