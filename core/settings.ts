/**
 * The settings store: `$LIVEAGENT_HOME/settings.json`, validated with zod on every read and
 * write. A bad value is refused with a message that names the field (and the provider, for
 * custom providers); the file on disk is only ever replaced atomically by a valid one, so
 * nothing already stored is lost.
 *
 * The file is shared: `serve`, any number of CLIs and a text editor may change it while a host
 * runs. A save merges into the file as it is then (settings-disk.ts), under a lock file, and
 * refuses to overwrite a file that does not parse or validate; edits made elsewhere are picked
 * up (a folder watch, plus a cheap stat on read) and reach `onChange` listeners. Unknown keys
 * are warnings, never errors (settings-warnings.ts).
 *
 * A team shares them instead: `share(backend)` (settings-shared.ts) keeps all but a few local
 * keys in one document every process reads and patches, and the file keeps the local ones.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Disposable, Logger, SchemaLike, Settings, SettingsStore, SharedSettingsBackend } from '../plugin-api.js';
import { ConfigError } from './errors.js';
import { createLogger } from './logger.js';
import { SettingsSchema, validateSettings } from './settings-schema.js';
import { ONE_OFF_PARSE } from './validate-once.js';
import { applyPatch, diffSettings, jsonEqual, readDisk, statStamp, withFileLock, writeAtomic, type Stamp } from './settings-disk.js';
import { SharedSettingsLayer } from './settings-shared.js';
import { intersectUnknown, unknownKeys, unknownKeyWarning, unrecognizedHint, type SettingsWarning } from './settings-warnings.js';

export type { SettingsWarning } from './settings-warnings.js';
export { CustomProviderSchema, SettingsSchema, validateSettings } from './settings-schema.js';

export function readSettingsFile(file: string): Settings {
  return readValidFile(file).settings;
}

function readValidFile(file: string): { settings: Settings; stamp: Stamp } {
  const r = readDisk(file);
  if (r.state === 'missing') return { settings: {}, stamp: r.stamp };
  if (r.state === 'invalid') throw new ConfigError(`${file} ${r.problem}`);
  return { settings: validateSettings(r.json, path.basename(file)), stamp: r.stamp };
}

/**
 * Top-level sections of the builtin plugins, known even to a host that does not load their
 * plugin (the CLI has no gateway), so one settings.json serves every host without warnings.
 * `mcp` is read by the MCP plugin without a section of its own (a plugin declares one key).
 * `$schema` is what editors add for completion.
 */
const HOST_SECTIONS = ['gateway', 'compaction', 'tools', 'askUserQuestion', 'mcpServers', 'mcp', '$schema'];

/** A plugin's own settings section, checked on every change as it was at boot. */
interface SectionCheck {
  plugin: string;
  /** A top-level key (`settingsKey`) or `pluginSettings.<name>`. */
  where: string;
  read(settings: Settings): unknown;
  schema: SchemaLike;
  /** Only for a save that changes the section (Plugin.settingsWriteSchema). */
  writeSchema?: SchemaLike;
}

export interface FileSettingsStoreOptions {
  /**
   * Pick up changes others make to the file (a folder watch, and a stamp check on `get()`).
   * Default: when the settings were read from the file, not handed in by the embedder.
   */
  watch?: boolean;
  /** Quiet time after the folder changed before the file is read again (editors write in bursts). */
  watchDebounceMs?: number;
  /** `get()` compares the file's size, mtime and inode at most this often, in case the watch missed a change. */
  statIntervalMs?: number;
  /** How long a save waits for another process holding `settings.json.lock`. */
  lockTimeoutMs?: number;
  /** A lock this old is broken even when its process cannot be checked (another host). */
  lockStaleMs?: number;
  /** Where warnings go (default: the `settings` logger on stderr). */
  logger?: Logger;
}

const DEFAULTS = { watchDebounceMs: 50, statIntervalMs: 500, lockTimeoutMs: 10_000, lockStaleMs: 30_000 };

/** How many times a save merges again because the file changed under it (a writer that takes no lock). */
const MERGE_ATTEMPTS = 5;

export class FileSettingsStore implements SettingsStore {
  private current: Settings;
  /** What the file holds (or the embedder handed in): all of `current` unless settings are shared. */
  private fileJson: Settings;
  private shared: SharedSettingsLayer | undefined;
  private listeners = new Set<(s: Settings) => void>();
  private writing: Promise<unknown> = Promise.resolve();
  private sections = new Set<SectionCheck>();
  private readonly opts: typeof DEFAULTS;
  private readonly logger: Logger;
  private readonly fileBacked: boolean;
  /** Which version of the file `current` came from (or was written as). */
  private stamp: Stamp | undefined;
  /** Why the file on disk is not in force (it does not parse or validate); cleared by a good version. */
  private diskProblem: string | undefined;
  private lastStat = 0;
  private saving = 0;
  private refreshWanted = false;
  private watcher: fs.FSWatcher | undefined;
  private debounce: NodeJS.Timeout | undefined;
  /** Bumped when something warnings depend on changes besides the settings object itself. */
  private version = 0;
  private cache: { settings: Settings; version: number; list: SettingsWarning[] } | undefined;
  private reported = new Set<string>();
  private reportTimer: NodeJS.Immediate | undefined;
  private closed = false;

  constructor(private readonly file: string, initial?: Settings, options: FileSettingsStoreOptions = {}) {
    this.opts = { ...DEFAULTS };
    for (const k of Object.keys(DEFAULTS) as Array<keyof typeof DEFAULTS>) if (options[k] !== undefined) this.opts[k] = options[k];
    this.logger = options.logger ?? createLogger('settings');
    if (initial) this.current = Object.freeze(initial);
    else {
      const r = readValidFile(file);
      this.current = Object.freeze(r.settings);
      this.stamp = r.stamp;
    }
    this.fileJson = this.current;
    this.fileBacked = options.watch ?? initial === undefined;
    // Plugin sections are added during boot; warnings are logged once they are all known.
    this.scheduleReport();
  }

  get(): Settings {
    if (this.fileBacked && !this.closed && !this.saving) {
      const now = Date.now();
      if (now - this.lastStat >= this.opts.statIntervalMs) {
        this.lastStat = now;
        // Only a changed stamp costs more than a stat; the reload itself is debounced, off this call.
        try {
          if (statStamp(this.file) !== this.stamp) this.poke();
        } catch {
          /* unreadable folder: keep what we have */
        }
      }
    }
    return this.current;
  }

  /**
   * Validate a plugin's section on every later change too (the kernel adds one per plugin with
   * a settingsSchema), so a value that would stop the plugin at the next start is refused now.
   */
  addSection(plugin: string, where: string, read: (s: Settings) => unknown, schema: SchemaLike, writeSchema?: SchemaLike): Disposable {
    const check: SectionCheck = { plugin, where, read, schema, ...(writeSchema ? { writeSchema } : {}) };
    this.sections.add(check);
    this.version++;
    this.scheduleReport();
    return {
      dispose: () => {
        if (this.sections.delete(check)) this.version++;
      },
    };
  }

  async set(next: Settings): Promise<Settings> {
    // The change is what differs from the settings the caller started from, i.e. these.
    const base = this.current;
    const valid = validateSettings(next);
    this.checkSections(valid, base);
    // One save at a time in this process; the lock file orders them between processes.
    const save = this.writing.then(() => this.save(base, valid));
    this.writing = save.catch(() => undefined);
    return save;
  }

  update(patch: Partial<Settings>): Promise<Settings> {
    return this.set({ ...this.current, ...patch });
  }

  onChange(listener: (s: Settings) => void): Disposable {
    this.listeners.add(listener);
    this.startWatch();
    return {
      dispose: () => {
        this.listeners.delete(listener);
        if (!this.listeners.size) this.stopWatch();
      },
    };
  }

  share(backend: SharedSettingsBackend): Disposable & { readonly ready: Promise<void> } {
    if (this.shared) throw new ConfigError(`settings are already shared through "${this.shared.name}"`);
    const problem = () => void (this.version++, this.scheduleReport());
    const layer = new SharedSettingsLayer(backend, { fileJson: () => this.fileJson, validate: (s, base) => this.validateWhole(s, 'shared settings', base), adopt: (s) => this.adopt(s), problem, logger: this.logger });
    this.shared = layer;
    const dispose = () => {
      if (this.shared !== layer) return;
      layer.dispose();
      this.shared = undefined;
      problem();
      // Back to the file alone: it kept its own keys, which are in force again.
      this.adoptFile();
    };
    return { ready: layer.start(), dispose };
  }

  /**
   * Problems that stop nothing: keys no schema knows (with the nearest known key), and a file
   * on disk that does not parse or validate (the last good settings stay in force).
   */
  warnings(): SettingsWarning[] {
    const settings = this.current;
    if (this.cache?.settings === settings && this.cache.version === this.version) return [...this.cache.list];
    const list = this.unknownKeyWarnings(settings);
    if (this.diskProblem) list.unshift({ path: '', message: `${this.diskProblem}; the last good settings stay in force` });
    if (this.shared?.trouble) list.unshift({ path: '', message: this.shared.trouble });
    this.cache = { settings, version: this.version, list };
    return [...list];
  }

  /** Stop watching the file (the store keeps working from what it has). */
  close(): void {
    this.closed = true;
    this.shared?.dispose();
    this.stopWatch();
    clearTimeout(this.debounce);
    if (this.reportTimer) clearImmediate(this.reportTimer);
  }

  // ── Saving ────────────────────────────────────────────────────────────────────────────────

  private async save(base: Settings, wanted: Settings): Promise<Settings> {
    let ops = diffSettings(base, wanted);
    const name = path.basename(this.file);
    const layer = this.shared;
    let sharedSaved = false;
    this.saving++;
    try {
      if (layer) {
        // The shared part first: it is the one that can fail for a reason outside this machine.
        ({ local: ops, saved: sharedSaved } = await layer.save(ops, base));
        if (!ops.length) return this.adoptFile();
      }
      const { saved, stamp, merged } = await withFileLock(`${this.file}.lock`, { timeoutMs: this.opts.lockTimeoutMs, staleMs: this.opts.lockStaleMs }, name, async () => {
        for (let attempt = 1; ; attempt++) {
          const disk = readDisk(this.file);
          if (disk.state === 'invalid') throw this.refusal(`${this.file} ${disk.problem}`, disk.stamp);
          // No file: it starts as this host's copy (what a first save has always written).
          let theirs: Settings = layer ? this.fileJson : base;
          if (disk.state === 'ok') {
            const v = this.validateAll(disk.json, name);
            if (!v.ok) throw this.refusal(`${this.file} is invalid: ${v.error}`, disk.stamp);
            // The text as written, not zod's output: that would reorder keys and drop any a schema strips.
            theirs = disk.json as Settings;
          }
          const merged = applyPatch(theirs, ops);
          const valid = this.validateComposite(merged, 'settings');
          const result = await writeAtomic(this.file, JSON.stringify(merged, null, 2) + '\n', () => statStamp(this.file) === disk.stamp || attempt >= MERGE_ATTEMPTS);
          if (result) return { saved: valid, stamp: result, merged };
          // The file changed while we merged (an editor, or a process that takes no lock): merge again.
        }
      });
      this.current = Object.freeze(saved);
      this.fileJson = merged;
      this.version++;
      this.stamp = stamp;
      this.setProblem(undefined);
      this.scheduleReport();
      this.notify();
      return this.current;
    } catch (err) {
      // The shared part went in but the file's did not: what is in force still moved.
      if (sharedSaved) this.adoptFile();
      throw err;
    } finally {
      this.saving--;
      if (!this.saving && this.refreshWanted) {
        this.refreshWanted = false;
        this.poke();
      }
    }
  }

  /** The error of a save refused because of the file on disk, which is also recorded as a warning. */
  private refusal(problem: string, stamp: Stamp): ConfigError {
    this.stamp = stamp;
    this.setProblem(problem);
    this.scheduleReport();
    return new ConfigError(`cannot save settings: ${problem}. The file was left as it is: fix it (or remove it), then save again`);
  }

  // ── Reading what others wrote ─────────────────────────────────────────────────────────────

  private startWatch(): void {
    if (!this.fileBacked || this.closed || this.watcher) return;
    const base = path.basename(this.file);
    try {
      // The folder, not the file: an atomic save (ours, most editors') replaces the file's inode.
      this.watcher = fs.watch(path.dirname(this.file), { persistent: false }, (_event, name) => {
        if (!name || name.toString() === base) this.poke();
      });
      this.watcher.on('error', () => this.stopWatch());
    } catch {
      this.watcher = undefined; // no folder yet, or no watch support: get() still checks the stamp
    }
  }

  private stopWatch(): void {
    this.watcher?.close();
    this.watcher = undefined;
  }

  private poke(): void {
    if (this.closed) return;
    clearTimeout(this.debounce);
    this.debounce = setTimeout(() => this.refresh(), this.opts.watchDebounceMs);
    this.debounce.unref();
  }

  /** Read the file again; a valid new version becomes the settings and listeners hear of it. */
  private refresh(): void {
    if (this.closed) return;
    if (this.saving) {
      this.refreshWanted = true;
      return;
    }
    const disk = readDisk(this.file);
    // A missing file keeps the settings in force (an editor may be between delete and create); the next save recreates it.
    if (disk.state === 'missing' || disk.stamp === this.stamp) return;
    this.stamp = disk.stamp;
    const name = path.basename(this.file);
    const v = disk.state === 'invalid' ? { ok: false as const, error: `${this.file} ${disk.problem}` } : this.validateAll(disk.json, name);
    if (!v.ok) {
      this.setProblem(v.error.startsWith(this.file) ? v.error : `${this.file} is invalid: ${v.error}`);
      this.scheduleReport();
      return;
    }
    this.setProblem(undefined);
    if (disk.state === 'ok') this.fileJson = disk.json as Settings;
    if (jsonEqual(v.settings, this.current)) return;
    this.current = Object.freeze(v.settings);
    this.logger.info(`${this.file} changed on disk; the new settings are in force`);
    this.scheduleReport();
    this.notify();
  }

  /** Settings validated elsewhere (a shared change, the end of sharing) become current; listeners hear of a real change. */
  private adopt(settings: Settings): void {
    if (jsonEqual(settings, this.current)) return;
    this.current = Object.freeze(settings);
    this.scheduleReport();
    this.notify();
  }

  /** The file as last read, with the shared document under it, in force (if it still validates). */
  private adoptFile(): Settings {
    try {
      this.adopt(this.validateComposite(this.fileJson, path.basename(this.file)));
    } catch (err) {
      this.logger.warn(`${(err as Error).message}; the last good settings stay in force`);
    }
    return this.current;
  }

  private setProblem(problem: string | undefined): void {
    if (problem === this.diskProblem) return;
    this.diskProblem = problem;
    this.version++;
  }

  // ── Validation and warnings ───────────────────────────────────────────────────────────────

  /** Every section against its schema; with `base` (a save), the sections it changes against their write schemas too. */
  private checkSections(valid: Settings, base?: Settings): void {
    for (const c of this.sections) {
      const value = c.read(valid);
      if (value === undefined) continue;
      const fail = (schema: SchemaLike, r: ReturnType<SchemaLike['safeParse']>) => {
        if (r.success) return;
        const i = r.error.issues[0]!;
        const hint = unrecognizedHint(schema, i as typeof i & { code?: string; keys?: string[] });
        throw new ConfigError(`settings: ${[c.where, ...i.path.map(String)].join('.')}: ${i.message}${hint}`, { plugin: c.plugin });
      };
      fail(c.schema, c.schema.safeParse(value, ONE_OFF_PARSE));
      if (c.writeSchema && base && !sameJson(c.read(base), value)) fail(c.writeSchema, c.writeSchema.safeParse(value, ONE_OFF_PARSE));
    }
  }

  /** What the file's `json` makes the settings in force (with the shared document laid under it), validated; throws a ConfigError. */
  private validateComposite(json: unknown, source: string): Settings {
    return this.validateWhole(this.shared && isObject(json) ? this.shared.overlay(json) : json, source);
  }

  private validateWhole(value: unknown, source: string, base?: Settings): Settings {
    const settings = validateSettings(value, source);
    this.checkSections(settings, base);
    return settings;
  }

  private validateAll(json: unknown, source: string): { ok: true; settings: Settings } | { ok: false; error: string } {
    try {
      return { ok: true, settings: this.validateComposite(json, source) };
    } catch (err) {
      return { ok: false, error: (err as Error).message };
    }
  }

  private unknownKeyWarnings(settings: Settings): SettingsWarning[] {
    const known = new Set([...Object.keys(SettingsSchema.shape), ...HOST_SECTIONS]);
    const groups = new Map<string, SectionCheck[]>();
    for (const c of this.sections) {
      if (!c.where.startsWith('pluginSettings.')) known.add(c.where);
      groups.set(c.where, [...(groups.get(c.where) ?? []), c]);
    }
    const out: SettingsWarning[] = [];
    for (const key of Object.keys(settings)) if (!known.has(key)) out.push(unknownKeyWarning([], { path: [key], candidates: [...known] }));
    for (const u of unknownKeys(SettingsSchema.shape.runtime, settings.runtime, ['runtime'])) out.push(unknownKeyWarning([], u));
    // Several plugins may share a section (the tools share `tools`): a key is unknown only if none knows it.
    for (const [where, checks] of groups) {
      const value = checks[0]!.read(settings);
      if (value === undefined) continue;
      const prefix = where.startsWith('pluginSettings.') ? ['pluginSettings', where.slice('pluginSettings.'.length)] : [where];
      for (const u of intersectUnknown(checks.map((c) => unknownKeys(c.schema, value)))) out.push(unknownKeyWarning(prefix, u));
    }
    return out;
  }

  private reportsHeld = false;

  /**
   * While plugins load, their sections are not registered yet: warning then would call every
   * plugin's own section an unknown key. The kernel holds the report until they all applied.
   */
  holdReports(): void {
    this.reportsHeld = true;
  }

  releaseReports(): void {
    this.reportsHeld = false;
    this.scheduleReport();
  }

  private scheduleReport(): void {
    if (this.closed || this.reportsHeld) return;
    if (this.reportTimer) clearImmediate(this.reportTimer);
    this.reportTimer = setImmediate(() => {
      this.reportTimer = undefined;
      for (const w of this.warnings()) {
        if (this.reported.has(w.message)) continue;
        this.reported.add(w.message);
        this.logger.warn(w.message);
      }
    });
    this.reportTimer.unref();
  }

  private notify(): void {
    for (const l of this.listeners) {
      try {
        l(this.current);
      } catch {
        /* listeners are notifications */
      }
    }
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function sameJson(a: unknown, b: unknown): boolean {
  return a === b || JSON.stringify(a) === JSON.stringify(b);
}
