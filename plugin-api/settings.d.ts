// ────────────────────────────────────────────────────────────────────────────────────────────
// Settings: the store and the shape (part of "Plugins and their context")
// ────────────────────────────────────────────────────────────────────────────────────────────

import type { Disposable, ExecutionMode, JsonValue } from './basics.js';
import type { Plugin } from './plugins.js';
import type { ModelInfo } from './providers.js';

/**
 * The settings file, validated. Other processes (a CLI, `serve`, an editor) may change the file
 * while the host runs; the store picks their changes up and never writes over them.
 */
export interface SettingsStore {
  /** The current settings (a frozen snapshot). */
  get(): Settings;
  /**
   * Save `next` (validated; an invalid value throws a ConfigError naming the field and nothing
   * is written). Contract: every loaded plugin's section is checked with its `settingsSchema`
   * too, as at boot, and a section this save changes with its `settingsWriteSchema`. What is saved is the change from the settings as `get()` returned them to
   * `next`, applied to the file as it is on disk now, so keys others added meanwhile survive;
   * resolves to the merged result. A file on disk that does not parse or validate is never
   * overwritten: the save throws a ConfigError naming the file and the problem. Writes
   * atomically (and under a lock shared with other processes), then notifies watchers.
   */
  set(next: Settings): Promise<Settings>;
  /** Shallow-merge a patch into the settings and save (same validation and merging as `set`). */
  update(patch: Partial<Settings>): Promise<Settings>;
  /** Called after every successful change: a save, or a valid edit of the file made elsewhere. */
  onChange(listener: (settings: Settings) => void): Disposable;
  /**
   * Problems that stop nothing, for logs and UIs: keys that no schema knows (`path`
   * `runtime.maxRoundz`, with `suggestion` `runtime.maxRounds` when a known key is close), and
   * a settings file on disk that does not parse or validate (`path` empty; the last good
   * settings stay in force). Unknown keys are kept, never refused, so a file written for a newer
   * version still loads. Each new warning is also logged once.
   */
  warnings(): Array<{ path: string; message: string; suggestion?: string }>;
  /**
   * @experimental (`shared_settings`) Keep the settings in `backend` (one document every process
   * of a team shares) instead of the file, except the keys a process needs before the backend is
   * reachable, which stay in the local file: `history` (it holds the database URL), `team`,
   * `plugins`, `pluginSettings` and `$schema`. From then on `get()` is the shared document with
   * those local keys from the file laid over it; a save sends the local keys' changes to the
   * file and the rest to `backend.save`, and the merged result is validated as ever (every
   * plugin section, write schemas) before anything is written; a change another process saved
   * (`backend.watch`) reaches `onChange`. A backend with no document yet is seeded with the file's
   * other keys. While the backend fails, `get()` keeps the last good settings and a save that
   * changes a shared key rejects with a ConfigError (nothing is written). `ready` settles (never
   * rejects) once the first load was tried; disposing goes back to the file alone. One backend at
   * a time: a second `share` throws. A plugin must list `shared_settings` in
   * {@link Plugin.experimental} to call it.
   */
  share(backend: SharedSettingsBackend): Disposable & { readonly ready: Promise<void> };
}

/**
 * One change of a settings save: set `path` to `value`, remove it (`value` undefined), or with
 * `object` make sure an object is there (keeping one that is). A save is a list of these, the
 * difference between the settings the caller started from and the ones it wants.
 */
export interface SettingsPatchOp {
  /** Keys from the top of the settings down. */
  path: string[];
  /** The new value (JSON); absent (and no `object`): remove the key. */
  value?: unknown;
  /** Make sure an object is at `path`, keeping the one there. */
  object?: true;
}

/**
 * @experimental (`shared_settings`) Where a team's shared settings live, for
 * {@link SettingsStore.share}: one JSON document, changed by patches so concurrent saves from
 * several processes all keep their keys.
 */
export interface SharedSettingsBackend {
  /** For logs and errors (`team-settings`). */
  readonly name: string;
  /** The document as stored now; undefined (or `{}`) when none was saved yet. Rejects when unreachable. */
  load(): Promise<Record<string, unknown> | undefined>;
  /**
   * Apply `ops` to the document as it is stored now, atomically with respect to every other
   * process's save, and resolve to the new document. Contract: `check` is called with that new
   * document before it is stored; when it throws, nothing is stored and `save` rejects with what
   * it threw. Rejects when unreachable.
   */
  save(ops: SettingsPatchOp[], check: (doc: Record<string, unknown>) => void): Promise<Record<string, unknown>>;
  /** Call `listener` with the new document whenever another process (or this one) saved one, newest last. */
  watch(listener: (doc: Record<string, unknown>) => void): Disposable;
}

/** The settings shape. Sections the kernel knows are typed; plugin sections are open. */
export interface Settings {
  /** Provider used when a request names none. */
  defaultProvider?: string;
  /** Model used when a request names none (else the provider's default). */
  defaultModel?: string;
  defaultMode?: ExecutionMode;
  /** The user's system prompt, added after the default one. */
  systemPrompt?: string;
  /** Built-in provider settings by id (`claude_code`, `codex`, `gemini`). Override the environment. */
  providers?: Record<string, ProviderSettings>;
  /** Providers defined only in settings. */
  customProviders?: CustomProviderSettings[];
  /** npm package names of third-party plugins to load. */
  plugins?: string[];
  /** Per-plugin settings sections, by plugin name. */
  pluginSettings?: Record<string, JsonValue>;
  /** Tool loop bounds and other run limits. */
  runtime?: RuntimeSettings;
  /** Any other section (owned by a plugin through `settingsKey`). */
  [section: string]: unknown;
}

/** Settings of a built-in provider. */
export interface ProviderSettings {
  apiKey?: string;
  /** Name of an environment variable holding the key. */
  apiKeyEnv?: string;
  baseUrl?: string;
  defaultModel?: string;
  /** Provider-specific options (e.g. codex `api: 'responses' | 'chat'`). */
  [option: string]: unknown;
}

/** A provider defined only in settings. */
export interface CustomProviderSettings {
  id: string;
  name?: string;
  format: 'anthropic' | 'openai-chat' | 'openai-responses' | 'gemini';
  baseUrl: string;
  apiKey?: string;
  apiKeyEnv?: string;
  defaultModel?: string;
  models?: ModelInfo[];
}

/** Limits of a run and of plugin start-up. Every timeout is configurable so tests run in seconds. */
export interface RuntimeSettings {
  /** Maximum model rounds in one tool loop (default 50). */
  maxRounds?: number;
  /** How often a streaming reply is persisted, at most (ms, default 250). */
  persistIntervalMs?: number;
  /** Attempts for a provider request that fails before any output (default 4). */
  retryMaxAttempts?: number;
  /** First backoff wait (ms, default 1000); doubles per attempt, with jitter. */
  retryBaseDelayMs?: number;
  /** Longest backoff wait, also caps a server's retry-after (ms, default 60000); a longer hint fails the request at once, saying when to try again. */
  retryMaxDelayMs?: number;
  /** A stream silent this long is ended with a timeout error (ms, default 120000). */
  streamIdleTimeoutMs?: number;
  /**
   * After a run is stopped, how long a tool call (with its before/execute/after taps) may go on
   * before it is abandoned: its result then says the tool did not stop, and the run ends
   * (ms, default 2000).
   */
  toolAbortGraceMs?: number;
  /**
   * How long a plugin's `apply`, and each of its `ready` and `shutdown` taps, may take before
   * the plugin is reported failed and the host goes on without it (ms, default 10000).
   */
  pluginApplyTimeoutMs?: number;
  /** How long one plugin's `turnEnd` work may take in the background before it is reported and no longer waited for (ms, default 60000). */
  afterTurnTimeoutMs?: number;
  /** `turnEnd` calls one plugin may have in flight; later ones wait their turn (default 4). */
  afterTurnConcurrency?: number;
  /** Messages kept in memory (across the last 4 conversations that completed a run) for their next turn to go on from; default 5000, 0 keeps none. */
  heldWindowMessages?: number;
}
