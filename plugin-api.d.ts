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
 * The file reads in lifecycle order: basics, content, plugin + context, tools, providers, the
 * session and its hooks, events, errors. Lines beginning "Contract:" are behaviour the kernel
 * guarantees and tests pin.
 */

// ────────────────────────────────────────────────────────────────────────────────────────────
// Basics
// ────────────────────────────────────────────────────────────────────────────────────────────

/** Something that can be undone. Every `register*` returns one; the kernel disposes them on unload. */
export interface Disposable {
  dispose(): void;
}

/** A JSON value, as stored in settings, tool arguments and `details`. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/** A JSON object. */
export type JsonObject = { [key: string]: JsonValue };

/** A logger whose lines carry the plugin's name. Lines go to stderr (never to a CLI's stdout). */
export interface Logger {
  debug(message: string, data?: unknown): void;
  info(message: string, data?: unknown): void;
  warn(message: string, data?: unknown): void;
  error(message: string, data?: unknown): void;
}

/**
 * A validation schema. A zod 4 schema satisfies it as is; anything with a compatible
 * `safeParse` works too. The kernel turns zod schemas into JSON Schema for the model; a tool
 * whose schema is not zod gives it as {@link ToolDefinition.jsonSchema}.
 */
export interface SchemaLike<T = unknown> {
  safeParse(value: unknown): { success: true; data: T } | { success: false; error: { issues: ReadonlyArray<SchemaIssue> } };
}

/** One validation problem: where (a path into the value) and what. */
export interface SchemaIssue {
  readonly path: ReadonlyArray<PropertyKey>;
  readonly message: string;
}

/** Execution modes: `text` has no tools; `tools` runs the tool loop; `agent-dev` adds usage and debug detail. */
export type ExecutionMode = 'text' | 'tools' | 'agent-dev';

// ────────────────────────────────────────────────────────────────────────────────────────────
// Content: messages and their blocks, as stored in history and sent to providers
// ────────────────────────────────────────────────────────────────────────────────────────────

/** Plain text. `citations` carries anchors into hosted-search sources, when the provider gives them. */
export interface TextBlock {
  type: 'text';
  text: string;
  citations?: Citation[];
  /**
   * An opaque signature the provider put on this very text (Gemini's `thoughtSignature` on a
   * text part). Contract: the provider that produced the message (`Message.provider`) sends it
   * back unchanged on the same text; every other provider ignores it.
   */
  signature?: string;
}

/**
 * Model reasoning. `signature` (Anthropic) or `providerData` must be sent back unchanged for the
 * round trip. `redacted` thinking has no readable text: its opaque payload is in `data`.
 * Contract: the kernel never sends a thinking block to a provider other than `provider`.
 */
export interface ThinkingBlock {
  type: 'thinking';
  thinking: string;
  signature?: string;
  redacted?: boolean;
  data?: string;
  /** The provider id that produced it. */
  provider?: string;
  providerData?: JsonObject;
}

/** A tool call the model made. `input` is the parsed JSON arguments. */
export interface ToolCallBlock {
  type: 'tool_call';
  id: string;
  name: string;
  input: JsonObject;
  /** Provider-specific data that must survive the round trip (e.g. a Gemini thought signature). */
  providerData?: JsonObject;
}

/** An image, inline (base64) or by reference to a local file. */
export interface ImageBlock {
  type: 'image';
  mimeType: string;
  /** Base64 data. May be dropped from old history by context policy; `path` then remains. */
  data?: string;
  path?: string;
}

/**
 * A file the user attached, as history stores it: a reference to the staged copy under
 * `RuntimePaths.uploads`, never its bytes. The uploads plugin expands it for each request (a
 * reference text naming the path, plus the file in the provider's native form where there is
 * one: an {@link ImageBlock}, a {@link DocumentBlock}, or the text of a text file).
 * Contract: a provider that meets one unexpanded sends a reference text naming `name`, `path`,
 * `mediaType` and `size`.
 */
export interface AttachmentBlock {
  /** Discriminant. */
  type: 'attachment';
  /** The upload's id (the WebUI fetches `GET /api/uploads/<uploadId>` to preview it). */
  uploadId: string;
  /** The file name the user gave (display only; the stored file has a sanitized name). */
  name: string;
  /** Absolute path of the stored file (read-only for tools). */
  path: string;
  /** Media type sniffed from the bytes (else from the name). */
  mediaType: string;
  /** Size in bytes. */
  size: number;
}

/**
 * A document for the model (a PDF), inline. Providers with native documents send `data`;
 * the others send `text` (extracted text), and without either a reference to `path`.
 */
export interface DocumentBlock {
  /** Discriminant. */
  type: 'document';
  /** e.g. `application/pdf`. */
  mimeType: string;
  /** The file name, for providers that label documents. */
  name?: string;
  /** Absolute path of the file, when it is one. */
  path?: string;
  /** Base64 data. Absent when a limit or context policy left it out. */
  data?: string;
  /** Extracted text, for providers without native documents. */
  text?: string;
  /** Page count, when known (providers cap pages per request). */
  pages?: number;
}

/** A hosted (server-side) web search and its sources, as run by the provider. */
export interface HostedSearchBlock {
  type: 'hosted_search';
  provider: string;
  id?: string;
  queries: string[];
  sources: SearchSource[];
  status: 'completed' | 'failed';
  /** Opaque provider payload that must be sent back for the round trip (e.g. encrypted content). */
  providerData?: JsonObject;
}

/** One source of a hosted search. */
export interface SearchSource {
  title: string;
  url: string;
  snippet?: string;
}

/** A citation anchor inside a text block. */
export interface Citation {
  url: string;
  title?: string;
  citedText?: string;
}

/** Content a tool result may hold. */
export type ToolResultContent = TextBlock | ImageBlock;

/** The result of one tool call, in a `tool` message. */
export interface ToolResultBlock {
  type: 'tool_result';
  toolCallId: string;
  toolName: string;
  content: ToolResultContent[];
  isError: boolean;
  /** Structured data for the UI and history replay (e.g. `{ kind: 'ask_user_question', ... }`). Never sent to the model. */
  details?: JsonObject;
}

/** Every content block. */
export type ContentBlock = TextBlock | ThinkingBlock | ToolCallBlock | ImageBlock | AttachmentBlock | DocumentBlock | HostedSearchBlock | ToolResultBlock;

/** Token usage for one model round. */
export interface Usage {
  /** Input tokens not read from a prompt cache (cache reads and writes are counted apart). */
  inputTokens: number;
  /** Output tokens, reasoning included. */
  outputTokens: number;
  cacheReadTokens?: number;
  cacheWriteTokens?: number;
  reasoningTokens?: number;
  /**
   * What these tokens cost in USD at the model's prices ({@link ModelInfo.price}), set by the
   * kernel on each round's usage (`message_end`, `turn_end`, the stored message) when the model
   * has input and output prices; on `agent_end` and in sums, the cost of the priced rounds.
   */
  costUsd?: number;
}

/** Why a model round stopped. */
export type StopReason = 'end' | 'tool_use' | 'max_tokens' | 'refusal' | 'aborted' | 'error';

/** A message in a conversation. Tool results of one round travel in one `tool` message. */
export interface Message {
  id: string;
  role: 'user' | 'assistant' | 'tool';
  content: ContentBlock[];
  createdAt: number;
  /** Assistant only: who produced it. */
  provider?: string;
  model?: string;
  stopReason?: StopReason;
  usage?: Usage;
  /** Assistant only: error text when the round failed. */
  errorMessage?: string;
  /** Assistant only: files changed by successful Write / Edit / Delete results of this reply. */
  editedFiles?: EditedFile[];
  /** Free-form metadata for plugins (never sent to the model). */
  meta?: JsonObject;
}

/** One entry of the edited-files ledger. */
export interface EditedFile {
  path: string;
  action: 'write' | 'edit' | 'delete';
}

// ────────────────────────────────────────────────────────────────────────────────────────────
// Plugins and their context
// ────────────────────────────────────────────────────────────────────────────────────────────

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

// ────────────────────────────────────────────────────────────────────────────────────────────
// Tools
// ────────────────────────────────────────────────────────────────────────────────────────────

/**
 * A tool. Arguments are validated with `parameters` before `execute`; invalid arguments go back
 * to the model as an error result naming the problem, so it can fix the call. Write it with
 * {@link defineTool} and `Args` is the schema's output type.
 */
export interface ToolDefinition<Args = unknown> {
  /** Name the model sees: letters, digits, `_`, `-`; at most 64 characters. */
  name: string;
  /** Model-facing description (keep long ones in a `.md` beside the tool). */
  description: string;
  /** Argument schema (a zod 4 schema, or any SchemaLike with `jsonSchema` given). */
  parameters: SchemaLike<Args>;
  /** JSON Schema for the model; derived from a zod schema when omitted. */
  jsonSchema?: JsonObject;
  /** Modes that offer this tool (default: tools and agent-dev). */
  modes?: ExecutionMode[];
  /**
   * `parallel` tools may run concurrently with other parallel calls of the same round;
   * `exclusive` ones run alone, in order. Default `exclusive`.
   */
  concurrency?: 'parallel' | 'exclusive';
  /**
   * Rules appended to the system prompt before each provider request in which this tool is
   * offered. Contract: never stored in history or compaction state.
   */
  promptRules?: string[];
  /**
   * When true the kernel does not stream this call's argument deltas as `message_update`
   * events; the call appears whole at `tool_execution_start` (AskUserQuestion uses it).
   */
  hideArgumentDeltas?: boolean;
  /**
   * Called when the call is reported (`tool_execution_start`), before `execute`: may return
   * arguments stamped with host data (e.g. a deadline) that clients see and `execute` receives.
   */
  prepareArguments?(args: Args, ctx: ToolContext): Args;
  /**
   * Run the tool. Throwing is the same as returning `{ isError: true }` with the message.
   * Contract: honour `ctx.signal`; a call still going `runtime.toolAbortGraceMs` (default 2 s)
   * after the run was stopped is abandoned with an error result saying the tool did not stop.
   */
  execute(args: Args, ctx: ToolContext): Promise<ToolResult>;
}

/** What `execute` receives besides its arguments. */
export interface ToolContext {
  toolCallId: string;
  toolName: string;
  conversationId: string;
  runId: string;
  mode: ExecutionMode;
  /** Absolute working directory of the run. */
  workdir: string;
  /** Aborted when the run stops: end work promptly (kill processes, settle waits). */
  signal: AbortSignal;
  /** Report progress: becomes a `tool_execution_update` event. */
  update(partial: ToolProgress): void;
  /**
   * Emit an event in the conversation's stream; a name in {@link PluginEvents} takes its declared
   * payload. An {@link OwnTypeEventName} travels under its own type (`ask_user_question`); any
   * other name as `{ type: 'custom', name }` (read either with {@link pluginEvent}).
   */
  emit<K extends string>(type: K, payload: K extends keyof PluginEvents ? PluginEvents[K] : JsonObject): void;
  logger: Logger;
  paths: RuntimePaths;
  settings: Settings;
}

/** Progress of a running tool. */
export interface ToolProgress {
  content?: ToolResultContent[];
  details?: JsonObject;
}

/** What a tool returns. */
export interface ToolResult {
  content: ToolResultContent[];
  isError?: boolean;
  details?: JsonObject;
  /** Files this call changed (feeds the edited-files ledger). Contract: only Write, Edit and Delete report these. */
  editedFiles?: EditedFile[];
}

/** A tool as a provider sees it. */
export interface ToolSpec {
  name: string;
  description: string;
  inputSchema: JsonObject;
}

// ────────────────────────────────────────────────────────────────────────────────────────────
// Providers
// ────────────────────────────────────────────────────────────────────────────────────────────

/** Facts about a model (catalog entry). */
export interface ModelInfo {
  id: string;
  name?: string;
  contextWindow?: number;
  maxOutputTokens?: number;
  thinking?: boolean;
  cache?: boolean;
  /** USD per million tokens. */
  price?: { input?: number; output?: number; cacheRead?: number; cacheWrite?: number };
}

/** A model's facts as the kernel uses them ({@link RuntimeApi.modelInfo}): defaults filled in. */
export interface ModelFacts extends ModelInfo {
  /** Tokens the model reads, prompt and reply together (default 128,000). */
  contextWindow: number;
  /** The most output tokens one reply may ask for (default 8,192). */
  maxOutputTokens: number;
  /** Whether it takes a thinking budget (default false). */
  thinking: boolean;
  /** Whether it supports prompt-cache breakpoints (default false). */
  cache: boolean;
  /** False when the model is unknown and safe defaults (128k context, 8k output) stand in. */
  known: boolean;
}

/** A system prompt part. Parts are joined in order; `cache` marks a cache breakpoint after it. */
export interface SystemPart {
  /** Who added it, e.g. `base`, `user-settings`, `tool-rules`. */
  id: string;
  text: string;
  cache?: boolean;
}

/** A normalized request, built by the session's request hooks. */
export interface ProviderRequest {
  model: string;
  system: SystemPart[];
  messages: Message[];
  tools: ToolSpec[];
  toolChoice?: 'auto' | 'any' | 'none' | { name: string };
  maxOutputTokens?: number;
  /** Thinking budget in tokens (0 or absent: provider default). */
  thinkingBudget?: number;
  /** Provider-specific options merged from settings and the request. */
  options: JsonObject;
  conversationId: string;
  /**
   * A short side request (a title, a memory extraction): whatever the settings say, the provider
   * sends no thinking (the least reasoning the model allows), no hosted web search, no prompt-cache
   * breakpoints, and stores nothing server-side (no Responses storage or chaining).
   */
  lean?: boolean;
}

/**
 * What a provider stream yields. Block events carry the index of the block within the
 * assistant message. Contract: providers never throw mid-stream; they end with `done` or `error`.
 */
export type ProviderEvent =
  | { type: 'block_start'; index: number; block: { type: 'text' } | { type: 'thinking' } | { type: 'tool_call'; id: string; name: string } }
  | { type: 'text_delta'; index: number; text: string }
  | { type: 'thinking_delta'; index: number; text: string }
  | { type: 'tool_input_delta'; index: number; json: string }
  /** The block's final form (signature, parsed input, citations). */
  | { type: 'block_end'; index: number; block: ContentBlock }
  | { type: 'usage'; usage: Usage }
  | { type: 'done'; stopReason: StopReason; responseId?: string }
  | { type: 'error'; error: ProviderErrorInfo }
  /**
   * Something the user should know that is not an error (an endpoint without the Responses API
   * fell back to Chat Completions, a paused reply was continued): the kernel emits it as a
   * `notice` lifecycle event (`payload.kind`, default `provider`; `payload.provider`).
   */
  | { type: 'notice'; message: string; kind?: string; details?: JsonObject }
  /**
   * The body the provider is about to send, after its own conversion (cache breakpoints, tool
   * schemas, limits), once per HTTP request: for observers such as the debug log. Not output,
   * never forwarded to clients. `api` names the endpoint (`messages`, `responses`, ...).
   * @experimental Its shape is each provider's wire format; a `providerEvent` tap sees it only
   * when its plugin lists `wire_request` in {@link Plugin.experimental}.
   */
  | { type: 'wire_request'; api: string; body: JsonObject };

/** A provider failure. `retryable` tells the kernel whether a retry can help. */
export interface ProviderErrorInfo {
  message: string;
  /** HTTP status when there was one. */
  status?: number;
  /**
   * e.g. `overloaded`, `rate_limited`, `auth`, `bad_request`, `network`, `stream`, `timeout`, and
   * `context_overflow` when the prompt does not fit the model's context window (the kernel then
   * compacts and retries once).
   */
  code: string;
  retryable: boolean;
  /** Milliseconds the server asked us to wait. */
  retryAfterMs?: number;
}

/** What `Provider.stream` returns: the events of one round, with an optional push path. */
export interface ProviderStream extends AsyncIterable<ProviderEvent> {
  /**
   * Optional push path. When present the kernel calls it instead of iterating: the provider hands
   * each event to `sink` synchronously as it is translated, which saves the promise hops of an
   * async iterator on every delta. Contract: stop and release the request as soon as `sink`
   * returns true (as `return()` on the iterator would); resolve once the stream ended, failed
   * (after delivering its `error` event) or was stopped; never reject. The kernel uses one of the
   * two paths per stream, never both.
   */
  forEachEvent?(sink: (event: ProviderEvent) => boolean | void): Promise<void>;
}

/** A model provider. */
export interface Provider {
  /** e.g. `claude_code`. */
  id: string;
  aliases?: string[];
  displayName: string;
  /** The model used when none is chosen. */
  defaultModel: string;
  models?: ModelInfo[];
  /** True when the provider has what it needs (a key, or an endpoint that needs none). */
  isConfigured(settings: Settings): boolean;
  /**
   * Stream one model round. Must honour `signal` and never throw: failures are `error` events.
   * Any `AsyncIterable<ProviderEvent>` will do; see {@link ProviderStream} for the optional push path.
   */
  stream(request: ProviderRequest, signal: AbortSignal): ProviderStream;
  /**
   * Optional: start loading what the first request needs (the SDK) and return at once. The
   * kernel calls it as a run starts, so the import overlaps loading the history instead of
   * following it. Contract: must not throw or block; a failed load surfaces in `stream`.
   */
  prepare?(): void;
}

// ────────────────────────────────────────────────────────────────────────────────────────────
// The runtime, sessions and runs
// ────────────────────────────────────────────────────────────────────────────────────────────

/** Registries and conversations, for hosts and plugins that drive them. */
export interface RuntimeApi {
  /** Every registered tool (before any mode filter). */
  tools(): ToolDefinition[];
  /** Every registered provider. */
  providers(): Provider[];
  /** Resolve a provider by id or alias; undefined when unknown. */
  provider(id: string): Provider | undefined;
  /**
   * Every model known for a provider (id or alias): the provider's `models` with a custom
   * provider's `models` from settings merged over them, field by field. Empty when unknown.
   */
  models(providerId: string): ModelInfo[];
  /**
   * The one source of model facts (context window, output limit, thinking, caching, prices):
   * {@link models}' entry for `modelId` (or the family a dated snapshot id belongs to), defaults
   * filled in; an unknown model gets safe defaults and `known: false`.
   */
  modelInfo(providerId: string, modelId: string): ModelFacts;
  /** Start a run. Returns at once; the run belongs to the runtime, not to the caller. */
  startRun(options: RunOptions): RunHandle;
  /** The active run of a conversation, if any. */
  activeRun(conversationId: string): RunHandle | undefined;
  /** Subscribe to every lifecycle event of every conversation. Listeners must not block. */
  onEvent(listener: (event: LifecycleEvent) => void): Disposable;
  /**
   * Forget a conversation's in-memory state (after it was deleted): its active run is stopped
   * and awaited, and a later run on that id fails as unknown unless a store knows it.
   */
  forgetConversation(conversationId: string): Promise<void>;
  /**
   * Delete a conversation, the one way every host and plugin does it: its active run is stopped
   * and awaited, the process forgets it ({@link forgetConversation}), the store deletes it (the
   * `deleteConversation` persistence hook) and then the kernel's `conversationDeleted` hook
   * tells every plugin (a gateway closes the chat in every window; questions are cancelled).
   * Resolves true when a store or this process knew the conversation. Rejects (UsageError) for a
   * malformed id, or with the store's error (a PluginError) when the store failed.
   */
  deleteConversation(conversationId: string): Promise<boolean>;
  /**
   * Rename a conversation (the title a user chose; a generated title never replaces it): the
   * `renameConversation` persistence hook stores the trimmed title. Resolves false when no store
   * knows the conversation. Rejects (UsageError) for a malformed id or a title that is not 1-200
   * characters once trimmed.
   */
  renameConversation(conversationId: string, title: string): Promise<boolean>;
  /**
   * Compact a stored conversation now (trigger `manual`): the `compaction` hook answers and the
   * checkpoint is stored through `saveCheckpoint`. Emits `compaction` events like a run does.
   * Contract: refused (UsageError) while the conversation has a run in progress or another
   * compaction; a run started meanwhile waits for it. Never rejects for a failed summary: the
   * outcome says `failed` and the history is left exactly as it was.
   */
  compact(conversationId: string, options?: { signal?: AbortSignal }): Promise<CompactionOutcome>;
  /**
   * One model call outside any run (summaries, titles, memory extraction), with the kernel's
   * retries before output, idle watchdog and abort. Resolves with the whole reply; rejects with a
   * ProviderError (`details.code` is the provider's error code) or a CancelledError.
   */
  complete(options: CompletionOptions): Promise<CompletionResult>;
}

/** A one-off model call ({@link RuntimeApi.complete}). */
export interface CompletionOptions {
  /** Provider id or alias. */
  provider: string;
  /** Default: the provider's default model. */
  model?: string;
  /** System prompt parts (default none). */
  system?: SystemPart[];
  /** The conversation to answer (at least one message). */
  messages: Message[];
  /** Output cap (default: the provider's). */
  maxOutputTokens?: number;
  /** Aborting it rejects with a CancelledError. */
  signal?: AbortSignal;
  /** Recorded on the request (providers use it for caching and chaining); default a fresh id. */
  conversationId?: string;
  /** Send it as a lean request ({@link ProviderRequest.lean}): no reasoning, search, caching or storage. Default false. */
  lean?: boolean;
}

/** The reply of {@link RuntimeApi.complete}. */
export interface CompletionResult {
  /** The assistant message as a run would have stored it. */
  message: Message;
  /** Its text blocks, joined. */
  text: string;
  /** Token usage, when the provider reported it. */
  usage?: Usage;
}

/** What starts a run. */
export interface RunOptions {
  /** Omit to start a new conversation. */
  conversationId?: string;
  /** The user's message (text and images). Omit to re-run the stored history as is (resend). */
  input?: ContentBlock[];
  /** Default: settings.defaultMode, else `tools`. */
  mode?: ExecutionMode;
  /** Provider id or alias. Default: settings.defaultProvider, else the first configured provider. */
  provider?: string;
  /** Default: the provider's default model (settings may override it). */
  model?: string;
  /** Absolute or relative to the host's current folder. Default: the current folder. */
  workdir?: string;
  /** Edit and resend: drop this message and everything after it, then run with `input`. */
  truncateFromMessageId?: string;
  /** Client-chosen id: a second run with the same id for the same conversation is not started. */
  clientRequestId?: string;
  /** Aborting it stops the run, like `RunHandle.abort`. */
  signal?: AbortSignal;
  /**
   * Keep the run's event log for `RunHandle.events` (default true). Hosts that consume events
   * through `RuntimeApi.onEvent` (the gateway) pass false, so a long reply is not held twice.
   */
  keepEvents?: boolean;
}

/** A running (or finished) run. */
export interface RunHandle {
  runId: string;
  conversationId: string;
  /**
   * Every event of this run, in order. Reading slowly never slows the run. Iterating throws
   * when the run was started with `keepEvents: false`.
   */
  events: AsyncIterable<LifecycleEvent>;
  /** Settles when the run ends (never rejects). */
  result: Promise<RunResult>;
  /** Stop the run (mid-stream or mid-tool). */
  abort(reason?: string): void;
}

/** How a run ended. */
export interface RunResult {
  status: 'completed' | 'aborted' | 'error';
  conversationId: string;
  runId: string;
  error?: RuntimeErrorInfo;
  /** The assistant and tool messages produced. */
  messages: Message[];
  usage: Usage;
  /** Files changed by successful Write / Edit / Delete calls during the run (the ledger). */
  editedFiles?: EditedFile[];
}

/** Facts about a session given to session-level taps. */
export interface SessionInfo {
  conversationId: string;
  /** The persisted tail: the last sequence number emitted for this conversation. */
  lastSeq: number;
  /** The run in progress, when there is one: what the conversation is running with. */
  run?: RunInfo;
  /**
   * Only in `loadHistory`: the window this process still holds from the conversation's last
   * completed run. A store that finds the same window stored may answer `unchanged: true`.
   */
  held?: { stamp: string; count: number; lastMessageId?: string };
}

/** Facts about a run in progress (for stores, titles, memory). */
export interface RunInfo {
  runId: string;
  mode: ExecutionMode;
  /** The provider's id (aliases resolved). */
  provider: string;
  model: string;
  /** Absolute working directory. */
  workdir: string;
}

/** What request-building taps receive. */
export interface RequestContext {
  conversationId: string;
  runId: string;
  /** 1-based model round within the run. */
  round: number;
  mode: ExecutionMode;
  provider: Provider;
  model: string;
  workdir: string;
  settings: Settings;
  /** The tools offered this round (after the `tools` hook). Empty in text mode. */
  tools: ToolDefinition[];
  signal: AbortSignal;
  /** The context checkpoint in force (its summary is placed at `COMPACTION_SUMMARY`). */
  checkpoint?: Checkpoint;
}

/** A stored conversation's history, as the persistence hook loads it. */
export interface HistorySnapshot {
  conversationId: string;
  /** Messages of the active segment, oldest first. */
  messages: Message[];
  /** Summary of earlier segments (compaction), merged into the system prompt. */
  summary?: string;
  /** The checkpoint that starts the active segment, when a compaction made one. Wins over `summary`. */
  checkpoint?: Checkpoint;
  lastSeq: number;
  /** Provider and model of the latest run, when the store knows them (a manual compaction uses them). */
  provider?: string;
  model?: string;
  /**
   * Opaque: which stored window this is (the store's name of the active segment, `''` for a
   * conversation's first one). The kernel passes it back in {@link SessionInfo.held} when it
   * still holds the window a run ended with; for a conversation its run created it holds `''`.
   */
  stamp?: string;
  /**
   * The stored window is exactly {@link SessionInfo.held}'s (same stamp, message count and newest
   * message): `messages` may then be empty and the kernel goes on with what it holds, so a long
   * conversation's turn start costs neither the read nor the provider's reconversion.
   */
  unchanged?: boolean;
}

/** The round the kernel commits in one transaction. */
export interface RoundRecord {
  conversationId: string;
  runId: string;
  round: number;
  assistant: Message;
  /** Tool results of the round (absent when the model made no calls). */
  toolResults?: Message;
  usage?: Usage;
  provider: string;
  model: string;
  lastSeq: number;
}

/** The moment that asked for a compaction. */
export type CompactionTrigger = 'pre-send' | 'mid-stream' | 'post-tool' | 'overflow' | 'manual';

/** Files the conversation touched, as the compaction ledger keeps them (paths as the tools reported them). */
export interface FileLedger {
  /** Files read by successful Read calls. */
  read: string[];
  /** Files changed by successful Write / Edit / Delete results (failed results never count). */
  modified: string[];
}

/**
 * A context checkpoint: what a compaction leaves in place of the messages it covers. It starts a
 * new history segment; later requests carry its summary and ledger in the system prompt (at
 * `COMPACTION_SUMMARY`) plus only the messages from `firstKeptMessageId` on.
 */
export interface Checkpoint {
  /** `summary`: the covered messages were summarized; `prune`: only old tool outputs were cut. */
  kind: 'summary' | 'prune';
  /** Summary of everything before the kept window (a prune carries the earlier one forward; may then be empty). */
  summary: string;
  /**
   * The oldest message kept verbatim; everything before it is covered. Absent: every message is
   * covered. Contract: never a `tool` message (a call and its result are never split).
   */
  firstKeptMessageId?: string;
  /** Messages this compaction covered (0 for a prune). */
  coveredMessageCount: number;
  /** Tool calls in the kept window whose outputs requests replace with a short placeholder. */
  prunedToolCallIds: string[];
  /** Cumulative: every earlier checkpoint's ledger merged with what the covered messages did. */
  ledger: FileLedger;
  /** The trigger that made it. */
  trigger: CompactionTrigger;
  /** Provider that wrote the summary (absent for a prune). */
  provider?: string;
  /** Model that wrote the summary. */
  model?: string;
  /** Estimated context tokens before the compaction. */
  tokensBefore: number;
  /** Estimated context tokens of the window it leaves. */
  tokensAfter: number;
  /** Tokens the summary requests themselves used (stores count them with the conversation's usage). */
  usage?: Usage;
  /** Epoch milliseconds. */
  createdAt: number;
}

/** What the `compaction` hook is asked. */
export interface CompactionRequest {
  /** Which moment asks. */
  trigger: CompactionTrigger;
  /**
   * True when the kernel needs a compaction whatever the estimate says (`manual`, `overflow`,
   * `mid-stream`); false when the tap decides (`pre-send`, `post-tool`).
   */
  force: boolean;
  /** The active window the next request would carry, oldest first (at pre-send the new user message is last). */
  messages: Message[];
  /** The checkpoint in force. */
  checkpoint?: Checkpoint;
  /** The request as built, for estimating it (absent for `manual`). */
  request?: ProviderRequest;
  /** `overflow`: the provider's error. */
  error?: ProviderErrorInfo;
  /** The conversation's provider (the summary's default author). */
  provider: string;
  /** The conversation's model. */
  model: string;
  /** Aborted when the run (or the manual compaction) is stopped. */
  signal: AbortSignal;
  /**
   * Call once the tap has decided to compact, before the slow part (the summary request): the
   * kernel emits `compaction` with `phase: 'start'`, so clients show progress.
   */
  begin(): void;
}

/**
 * How a `compaction` tap answers: a checkpoint to store (the kernel stamps `trigger` and
 * `createdAt`; `budget` is the estimate for the request built after it), or no compaction with the budget in force (the kernel publishes it as a
 * `context` event and stops a reply that streams past `replyChars` to compact mid-stream), or a
 * failure that left nothing changed. Return undefined to let the next tap answer.
 */
export type CompactionAnswer =
  | { checkpoint: Omit<Checkpoint, 'trigger' | 'createdAt'>; budget?: ContextBudget }
  | { budget: ContextBudget }
  | { failed: string; budget?: ContextBudget };

/** The context as a compaction tap estimated it for one request. */
export interface ContextBudget {
  /** Estimated tokens of the request. */
  usedTokens: number;
  /** The model's context window. */
  contextWindow: number;
  /** Over this, the next request compacts first. */
  thresholdTokens: number;
  /**
   * Characters (text, thinking, tool input) the reply may stream before the kernel stops it to
   * compact (`mid-stream`). Absent: no limit. Only replies without a tool call are stopped.
   */
  replyChars?: number;
}

/** The checkpoint the kernel asks the persistence plugin to store. */
export interface CheckpointRecord {
  /** The conversation. */
  conversationId: string;
  /** The checkpoint, stamped with its trigger and time. */
  checkpoint: Checkpoint;
  /** The sequence number of the compaction's `end` event (to persist as the tail). */
  lastSeq: number;
}

/** What {@link RuntimeApi.compact} did. */
export interface CompactionOutcome {
  /** `compacted`: a checkpoint was stored; `skipped`: nothing to compact; `failed`: the history is unchanged. */
  status: 'compacted' | 'skipped' | 'failed';
  /** The conversation. */
  conversationId: string;
  /** The stored checkpoint (`compacted`). */
  checkpoint?: Checkpoint;
  /** Why it was skipped or failed. */
  reason?: string;
}

/** A tool call on its way through dispatch. */
export interface ToolCallInfo {
  id: string;
  name: string;
  /**
   * The validated arguments: the very object `execute` receives. A `beforeToolCall` tap may
   * replace its keys to change what runs (validate them against the tool's schema first);
   * `tool_execution_start` has been emitted with them as they were.
   */
  input: JsonObject;
  conversationId: string;
  runId: string;
  round: number;
  mode: ExecutionMode;
  workdir: string;
  /** Aborts when the run is stopped: a tap that waits (a hook, an approval) stops waiting. */
  signal: AbortSignal;
}

/** Why a before-tap blocked a tool call. */
export interface ToolBlock {
  block: true;
  reason: string;
}

/** Tap options: `stage` orders taps (lower first; see {@link SystemPromptStages}); `before` names taps to precede. */
export interface TapOptions {
  stage?: number;
  before?: string | string[];
}

/** A tap-only view of a hook: the plugin can tap, only the owner calls. The tap is named after the plugin. */
export interface HookTap<Args extends unknown[], R> {
  /** Add a tap named after the plugin; dispose the result to remove it. Throws once the plugin failed to load or was unloaded. */
  tap(fn: (...args: Args) => R, options?: TapOptions): Disposable;
}

/**
 * Documented stages of the `systemPrompt` hook. Taps at a stage see everything added by lower
 * stages. Contract: the kernel adds its own parts as taps at their stages: `base` at BASE, the
 * user's `systemPrompt` setting (`user-settings`) at USER_SETTINGS, the checkpoint's summary and
 * ledger (`compaction-summary`) at COMPACTION_SUMMARY and the offered tools' rules
 * (`tool-rules`) at TOOL_RULES, each before plugin taps of the same stage. They are rebuilt for
 * every request, so a compaction never summarizes them away.
 */
export declare const SystemPromptStages: {
  readonly BASE: 0;
  readonly USER_SETTINGS: 100;
  readonly SKILLS: 200;
  readonly MEMORY: 300;
  readonly COMPACTION_SUMMARY: 400;
  readonly TOOL_RULES: 1000;
};

/** Documented stages of the `messages` hook. */
export declare const MessageStages: {
  /** Repair (synthetic results for dangling tool calls), done by the kernel. */
  readonly REPAIR: -100;
  /** The kernel replaces the outputs of a checkpoint's pruned tool calls here. */
  readonly COMPACTION: 0;
  /** Context policy (e.g. dropping old image bytes). */
  readonly CONTEXT_POLICY: 100;
  /** Provider conversion happens inside the provider; this is the last generic stage. */
  readonly SANITIZE: 200;
};

/**
 * Process-wide hooks. Contract (what a throw or rejection in a tap does, the error naming the
 * plugin): in `ready` the plugin is reported failed and unloaded, and the host keeps booting; in
 * `shutdown` and `sessionCreated` it is reported and the host goes on; in `failed` it is only
 * logged (reporting it would call `failed` again). `ready` and `shutdown` taps are bounded by
 * `runtime.pluginApplyTimeoutMs` like `apply`.
 */
export interface KernelHookTaps {
  /** All plugins applied; hosts start serving after it. A tap that throws (or hangs) fails its plugin alone. */
  ready: HookTap<[], void | Promise<void>>;
  /** The process is stopping: finish writes, close sockets, stop children. */
  shutdown: HookTap<[], void | Promise<void>>;
  /** A conversation session was created (first use in this process). */
  sessionCreated: HookTap<[SessionInfo], void>;
  /** Something failed outside a run (a plugin, a tap, a background task, an error a plugin's timer threw). */
  failed: HookTap<[RuntimeErrorInfo], void>;
  /**
   * Notification: a conversation was deleted ({@link RuntimeApi.deleteConversation}): its run is
   * over, the process forgot it and the store deleted it. Drop what you keep for it. A throw is
   * reported, never fatal.
   */
  conversationDeleted: HookTap<[ConversationDeleted], void>;
}

/** What {@link KernelHookTaps.conversationDeleted} says. */
export interface ConversationDeleted {
  /** The deleted conversation. */
  conversationId: string;
  /** A store or this process knew the conversation (the value `deleteConversation` resolves with). */
  existed: boolean;
}

/**
 * Per-conversation hooks, in the order a run uses them. Waterfall hooks return the (possibly
 * changed) value; bail hooks stop at the first tap that returns something other than undefined.
 * Contract, what a throw or rejection in a tap does (every error names the plugin and the hook):
 * - the run fails (`error` event, `agent_end` status `error`): `loadHistory`, `saveUserMessage`,
 *   `saveRound`, `truncateHistory`, `systemPrompt`, `messages`, `tools`, `providerRequest`;
 * - the call gets an error result the model reads, and the run goes on: `beforeToolCall`,
 *   `executeTool`, `afterToolCall`;
 * - the compaction fails (a `compaction` error event) and the run goes on with the history as it
 *   was: `compaction`, `saveCheckpoint`;
 * - it is reported (logged and the kernel's `failed` hook) and the run goes on: `saveProgress`,
 *   `providerEvent`, `event`, `turnEnd` (an async tap's rejection too);
 * - the runtime call that asked rejects with a PluginError (no run is involved):
 *   `deleteConversation`, `renameConversation`.
 * Code a tap (or a tool's `execute`) starts runs in the plugin's name: an error it throws later
 * from a timer or an unawaited promise is reported naming the plugin, and the run the tap was
 * called for, if still going, ends with an `error` event and `agent_end` status `error`.
 */
export interface SessionHookTaps {
  /** Load the stored history (bail: the persistence plugin answers). */
  loadHistory: HookTap<[SessionInfo], HistorySnapshot | undefined | Promise<HistorySnapshot | undefined>>;
  /** Store the user's message when it is sent. */
  saveUserMessage: HookTap<[Message, SessionInfo], void | Promise<void>>;
  /**
   * Store the streaming assistant message, coalesced (at block boundaries and at most every
   * `persistIntervalMs`). The message's `meta.partial` is true.
   */
  saveProgress: HookTap<[Message, SessionInfo], void | Promise<void>>;
  /** Commit a round's final state (reply, tool results, usage) in one transaction. */
  saveRound: HookTap<[RoundRecord], void | Promise<void>>;
  /** Truncate history at a message (edit and resend): the message and everything after it go. */
  truncateHistory: HookTap<[{ conversationId: string; fromMessageId: string }], void | Promise<void>>;
  /**
   * Bail: delete a stored conversation ({@link RuntimeApi.deleteConversation}, called once its
   * run is stopped): the store answers true when it held it, false when not; a tap that stores
   * nothing returns undefined. A throw rejects the `deleteConversation` call.
   */
  deleteConversation: HookTap<[{ conversationId: string }], boolean | undefined | Promise<boolean | undefined>>;
  /**
   * Bail: store a user's title ({@link RuntimeApi.renameConversation}; `title` is trimmed, 1-200
   * characters): true when stored, false for a conversation the store does not hold, undefined
   * from a tap that stores nothing. A throw rejects the `renameConversation` call.
   */
  renameConversation: HookTap<[{ conversationId: string; title: string }], boolean | undefined | Promise<boolean | undefined>>;
  /**
   * Store a compaction checkpoint as a new active history segment: the messages from
   * `firstKeptMessageId` on move into it. Contract: in one transaction (all of it, or nothing).
   */
  saveCheckpoint: HookTap<[CheckpointRecord], void | Promise<void>>;
  /** Waterfall: system prompt parts, staged by {@link SystemPromptStages}. */
  systemPrompt: HookTap<[SystemPart[], RequestContext], SystemPart[] | Promise<SystemPart[]>>;
  /** Waterfall: the messages to send, staged by {@link MessageStages}. */
  messages: HookTap<[Message[], RequestContext], Message[] | Promise<Message[]>>;
  /** Waterfall: the tools offered this round (after the mode filter). */
  tools: HookTap<[ToolDefinition[], RequestContext], ToolDefinition[] | Promise<ToolDefinition[]>>;
  /** Waterfall: the final provider request. */
  providerRequest: HookTap<[ProviderRequest, RequestContext], ProviderRequest | Promise<ProviderRequest>>;
  /**
   * Bail: compact, or say the budget. Called once per trigger: before the first request of a run
   * (`pre-send`), before a request that follows tool results (`post-tool`), after a reply was
   * stopped past `replyChars` (`mid-stream`), after the provider answered `context_overflow`
   * (`overflow`, then the request is retried once) and by {@link RuntimeApi.compact}
   * (`manual`). The kernel stores a returned checkpoint and never knows how it was made.
   * Contract: at most one compaction per trigger; one at a time per conversation; a throw or a
   * `failed` answer leaves the history as it was.
   */
  compaction: HookTap<[CompactionRequest, RequestContext], CompactionAnswer | undefined | Promise<CompactionAnswer | undefined>>;
  /** Notification: every provider event of the round, as it arrives. Must not block. */
  providerEvent: HookTap<[ProviderEvent, RequestContext], void>;
  /** Bail: veto a tool call. Return `{ block: true, reason }` to refuse it; the reason goes to the model. */
  beforeToolCall: HookTap<[ToolCallInfo], ToolBlock | undefined | Promise<ToolBlock | undefined>>;
  /** Bail: execute a call instead of the registry (return a result to take over). */
  executeTool: HookTap<[ToolCallInfo, ToolContext], ToolResult | undefined | Promise<ToolResult | undefined>>;
  /** Waterfall: change a result before it goes to the model and history. */
  afterToolCall: HookTap<[ToolResult, ToolCallInfo], ToolResult | Promise<ToolResult>>;
  /** Notification: every lifecycle event, with its sequence number. Must not block. */
  event: HookTap<[LifecycleEvent], void>;
  /**
   * Notification, after the run: titles, memory and user hooks go here. The session is given as
   * the run ended (`run` set, `lastSeq` its last event).
   * Contract: runs in the background once the run is over (the conversation is free for its next
   * run, `agent_end` emitted, `result` settled without waiting for it); taps run in parallel. Each
   * call may take `runtime.afterTurnTimeoutMs` (default 60000 ms) before it is reported (naming
   * the plugin) and no longer waited for; a plugin has at most `runtime.afterTurnConcurrency`
   * (default 4) calls in flight, later ones wait their turn. `shutdown` waits for what is in
   * flight, within that bound, before any plugin's `shutdown` tap. A throw is reported, never fatal.
   */
  turnEnd: HookTap<[RunResult, SessionInfo], void | Promise<void>>;
}

// ────────────────────────────────────────────────────────────────────────────────────────────
// Events
// ────────────────────────────────────────────────────────────────────────────────────────────

/** Fields every lifecycle event has. `seq` starts at 1 and rises across every run of the conversation. */
export interface EventBase {
  conversationId: string;
  runId: string;
  seq: number;
  /** Epoch milliseconds. */
  ts: number;
}

/**
 * The lifecycle events, in order: `agent_start`; per round `turn_start`, `message_start`,
 * `message_update`..., `message_end`, then `tool_execution_start` / `_update` / `_end` per call,
 * then `turn_end`; finally `agent_end`. Other types (`error`, `ask_user_question`, ...) may
 * appear between them.
 */
export type LifecycleEvent =
  | (EventBase & { type: 'agent_start'; mode: ExecutionMode; provider: string; model: string; userMessage?: Message })
  | (EventBase & { type: 'turn_start'; round: number })
  | (EventBase & { type: 'message_start'; messageId: string; round: number })
  | (EventBase & { type: 'message_update'; messageId: string; delta: MessageDelta })
  | (EventBase & { type: 'message_end'; message: Message })
  | (EventBase & { type: 'tool_execution_start'; toolCallId: string; toolName: string; args: JsonObject })
  | (EventBase & { type: 'tool_execution_update'; toolCallId: string; toolName: string; partial: ToolProgress })
  | (EventBase & { type: 'tool_execution_end'; toolCallId: string; toolName: string; result: ToolResultBlock; durationMs: number })
  | (EventBase & { type: 'turn_end'; round: number; message: Message; toolResults?: Message; usage?: Usage })
  | (EventBase & { type: 'agent_end'; status: RunResult['status']; usage: Usage; error?: RuntimeErrorInfo; editedFiles?: EditedFile[] })
  | (EventBase & { type: 'error'; error: RuntimeErrorInfo })
  /** Events the builtins emit under their own names (see {@link OwnTypeEventName}). */
  | (EventBase & { type: OwnTypeEventName; payload: JsonObject })
  /** Any other event a plugin emits with `ToolContext.emit`; `name` is the name it gave. */
  | (EventBase & { type: 'custom'; name: string; payload: JsonObject });

/**
 * The event names that travel under their own `type`, kept so the builtins' clients go on
 * working: the kernel's {@link PluginEvents} (`compaction`, `context`, `notice`), a pending
 * question and its settlement (tool-ask-user-question), a pending tool approval and its
 * settlement (permissions, docs/permissions.md). Every other name, declared in
 * {@link PluginEvents} or not, travels as `type: 'custom'`. Not a list of the events there are:
 * a plugin's events are typed by merging into {@link PluginEvents}.
 */
export type OwnTypeEventName = 'ask_user_question' | 'ask_user_question_settled' | 'tool_approval' | 'tool_approval_settled' | 'compaction' | 'context' | 'notice';

/** @deprecated The old name of {@link OwnTypeEventName}; type a plugin's events with {@link PluginEvents}. */
export type NamedPluginEventType = OwnTypeEventName;

/** One streamed piece of an assistant message. */
export type MessageDelta =
  | { kind: 'text'; index: number; text: string }
  | { kind: 'thinking'; index: number; text: string }
  | { kind: 'tool_call_start'; index: number; id: string; name: string }
  | { kind: 'tool_input'; index: number; json: string }
  | { kind: 'block'; index: number; block: ContentBlock };

/** How {@link MessageFold} reads unfinished blocks (a finished one is always the block as it ended). */
export interface FoldReadOptions {
  /** Unfinished tool calls: left out (`drop`), or with their arguments parsed as far as valid JSON (`parse`, `{}` until then). Default `parse`. */
  toolCalls?: 'drop' | 'parse';
  /** Stamp unfinished thinking with this provider, and leave it out while empty (how the kernel stores it). Default: unstamped, kept. */
  thinkingProvider?: string;
}

/**
 * The one fold of {@link MessageDelta}s into an assistant message's content, as the kernel builds
 * the message it stores and as the gateway and the WebUI rebuild the reply being streamed: a
 * plugin that shows or relays `message_update` events folds them with it too. Pure; deltas are
 * kept in arrays and joined only when a block is read, so a long reply stays linear.
 */
export declare class MessageFold {
  /** Start from content already shown (e.g. a snapshot's partial reply): later deltas continue it. */
  static from(content: readonly ContentBlock[]): MessageFold;
  /** Fold one delta in (by its block index; a delta of another kind than the block there starts it again). */
  apply(delta: MessageDelta): void;
  /** The tool call's name at a block index, if a tool call is there. */
  toolName(index: number): string | undefined;
  /** The argument JSON streamed so far for the tool call at a block index (undefined when none is there). */
  toolInput(index: number): string | undefined;
  /** Some block has not ended yet. */
  unfinished(): boolean;
  /** The block at an index as it stands; undefined for a gap or a block `options` leave out. */
  block(index: number, options?: FoldReadOptions): ContentBlock | undefined;
  /** Every block in index order, gaps and left-out blocks skipped. */
  content(options?: FoldReadOptions): ContentBlock[];
}

// ────────────────────────────────────────────────────────────────────────────────────────────
// Shared services: what several plugins implement or use (see ServiceMap)
// ────────────────────────────────────────────────────────────────────────────────────────────

/** Options of {@link HistoryService.listConversations}. */
export interface ListConversationsOptions {
  /**
   * Words, each matched case-insensitively as a substring of the title or of the text of user and
   * assistant messages (full-text index); every word must match. Any text is accepted (quotes,
   * `*`, operators are plain characters).
   */
  search?: string;
  /** At most this many conversations (1-500, default 50). */
  limit?: number;
  /** Skip this many (default 0). */
  offset?: number;
}

/** One row of the conversation list, most recently updated first. */
export interface ConversationSummary {
  /** The conversation id. */
  id: string;
  /** Null until something names the conversation (the user, or the title plugin). */
  title: string | null;
  /** Epoch milliseconds. */
  createdAt: number;
  /** Epoch milliseconds of the last stored message, round or turn end. */
  updatedAt: number;
  /** Provider of the latest run. */
  provider: string | null;
  /** Model of the latest run. */
  model: string | null;
  /** Stored messages in every segment, partial ones included. */
  messageCount: number;
  /** `meta.pinned` is true: listed before every unpinned conversation. */
  pinned?: boolean;
  /** With `search`: the text around the match in the newest matching message (absent when only the title matched). */
  snippet?: string;
}

/** A history segment. Compaction starts a new one; the active one is what the next request carries. */
export interface SegmentInfo {
  /** The segment id. */
  id: string;
  /** The segment this one continues; null for the first. */
  parentSegmentId: string | null;
  /** Summary of everything before this segment (compaction checkpoint); null for the first segment. */
  summary: string | null;
  /** The compaction checkpoint that opened this segment; null for the first one and for summary-only segments. */
  checkpoint: Checkpoint | null;
  /** Epoch milliseconds. */
  createdAt: number;
}

/** A stored message, with where it sits and whether it finished streaming. */
export interface HistoryMessage extends Message {
  /** `partial` while streaming, or when the run stopped (or the process died) before the round committed. */
  status: 'partial' | 'complete';
  /** The segment it belongs to. */
  segmentId: string;
  /** Position in the conversation (1-based, rising, shared by every segment). */
  ordinal: number;
  /** Epoch milliseconds of its last write. */
  updatedAt: number;
}

/** A conversation with its messages, as a reconnecting client or the CLI needs it. */
export interface ConversationDetail extends ConversationSummary {
  /** The last event sequence number persisted for this conversation. */
  lastSeq: number;
  /** Execution mode of the latest run. */
  mode: ExecutionMode | null;
  /** Working directory of the latest run. */
  workdir: string | null;
  /** Free-form metadata owned by plugins (see {@link HistoryService.setConversationMeta}). */
  meta: JsonObject;
  /** The segment the next request carries. */
  activeSegmentId: string;
  /** Oldest first. */
  segments: SegmentInfo[];
  /** Every segment's messages, oldest first (with `limit`, only the newest page of them). */
  messages: HistoryMessage[];
  /** True when older messages exist than the first one returned (load them with `before`). */
  hasMore: boolean;
}

/** A page of a long conversation: the newest `limit` messages, or those before an ordinal. */
export interface ConversationPage {
  /** At most this many messages (1-1000); default: all of them. */
  limit?: number;
  /** Only messages with an ordinal below this one (the first ordinal of the page already shown). */
  before?: number;
}

/** Token usage of one model round, as stored. */
export interface UsageRecord {
  /** The conversation of the round. */
  conversationId: string;
  /** The assistant message of the round; null once that message was truncated away. */
  messageId: string | null;
  /** The run of the round. */
  runId: string;
  /** The round's number within its run. */
  round: number;
  /** Provider id. */
  provider: string;
  /** Model id. */
  model: string;
  /** Input tokens (cache reads and writes not included). */
  inputTokens: number;
  /** Output tokens, reasoning included. */
  outputTokens: number;
  /** Input tokens read from the prompt cache. */
  cacheReadTokens: number;
  /** Input tokens written to the prompt cache. */
  cacheWriteTokens: number;
  /** Reasoning tokens (part of outputTokens). */
  reasoningTokens: number;
  /** USD at the model's prices when the round ran; absent when the model had none. */
  costUsd?: number;
  /** Epoch milliseconds. */
  createdAt: number;
}

/** Options of {@link HistoryService.startSegment}. */
export interface StartSegmentOptions {
  /** Summary of everything the new segment no longer carries. */
  summary: string;
  /** Move this message and every later one into the new segment (the part compaction keeps verbatim). */
  carryFromMessageId?: string;
}

/** A stored conversation changed in a way lists show (its title). */
export interface ConversationChange {
  /** The conversation that changed. */
  conversationId: string;
  /** What changed. */
  kind: 'title';
  /** The new title. */
  title: string;
  /** `user`: a rename; `auto`: a generated title ({@link HistoryService.setTitle}). */
  titleSource: 'user' | 'auto';
}

/**
 * The `history` service: browse and manage stored conversations (hosts, the gateway, the title
 * and compaction plugins use it). Every method is async, whatever the backend. Contract: bad
 * arguments are refused with a UsageError whose message names the method and the field.
 */
export interface HistoryService {
  /** Conversations, pinned ones first, then most recently updated first. */
  listConversations(options?: ListConversationsOptions): Promise<ConversationSummary[]>;
  /**
   * A conversation with its meta, segments and messages; undefined when unknown. With `page`,
   * only the newest `limit` messages (before `before`), read through the index: the cost follows
   * the page, not the conversation.
   */
  getConversation(id: string, page?: ConversationPage): Promise<ConversationDetail | undefined>;
  /** Set the title (trimmed, 1-200 characters), as the user's: no generated title replaces it. False when the conversation is unknown. */
  renameConversation(id: string, title: string): Promise<boolean>;
  /**
   * Store a generated title (trimmed, 1-200 characters) unless the user named the conversation
   * (a rename, or any title stored before titles had a source). True when it was stored.
   */
  setTitle(id: string, title: string): Promise<boolean>;
  /**
   * Be told of every title stored in this process (a rename or a generated title), after it is
   * written. Resolves once listening (the database is open); dispose to stop.
   */
  watchConversations(listener: (change: ConversationChange) => void): Promise<Disposable>;
  /**
   * Delete a conversation with its segments, messages and usage. A run in progress on it is
   * stopped first. False when the conversation is unknown. Hosts and plugins delete through
   * {@link RuntimeApi.deleteConversation}, which tells every plugin.
   */
  deleteConversation(id: string): Promise<boolean>;
  /** Whether the store holds the conversation. */
  conversationExists(id: string): Promise<boolean>;
  /**
   * Merge `patch` into the conversation's meta (JSON merge patch: a `null` value removes the
   * key). Returns the new meta, or undefined when the conversation is unknown.
   */
  setConversationMeta(id: string, patch: JsonObject): Promise<JsonObject | undefined>;
  /** Usage rows of a conversation, oldest first. */
  getUsage(id: string): Promise<UsageRecord[]>;
  /**
   * Start a new active segment (a compaction checkpoint) whose parent is the current one.
   * Returns the new segment id, or undefined when the conversation is unknown.
   */
  startSegment(id: string, options: StartSegmentOptions): Promise<string | undefined>;
}

/** A staged upload, as the store keeps it. */
export interface UploadRecord {
  /** The upload's id (its folder's name). */
  uploadId: string;
  /** The name the client gave (metadata only). */
  name: string;
  /** The stored file's name inside its folder. */
  storedName: string;
  /** Absolute path of the stored file. */
  path: string;
  /** Bytes. */
  size: number;
  /** The detected media type. */
  mediaType: string;
  /** SHA-256 of the bytes (hex): the same bytes staged twice are one upload. */
  sha256: string;
  /** Valid UTF-8 without NUL bytes. */
  text: boolean;
  /** Epoch milliseconds when it was staged. */
  createdAt: number;
  /** Epoch milliseconds of its last use (staged again or attached): retention counts from it. */
  lastUsedAt: number;
}

/** Options of {@link UploadsService.stage}. */
export interface UploadStageOptions {
  /** The client's file name (sanitized for storage, kept as metadata). */
  name?: string;
  /** Refuse past this many bytes (default: the store's). */
  maxBytes?: number;
  /** A size announced up front (Content-Length): over the limit, refused before reading. */
  declaredSize?: number;
}

/** What staging a file gave. */
export interface UploadStageResult {
  /** The stored upload. */
  record: UploadRecord;
  /** The bytes were stored already: this is that upload. */
  deduped: boolean;
}

/** The `uploads` settings section in force, defaults filled in (docs/settings.md). */
export interface UploadsSettings {
  /** Uploads older than this many days are removed at start-up. */
  retentionDays: number;
  /** The largest file one upload may be (bytes). */
  maxBytes: number;
  /** The most bytes of attachments one message may carry together. */
  maxMessageBytes: number;
  /** User images keep their bytes in requests for this many of the latest user turns. */
  imageWindowTurns: number;
  /** Images returned by tools keep their bytes for this many of the latest user turns. */
  toolImageWindowTurns: number;
  /** Text files up to this many bytes are put in the request whole. */
  inlineTextBytes: number;
}

/** What the start-up garbage collection of uploads removed. */
export interface UploadsCollectResult {
  /** Ids of the removed uploads. */
  removed: string[];
}

/**
 * The `uploads` service: how the gateway, the CLI and the desktop host stage files and turn them
 * into attachment blocks. Contract: a refusal throws an error whose `code` is `too_large`,
 * `not_found` or `bad_request` and whose message says what is wrong.
 */
export interface UploadsService {
  /** Stream bytes into the store (an HTTP body, a file); refuses past `uploads.maxBytes` and removes the partial file. */
  stage(source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>, opts?: UploadStageOptions): Promise<UploadStageResult>;
  /** Stage a file from disk (the CLI's `--attach`). */
  stageFile(file: string, name?: string): Promise<UploadStageResult>;
  /** Stage bytes held in memory (the gateway's inline attachments). */
  stageBytes(bytes: Uint8Array, name: string): Promise<UploadStageResult>;
  /** The stored upload, or undefined when the id is unknown (or its file is gone). */
  get(uploadId: string): UploadRecord | undefined;
  /** The attachment block for a stored upload; throws (code `not_found`) naming the id. */
  block(uploadId: string): AttachmentBlock;
  /**
   * Check a message's attachments before it is sent: uploads are for the tools modes only
   * (`bad_request` in text mode) and together at most `uploads.maxMessageBytes` (`too_large`).
   * `mode` is the run's, when given; else the default mode from settings.
   */
  checkMessage(blocks: AttachmentBlock[], mode?: ExecutionMode): void;
  /** The section in force, defaults filled in. */
  settings(): UploadsSettings;
  /** Start-up garbage collection (removals of uploads past `uploads.retentionDays`), once it is done. */
  collected(): Promise<UploadsCollectResult>;
}

/**
 * A gateway protocol message (docs/gateway-protocol.md), either way: `type` and its fields. The
 * wire schemas (zod) and exact types are lib/gateway-protocol/protocol.ts in the source tree; a
 * plugin's own message types (`<namespace>.<name>`) are validated by the plugin that answers them.
 */
export interface GatewayMessage {
  /** The message type: a built-in one (`chat_queue`, `queue`, `reply`, ...) or a plugin's `<namespace>.<name>`. */
  type: string;
  /** A request's id, echoed by its `reply`. */
  id?: string;
  /** The type's fields. */
  [field: string]: unknown;
}

/**
 * One `chat_queue` item (docs/gateway-protocol.md, "chat_queue"): everything that starts, stops
 * or steers a run. `action` says which; the other fields are the action's (`conversationId`, or
 * `conversation_id` for `tool_answer` and `tool_approval`).
 */
export interface GatewayQueueItem {
  /** `send`, `stop`, `edit_resend`, `regenerate`, `tool_answer`, `tool_approval`, `queue_*`, `compact_now`. */
  action: string;
  /** The action's fields. */
  [field: string]: unknown;
}

/** Answers one HTTP request of a route ({@link GatewayService.registerHttpRoute}). A throw becomes a JSON 500. */
export type GatewayHttpHandler = (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse, url: URL) => void | Promise<void>;

/**
 * The `gateway` service, for plugins: answer messages and HTTP routes of their own, notify every
 * client, and route a conversation's work between several processes behind one address. What
 * hosts use to serve it (attach to a server, in-process clients) is the gateway plugin's own.
 */
export interface GatewayService {
  /**
   * Answer client messages of a plugin's own type (`cron.list`): namespaced (`<ns>.<name>`) and
   * never a built-in type. The handler gets the message as sent (it validates it; `id` is
   * checked already) and runs in the client's order like every message; its result is the
   * reply's `data`, a throw the reply's error (with the error's `code` when it is a string,
   * e.g. `bad_request`, `not_found`). Dispose to withdraw.
   */
  registerHandler(type: string, handler: (message: GatewayMessage) => unknown): Disposable;
  /** Send `{ type: 'extension', name, data }` to every connected client (a plugin's change notices). */
  broadcast(name: string, data: unknown): void;
  /**
   * Answer HTTP requests for `method` (`GET` also answers `HEAD`) at `pathPrefix` (under `/api/`)
   * and below it, e.g. `POST /api/uploads`, `GET /api/uploads/<id>`. The gateway checks Host,
   * Origin and the `Authorization: Bearer <token>` header first (401/403 as JSON
   * `{ error: { code, message } }`) and only then calls the handler. Dispose to withdraw.
   */
  registerHttpRoute(method: string, pathPrefix: string, handler: GatewayHttpHandler): Disposable;
  /**
   * Several processes behind one address (plugins/team-fanout): `remote` routes chat_queue items
   * to the process owning their conversation and replays from a shared event log. One at a time
   * (a second throws); dispose to withdraw.
   */
  setRemote(remote: GatewayRemote): Disposable;
  /** A lifecycle event another process produced: folded and fanned out as if the runtime had emitted it. */
  publishRemote(event: LifecycleEvent): void;
  /**
   * Handle a chat_queue item forwarded from another process (validated like a client's):
   * resolves to the reply's data, rejects with the reply's error (`code`).
   */
  handleForwarded(item: GatewayQueueItem): Promise<unknown>;
  /**
   * A conversation notice (`queue`, a queued item's failed `reply`) another process sent its
   * subscribers ({@link GatewayRemote.notified}): to this process's subscribers, as it is.
   */
  notifyRemote(conversationId: string, message: GatewayMessage): void;
}

/**
 * What routes a gateway's conversations between processes ({@link GatewayService.setRemote});
 * plugins/team-fanout implements it on PostgreSQL.
 */
export interface GatewayRemote {
  /** Undefined: handle `item` here. Else the owner's reply data (a throw is the reply's error). */
  route(item: GatewayQueueItem): Promise<{ data: unknown } | undefined>;
  /** Before a snapshot: fold in what other processes logged for the conversation. */
  catchUp(conversationId: string): Promise<void>;
  /**
   * The conversation's events after `lastSeq`, handed to `deliver` synchronously with the fan-out
   * (no event of the conversation is published between the two). False: the log no longer reaches
   * back to `lastSeq` (deliver not called).
   */
  replay(conversationId: string, lastSeq: number, deliver: (events: LifecycleEvent[]) => void): Promise<boolean>;
  /** A run of the conversation is in progress on another process (the list's and snapshot's `running`). */
  running?(conversationId: string): boolean;
  /**
   * The queue of the process owning the conversation (the `items` of its `queue` message, as that
   * process's gateway listed them); undefined when that is this one (or none).
   */
  queue?(conversationId: string): Promise<Array<{ [field: string]: unknown }> | undefined>;
  /** A notice this process sent the conversation's subscribers: for the other processes' ones ({@link GatewayService.notifyRemote}). */
  notified?(conversationId: string, message: GatewayMessage): void;
}

// ────────────────────────────────────────────────────────────────────────────────────────────
// Errors
// ────────────────────────────────────────────────────────────────────────────────────────────

/** Error codes of the runtime's error classes. */
export type RuntimeErrorCode = 'plugin' | 'provider' | 'tool' | 'config' | 'dependency' | 'cancelled' | 'usage' | 'internal';

/**
 * The runtime's error base class (published at runtime by `liveagent/plugin-api`). A plugin may
 * throw it, or a subclass, to say what failed: `toInfo()` is what events and results carry.
 * Contract: the kernel's own subclasses keep their `name` in a minified build.
 */
export declare class RuntimeError extends Error {
  /** What kind of failure. */
  readonly code: RuntimeErrorCode;
  /** The plugin to blame, when known. */
  readonly plugin?: string;
  /** The hook that failed, when known. */
  readonly hook?: string;
  /** Structured detail (JSON). */
  readonly details?: JsonObject;
  constructor(code: RuntimeErrorCode, message: string, opts?: { plugin?: string; hook?: string; details?: JsonObject; cause?: unknown });
  /** The serializable form. */
  toInfo(): RuntimeErrorInfo;
}

/** A plugin failed: in apply, in a tap, or at load (code `plugin`). */
export declare class PluginError extends RuntimeError {
  constructor(plugin: string, message: string, opts?: { hook?: string; cause?: unknown; details?: JsonObject });
}

/** Settings or a manifest are malformed; the message names the field (code `config`). */
export declare class ConfigError extends RuntimeError {
  constructor(message: string, opts?: { plugin?: string; details?: JsonObject; cause?: unknown });
}

/** A plugin requirement is missing or the requirements form a cycle (code `dependency`). */
export declare class DependencyError extends RuntimeError {
  constructor(message: string, details?: JsonObject);
}

/** A provider failed, after retries when retryable (code `provider`). */
export declare class ProviderError extends RuntimeError {
  constructor(message: string, opts?: { plugin?: string; details?: JsonObject; cause?: unknown });
}

/** A tool failed in a way that ends the run, not an error result for the model (code `tool`). */
export declare class ToolError extends RuntimeError {
  constructor(message: string, opts?: { plugin?: string; details?: JsonObject; cause?: unknown });
}

/**
 * The run was stopped (code `cancelled`); a stopped run's signal (`ToolContext.signal`,
 * `RequestContext.signal`) has one as its `reason`. `details.reason` names a cause the contract
 * documents. Contract: a run stopped because its conversation is deleted or forgotten
 * ({@link RuntimeApi.deleteConversation}, {@link RuntimeApi.forgetConversation}) aborts with
 * `details.reason` `'conversation_deleted'` (before any plugin hears of the delete); other stops
 * (the user, a shutdown, {@link RunHandle.abort}) carry no `details.reason`.
 */
export declare class CancelledError extends RuntimeError {
  constructor(message?: string, details?: JsonObject);
}

/** The caller asked for something that does not exist: an unknown provider, mode or conversation (code `usage`). */
export declare class UsageError extends RuntimeError {
  constructor(message: string, details?: JsonObject);
}

/** A serializable error, as events and results carry it. */
export interface RuntimeErrorInfo {
  code: RuntimeErrorCode;
  message: string;
  /** The plugin to blame, when known. */
  plugin?: string;
  /** The hook that failed, when known. */
  hook?: string;
  details?: JsonObject;
}
