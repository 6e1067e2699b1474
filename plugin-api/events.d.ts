// ────────────────────────────────────────────────────────────────────────────────────────────
// Events
// ────────────────────────────────────────────────────────────────────────────────────────────

import type { PluginEvents } from '../plugin-api.js';
import type { ExecutionMode, JsonObject } from './basics.js';
import type { ContentBlock, EditedFile, Message, ToolResultBlock, Usage } from './content.js';
import type { RuntimeErrorInfo } from './errors.js';
import type { RunResult } from './runtime.js';
import type { ToolProgress } from './tools.js';

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
