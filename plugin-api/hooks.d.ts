// ────────────────────────────────────────────────────────────────────────────────────────────
// Hooks: what plugins tap (part of "The runtime, sessions and runs")
// ────────────────────────────────────────────────────────────────────────────────────────────

import type { Disposable } from './basics.js';
import type { Message } from './content.js';
import type { RuntimeErrorInfo } from './errors.js';
import type { LifecycleEvent } from './events.js';
import type { ProviderEvent, ProviderRequest, SystemPart } from './providers.js';
import type { CheckpointRecord, CompactionAnswer, CompactionRequest, HistorySnapshot, RequestContext, RoundRecord, RunResult, RuntimeApi, SessionInfo, ToolBlock, ToolCallInfo } from './runtime.js';
import type { ToolContext, ToolDefinition, ToolResult } from './tools.js';

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
