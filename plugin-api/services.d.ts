// ────────────────────────────────────────────────────────────────────────────────────────────
// Shared services: what several plugins implement or use (see ServiceMap)
// ────────────────────────────────────────────────────────────────────────────────────────────

import type { Disposable, ExecutionMode, JsonObject } from './basics.js';
import type { AttachmentBlock, Message } from './content.js';
import type { LifecycleEvent } from './events.js';
import type { Checkpoint, RuntimeApi } from './runtime.js';

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

/**
 * A stored conversation changed in a way lists show: its title, its meta (pinned), or it was
 * deleted. With a backend several processes share (PostgreSQL), changes made by the others are
 * reported too.
 */
export interface ConversationChange {
  /** The conversation that changed. */
  conversationId: string;
  /** What changed: `title` (a rename or a generated title), `meta` (e.g. pinned), `deleted`. */
  kind: 'title' | 'meta' | 'deleted';
  /** With `title`: the new title. */
  title?: string;
  /** With `title`: `user` for a rename, `auto` for a generated title ({@link HistoryService.setTitle}). */
  titleSource?: 'user' | 'auto';
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
   * Be told of every title stored (a rename or a generated title), meta change and delete, after
   * it is written: this process's own, and with a shared backend those of other processes too.
   * Resolves once listening (the database is open); dispose to stop.
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
  /** What a conversation spent: one record per round that reported usage (truncated ones included, with `messageId` null) and per compaction summary, oldest first. */
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
