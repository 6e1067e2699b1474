/**
 * The `history` service: what hosts and other plugins (the gateway/WebUI, the CLI, later the
 * title and compaction plugins) use to browse and manage stored conversations. Other plugins
 * `import type { HistoryService } from '../history-sqlite/service.js'` and get it with
 * `ctx.service<HistoryService>(HISTORY_SERVICE)`.
 *
 * Every method is async so a later backend (PostgreSQL) can keep the same interface. Bad
 * arguments are refused with a UsageError whose message names the method and the field.
 */
import type { Checkpoint, Disposable, ExecutionMode, JsonObject, Message } from '../../plugin-api.js';

/** The key the service is provided under. */
export const HISTORY_SERVICE = 'history';

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
  id: string;
  /** Null until something names the conversation (the user, or the title plugin). */
  title: string | null;
  /** Epoch milliseconds. */
  createdAt: number;
  /** Epoch milliseconds of the last stored message, round or turn end. */
  updatedAt: number;
  /** Provider and model of the latest run. */
  provider: string | null;
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
  id: string;
  parentSegmentId: string | null;
  /** Summary of everything before this segment (compaction checkpoint); null for the first segment. */
  summary: string | null;
  /** The compaction checkpoint that opened this segment; null for the first one and for summary-only segments. */
  checkpoint: Checkpoint | null;
  createdAt: number;
}

/** A stored message, with where it sits and whether it finished streaming. */
export interface HistoryMessage extends Message {
  /** `partial` while streaming, or when the run stopped (or the process died) before the round committed. */
  status: 'partial' | 'complete';
  segmentId: string;
  /** Position in the conversation (1-based, rising, shared by every segment). */
  ordinal: number;
  updatedAt: number;
}

/** A conversation with its messages, as a reconnecting client or the CLI needs it. */
export interface ConversationDetail extends ConversationSummary {
  /** The last event sequence number persisted for this conversation. */
  lastSeq: number;
  mode: ExecutionMode | null;
  workdir: string | null;
  /** Free-form metadata owned by plugins (see {@link HistoryService.setConversationMeta}). */
  meta: JsonObject;
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

/** Token usage of one model round. */
export interface UsageRecord {
  conversationId: string;
  /** The assistant message of the round; null once that message was truncated away. */
  messageId: string | null;
  runId: string;
  round: number;
  provider: string;
  model: string;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  reasoningTokens: number;
  /** USD at the model's prices when the round ran; absent when the model had none. */
  costUsd?: number;
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
  conversationId: string;
  kind: 'title';
  title: string;
  /** `user`: a rename; `auto`: a generated title ({@link HistoryService.setTitle}). */
  titleSource: 'user' | 'auto';
}

/** Browse and manage stored conversations. */
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
   * stopped first. False when the conversation is unknown.
   */
  deleteConversation(id: string): Promise<boolean>;
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
