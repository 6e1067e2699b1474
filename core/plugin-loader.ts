/**
 * Finding, validating and ordering plugins. Third-party plugins come from folders under
 * `$LIVEAGENT_HOME/plugins/<name>/` (a package.json and an entry) and from npm package names in
 * settings; both go through the same manifest check as the builtins.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { register } from 'node:module';
import { z } from 'zod';
import type { Plugin, PluginModule, RuntimeErrorInfo } from '../plugin-api.js';
import { DependencyError, PluginError } from './errors.js';
import { ONE_OFF_PARSE } from './validate-once.js';

const PluginManifestSchema = z.object({
  name: z.string().regex(/^[A-Za-z0-9@/._-]{1,100}$/, 'must be 1-100 letters, digits, @ / . _ or -'),
  version: z.string().optional(),
  requires: z.array(z.string().min(1)).optional(),
  enforce: z.enum(['pre', 'post']).optional(),
  settingsKey: z.string().min(1).optional(),
  settingsSchema: z.custom((v) => v === undefined || (!!v && typeof (v as { safeParse?: unknown }).safeParse === 'function'), 'must have safeParse').optional(),
  settingsWriteSchema: z.custom((v) => v === undefined || (!!v && typeof (v as { safeParse?: unknown }).safeParse === 'function'), 'must have safeParse').optional(),
  apply: z.custom<Plugin['apply']>((v) => typeof v === 'function', 'must be a function'),
});

const PackageJsonSchema = z.object({
  name: z.string().optional(),
  main: z.string().optional(),
  exports: z.union([z.string(), z.record(z.string(), z.unknown())]).optional(),
});

/** Check a plugin object's shape; the error names the plugin (or where it came from). */
export function validatePlugin(value: unknown, origin: string): Plugin {
  const r = PluginManifestSchema.safeParse(value, ONE_OFF_PARSE);
  if (!r.success) {
    const i = r.error.issues[0]!;
    const name = value && typeof value === 'object' && typeof (value as { name?: unknown }).name === 'string' ? (value as { name: string }).name : origin;
    throw new PluginError(name, `plugin "${name}" (${origin}) is malformed: ${i.path.join('.') || 'plugin'} ${i.message}`);
  }
  return value as Plugin;
}

/** Turn a module's default export (a plugin or a factory) into a validated plugin. */
export async function resolvePluginModule(mod: PluginModule, origin: string, options?: Record<string, unknown>): Promise<Plugin> {
  const value = typeof mod === 'function' ? await (mod as (o?: unknown) => Plugin | Promise<Plugin>)(options) : mod;
  return validatePlugin(value, origin);
}

function entryOf(dir: string): string {
  const pkgFile = path.join(dir, 'package.json');
  const raw = JSON.parse(fs.readFileSync(pkgFile, 'utf8'));
  const pkg = PackageJsonSchema.parse(raw);
  let entry: string | undefined;
  if (typeof pkg.exports === 'string') entry = pkg.exports;
  else if (pkg.exports) {
    const dot = (pkg.exports['.'] ?? pkg.exports) as unknown;
    if (typeof dot === 'string') entry = dot;
    else if (dot && typeof dot === 'object') {
      const d = dot as Record<string, unknown>;
      const pick = d.import ?? d.default ?? d.node;
      if (typeof pick === 'string') entry = pick;
    }
  }
  entry ??= pkg.main ?? 'index.js';
  return path.resolve(dir, entry);
}

let resolverRegistered = false;

/**
 * Before the first third-party plugin is imported: `liveagent/plugin-api` resolves to this
 * package's built runtime half (dist/core/define-plugin.js) for every plugin (see
 * plugin-api-resolve.ts). Found from the package root, so the bundled CLI finds it too; without
 * a build (tests running the sources) nothing is registered and a plugin needs only types.
 */
function registerPluginApiResolver(): void {
  if (resolverRegistered) return;
  resolverRegistered = true;
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++, dir = path.dirname(dir)) {
    const pkg = path.join(dir, 'package.json');
    try {
      if ((JSON.parse(fs.readFileSync(pkg, 'utf8')) as { name?: string }).name !== 'liveagent') continue;
    } catch {
      continue;
    }
    const runtime = path.join(dir, 'dist', 'core', 'define-plugin.js');
    const hook = path.join(dir, 'dist', 'core', 'plugin-api-resolve.js');
    if (fs.existsSync(runtime) && fs.existsSync(hook)) register(pathToFileURL(hook).href, { data: { url: pathToFileURL(runtime).href } });
    return;
  }
}

export interface DiscoveredPlugin {
  origin: string;
  load(): Promise<PluginModule>;
}

/** Plugin folders under `<home>/plugins` and npm names from settings, not yet imported. */
export function discoverThirdParty(pluginsDir: string, home: string, npmNames: string[] = []): DiscoveredPlugin[] {
  const found: DiscoveredPlugin[] = [];
  let dirs: string[] = [];
  try {
    dirs = fs.readdirSync(pluginsDir, { withFileTypes: true }).filter((d) => d.isDirectory() || d.isSymbolicLink()).map((d) => d.name).sort();
  } catch {
    /* no plugins folder: nothing to load */
  }
  for (const name of dirs) {
    const dir = path.join(pluginsDir, name);
    if (!fs.existsSync(path.join(dir, 'package.json'))) continue;
    found.push({
      origin: `${dir}`,
      load: async () => {
        registerPluginApiResolver();
        return (await import(pathToFileURL(entryOf(dir)).href)).default as PluginModule;
      },
    });
  }
  for (const name of npmNames) {
    found.push({
      origin: `npm package "${name}"`,
      load: async () => {
        // Installed under $LIVEAGENT_HOME (npm install --prefix ~/.liveagent NAME) first, then
        // wherever the runtime itself resolves packages from.
        const dir = path.join(home, 'node_modules', ...name.split('/'));
        const specifier = fs.existsSync(path.join(dir, 'package.json')) ? pathToFileURL(entryOf(dir)).href : name;
        registerPluginApiResolver();
        return (await import(specifier)).default as PluginModule;
      },
    });
  }
  return found;
}

/** A plugin gathered for loading, with where it came from. */
export interface PluginCandidate {
  plugin: Plugin;
  /** `builtin`, `embedded`, a plugin folder or `npm package "name"`. */
  origin: string;
  /** From `$LIVEAGENT_HOME/plugins` or settings (may be skipped); else the host's own (may not). */
  thirdParty: boolean;
}

function describeOrigin(c: PluginCandidate): string {
  return c.thirdParty ? c.origin : `the ${c.origin} plugin`;
}

/**
 * One plugin per name. A third-party plugin whose name is taken (by a builtin, or by a
 * third-party plugin earlier in sorted order) is skipped with a failure naming both sources; the
 * first one is kept. Two of the host's own plugins with one name are the host's bug: a
 * DependencyError naming both.
 */
export function dedupePlugins(candidates: PluginCandidate[]): { kept: PluginCandidate[]; skipped: Array<{ origin: string; error: RuntimeErrorInfo }> } {
  const byName = new Map<string, PluginCandidate>();
  const kept: PluginCandidate[] = [];
  const skipped: Array<{ origin: string; error: RuntimeErrorInfo }> = [];
  for (const c of candidates) {
    const name = c.plugin.name;
    const first = byName.get(name);
    if (!first) {
      byName.set(name, c);
      kept.push(c);
      continue;
    }
    if (!c.thirdParty) throw new DependencyError(`two plugins are named "${name}": ${describeOrigin(first)} and ${describeOrigin(c)}`, { plugin: name, origins: [first.origin, c.origin] });
    const message = first.thirdParty
      ? `plugin "${name}" from ${c.origin} was skipped: the plugin from ${first.origin} has the same name and was loaded instead (rename one of them)`
      : `plugin "${name}" from ${c.origin} was skipped: it has the name of a ${first.origin} plugin, which was kept (rename the plugin in ${c.origin})`;
    skipped.push({ origin: c.origin, error: new PluginError(name, message, { details: { origin: c.origin, keptOrigin: first.origin } }).toInfo() });
  }
  return { kept, skipped };
}

/**
 * Load order: `requires` first (a plugin after what it requires), then `enforce` (pre, normal,
 * post), then the given order. Missing requirements and cycles are errors naming the plugins.
 */
export function orderPlugins(plugins: Plugin[]): Plugin[] {
  const byName = new Map<string, Plugin>();
  for (const p of plugins) {
    if (byName.has(p.name)) throw new DependencyError(`two plugins are named "${p.name}"`, { plugin: p.name });
    byName.set(p.name, p);
  }
  for (const p of plugins) {
    for (const r of p.requires ?? []) {
      if (!byName.has(r)) throw new DependencyError(`plugin "${p.name}" requires "${r}", which is not loaded`, { plugin: p.name, missing: r });
    }
  }
  const rank = (p: Plugin) => (p.enforce === 'pre' ? 0 : p.enforce === 'post' ? 2 : 1);
  const base = plugins.map((p, i) => ({ p, i })).sort((a, b) => rank(a.p) - rank(b.p) || a.i - b.i).map((x) => x.p);
  const done = new Set<string>();
  const out: Plugin[] = [];
  while (out.length < base.length) {
    const next = base.find((p) => !done.has(p.name) && (p.requires ?? []).every((r) => done.has(r)));
    if (!next) {
      const stuck = base.filter((p) => !done.has(p.name)).map((p) => p.name);
      throw new DependencyError(`plugin requirements form a cycle among: ${stuck.join(', ')}`, { plugins: stuck });
    }
    done.add(next.name);
    out.push(next);
  }
  return out;
}
