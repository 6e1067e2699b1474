// ────────────────────────────────────────────────────────────────────────────────────────────
// The runtime, sessions and runs
// ────────────────────────────────────────────────────────────────────────────────────────────

import type { Disposable, ExecutionMode, JsonObject } from './basics.js';
import type { ContentBlock, EditedFile, Message, Usage } from './content.js';
import type { RuntimeErrorInfo } from './errors.js';
import type { LifecycleEvent } from './events.js';
import type { ModelFacts, ModelInfo, Provider, ProviderErrorInfo, ProviderRequest, SystemPart } from './providers.js';
import type { Settings } from './settings.js';
import type { ToolDefinition } from './tools.js';

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
