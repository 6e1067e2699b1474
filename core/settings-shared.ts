/**
 * Settings shared by several processes (a team server: many `serve` processes, maybe on many
 * machines, one database): the layer FileSettingsStore puts between its file and `get()` once a
 * plugin calls `share(backend)`. The shared document holds everything but the local keys; the
 * file keeps those, and `get()` is the document with them laid over it.
 *
 * The backend is the plugin's (plugins/team-settings: a PostgreSQL row); this file knows only
 * its interface, so the kernel stays free of database code.
 */
import type { Disposable, Logger, Settings, SettingsPatchOp, SharedSettingsBackend } from '../plugin-api.js';
import { ConfigError } from './errors.js';
import { applyPatch, diffSettings, jsonEqual } from './settings-disk.js';

/**
 * Top-level keys that stay in the local settings.json: what a process needs before the backend
 * is reachable or that decides what it loads. `history` holds the database URL itself; `team`
 * sizes the connections to it; `plugins` (npm packages) is read before any plugin applies, and
 * `pluginSettings` goes with it: third-party plugins load per process (from `plugins` and the
 * home's plugin folder), and the sharing plugin's own settings live there. `$schema` is the
 * editor's.
 */
export const LOCAL_SETTINGS_KEYS: readonly string[] = Object.freeze(['history', 'team', 'plugins', 'pluginSettings', '$schema']);
const LOCAL = new Set(LOCAL_SETTINGS_KEYS);

type Doc = Record<string, unknown>;

export const isLocalOp = (op: SettingsPatchOp): boolean => LOCAL.has(op.path[0] ?? '');

/** `doc` without the local keys, with `file`'s local keys laid over it. */
export function overlayLocal(doc: Doc, file: Doc): Doc {
  const out: Doc = {};
  for (const [k, v] of Object.entries(doc)) if (!LOCAL.has(k)) out[k] = v;
  for (const k of LOCAL_SETTINGS_KEYS) if (file[k] !== undefined) out[k] = file[k];
  return out;
}

/** What the store lends the layer. */
export interface SharedHost {
  /** The local file's settings as last read or written. */
  fileJson(): Doc;
  /** The kernel schema and every plugin section (with `base`: the write schemas of the sections that changed); throws a ConfigError. */
  validate(settings: Doc, base?: Settings): Settings;
  /** A new shared document is in force: these are the settings now (already validated). */
  adopt(settings: Settings): void;
  /** `trouble` changed (warnings depend on it). */
  problem(): void;
  logger: Logger;
}

export class SharedSettingsLayer {
  /** The last good shared document (undefined until the first load succeeded). */
  private doc: Doc | undefined;
  private sub: Disposable | undefined;
  private disposed = false;
  /** Why the shared settings are not in force or not reachable (a warning while it lasts). */
  trouble: string | undefined;

  constructor(
    readonly backend: SharedSettingsBackend,
    private readonly host: SharedHost,
  ) {}

  get name(): string {
    return this.backend.name;
  }

  /** `file` as it is in force: the shared document with its local keys, or the file alone before the first load. */
  overlay(file: Doc): Doc {
    return this.doc ? overlayLocal(this.doc, file) : file;
  }

  /** Watch, then load (seeding an empty document); settles once that was tried. */
  async start(): Promise<void> {
    // Watch first: a change saved between our load and the subscription is not missed.
    this.sub = this.backend.watch((doc) => {
      if (this.disposed) return;
      // Never loaded (the backend was down at start) and still empty: this process seeds it now.
      if (!this.doc && !Object.keys(doc ?? {}).length) void this.seedLate();
      else this.accept(doc, 'changed');
    });
    try {
      let doc = await this.backend.load();
      if (this.disposed) return;
      if (!doc || !Object.keys(doc).length) doc = await this.seed();
      if (!this.disposed) this.accept(doc, 'loaded');
    } catch (err) {
      if (!this.disposed) this.down(`cannot be loaded: ${message(err)}; running on the local settings.json until they can`);
    }
  }

  /**
   * Send the shared part of a save's ops; resolves to the local rest, for the file. The backend's
   * `check` sees the document it is about to store with those local changes laid over it, so the
   * result as a whole is validated before anything is stored.
   */
  async save(ops: SettingsPatchOp[], base: Settings): Promise<{ local: SettingsPatchOp[]; saved: boolean }> {
    const local = ops.filter(isLocalOp);
    const shared = ops.filter((op) => !isLocalOp(op));
    if (!shared.length) return { local, saved: false };
    if (!this.doc) throw new ConfigError(`cannot save settings: the shared settings (${this.name}) are not available${this.trouble ? ` (${this.trouble})` : ''}. Nothing was saved; try again`);
    const file = applyPatch(this.host.fileJson(), local);
    let refused: unknown;
    let doc: Doc;
    try {
      doc = await this.backend.save(shared, (next) => {
        try {
          this.host.validate(overlayLocal(next, file), base);
        } catch (err) {
          refused = err;
          throw err;
        }
      });
    } catch (err) {
      if (refused) throw refused;
      this.down(`cannot be saved: ${message(err)}`);
      throw new ConfigError(`cannot save settings: the shared settings (${this.name}) are unreachable: ${message(err)}. Nothing was saved; try again`, { cause: err });
    }
    if (!this.disposed) {
      this.doc = structuredClone(doc);
      this.up();
    }
    return { local, saved: true };
  }

  dispose(): void {
    this.disposed = true;
    this.sub?.dispose();
    this.sub = undefined;
  }

  private seeding = false;

  private async seedLate(): Promise<void> {
    if (this.seeding) return;
    this.seeding = true;
    try {
      const doc = await this.seed();
      if (!this.disposed) this.accept(doc, 'loaded');
    } catch (err) {
      if (!this.disposed) this.down(`cannot be loaded: ${message(err)}; running on the local settings.json until they can`);
    } finally {
      this.seeding = false;
    }
  }

  /** The first process of a new team: the shared document starts as this file's non-local keys. */
  private async seed(): Promise<Doc> {
    const file = this.host.fileJson();
    const seed = Object.fromEntries(Object.entries(file).filter(([k, v]) => !LOCAL.has(k) && v !== undefined));
    if (!Object.keys(seed).length) return {};
    const doc = await this.backend.save(diffSettings({}, seed), (next) => void this.host.validate(overlayLocal(next, file)));
    this.host.logger.info(`shared settings (${this.name}) were empty: seeded with ${Object.keys(seed).join(', ')} from the local settings.json`);
    return doc;
  }

  /** A document loaded or watched: in force if the settings it makes are valid, else the last good one stays. */
  private accept(doc: Doc | undefined, how: 'loaded' | 'changed'): void {
    const next = doc ?? {};
    if (this.doc && jsonEqual(next, this.doc)) return this.up();
    let settings: Settings;
    try {
      settings = this.host.validate(overlayLocal(next, this.host.fileJson()));
    } catch (err) {
      return this.down(`are invalid: ${message(err)}; the last good settings stay in force`);
    }
    this.doc = structuredClone(next);
    this.up();
    if (how === 'changed') this.host.logger.info(`shared settings (${this.name}) changed; the new settings are in force`);
    this.host.adopt(settings);
  }

  private down(why: string): void {
    const text = `shared settings (${this.name}) ${why}`;
    if (text !== this.trouble) this.host.logger.warn(text);
    this.trouble = text;
    this.host.problem();
  }

  private up(): void {
    if (!this.trouble) return;
    this.trouble = undefined;
    this.host.problem();
  }
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
