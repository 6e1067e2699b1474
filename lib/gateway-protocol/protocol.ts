/**
 * The gateway protocol, validated with zod in both directions. The WebUI imports these
 * schemas and types too, so client and server cannot drift. Documented in docs/gateway-protocol.md.
 *
 * Frames are JSON text. A server frame holds one ServerMessage or an array of them (a burst of
 * events coalesced into one socket write). Client frames hold exactly one ClientMessage.
 */
import { z } from 'zod';
import type { CompactionOutcome, CompactionTrigger, JsonObject, LifecycleEvent, Message } from '../../plugin-api.js';

export const PROTOCOL_VERSION = 1;

const id = z.string().min(1).max(200);
const conversationId = z.string().regex(/^[A-Za-z0-9_-]{1,128}$/, 'must be 1-128 letters, digits, _ or -');
const mode = z.enum(['text', 'tools', 'agent-dev']);

/** The most messages one snapshot or page carries (the history service reads at most 1000 at a time; one more is looked behind). */
export const MAX_PAGE_MESSAGES = 500;
const pageLimit = z.number().int().min(1).max(MAX_PAGE_MESSAGES);
/** A message position: history ordinals start at 1. */
const ordinal = z.number().int().min(1);

/** An attachment sent with a message: an image (base64) or a text file's content. */
export const AttachmentSchema = z.object({
  name: z.string().min(1).max(500),
  mimeType: z.string().min(1).max(200),
  /** base64 for images and binary files; plain text for text files. */
  data: z.string().max(20 * 1024 * 1024),
  encoding: z.enum(['base64', 'utf8']).default('base64'),
});
export type Attachment = z.infer<typeof AttachmentSchema>;

/** A file staged with `POST /api/uploads` (docs/gateway-protocol.md, "Uploads"), named by the id it answered. */
export const UploadRefSchema = z.object({ uploadId: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be the uploadId POST /api/uploads answered') });
export type UploadRef = z.infer<typeof UploadRefSchema>;

/** An attachment item: a staged upload `{ uploadId }`, or the legacy inline form (staged on arrival when the server has uploads). */
export const AttachmentItemSchema = z.union([UploadRefSchema, AttachmentSchema], {
  error: () => 'each attachment must be { uploadId } (from POST /api/uploads) or { name, mimeType, data, encoding }',
});
export type AttachmentItem = UploadRef | Attachment;

/** Fields of a message to send (also used by queued items and edit-and-resend). */
const SendFields = {
  text: z.string().max(1_000_000),
  attachments: z.array(AttachmentItemSchema).max(20).optional(),
  mode: mode.optional(),
  provider: z.string().min(1).max(100).optional(),
  model: z.string().min(1).max(200).optional(),
  workdir: z.string().min(1).max(4096).optional(),
};

/** `chat_queue` items: everything that starts, stops or steers a run. */
export const ChatQueueSchema = z.discriminatedUnion('action', [
  /**
   * Send a message. Without conversationId a new conversation starts (the reply carries its id);
   * `instructions` then become that conversation's own (conversation-settings), used from its
   * first request on. While a run is active the message waits in the conversation's queue.
   */
  z.object({ action: z.literal('send'), conversationId: conversationId.optional(), clientRequestId: id, instructions: z.string().max(100_000).optional(), ...SendFields }),
  /** Stop the active run of a conversation. */
  z.object({ action: z.literal('stop'), conversationId }),
  /** Edit a user message and resend: history is truncated at messageId, then `text` (and `attachments`; empty text with attachments only is fine) is sent. */
  z.object({ action: z.literal('edit_resend'), conversationId, messageId: id, clientRequestId: id, ...SendFields }),
  /** Resend the last user message as it was stored (text and attachments), after truncating from it. */
  z.object({ action: z.literal('regenerate'), conversationId, clientRequestId: id, mode: mode.optional(), provider: SendFields.provider, model: SendFields.model, workdir: SendFields.workdir }),
  /** Answer a pending AskUserQuestion. request_json is a JSON-encoded answers array. */
  z.object({ action: z.literal('tool_answer'), item_id: id, request_json: z.string().max(100_000), conversation_id: conversationId }),
  /** Decide a pending tool approval (permissions): run it once, refuse it, or run it and what the same rule asks for in this conversation. */
  z.object({ action: z.literal('tool_approval'), item_id: id, conversation_id: conversationId, decision: z.enum(['approve', 'deny', 'approve_session'], 'decision must be "approve", "deny" or "approve_session"') }),
  /** Queue management for messages waiting behind an active run. */
  z.object({ action: z.literal('queue_remove'), conversationId, itemId: id }),
  z.object({ action: z.literal('queue_reorder'), conversationId, itemIds: z.array(id).max(500) }),
  z.object({ action: z.literal('queue_edit'), conversationId, itemId: id, text: z.string().max(1_000_000) }),
  /** Send a queued item now: the active run is stopped and this item runs next. */
  z.object({ action: z.literal('queue_send_now'), conversationId, itemId: id }),
  /** Compact the conversation's context now (trigger `manual`); the reply is the CompactionOutcome. */
  z.object({ action: z.literal('compact_now'), conversationId }),
]);
export type ChatQueueItem = z.infer<typeof ChatQueueSchema>;

/** Every client → server message. `id` is echoed in the `reply`. */
export const ClientMessageSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('chat_queue'), id: id.optional(), item: ChatQueueSchema }),
  /**
   * Follow a conversation. With lastSeq the server replays what was missed (or sends a snapshot
   * when that is out of its window). A snapshot holds the newest `limit` messages (default: the
   * `gateway.snapshotMessages` setting).
   */
  z.object({ type: z.literal('subscribe'), id: id.optional(), conversationId, lastSeq: z.number().int().min(0).optional(), limit: pageLimit.optional() }),
  z.object({ type: z.literal('unsubscribe'), id: id.optional(), conversationId }),
  z.object({ type: z.literal('conversations.list'), id: id.optional(), search: z.string().max(500).optional() }),
  /**
   * Without `before`: a snapshot of the newest `limit` messages. With `before` (a snapshot's or
   * page's `firstOrdinal`): a `page` of the `limit` messages older than that, live state untouched.
   */
  z.object({ type: z.literal('conversations.load'), id: id.optional(), conversationId, limit: pageLimit.optional(), before: ordinal.optional() }),
  z.object({ type: z.literal('conversations.rename'), id: id.optional(), conversationId, title: z.string().min(1).max(500) }),
  z.object({ type: z.literal('conversations.delete'), id: id.optional(), conversationId }),
  /** Pin or unpin (stored as `meta.pinned`); every client's list is sent again. */
  z.object({ type: z.literal('conversations.pin'), id: id.optional(), conversationId, pinned: z.boolean() }),
  /**
   * The stored messages, lossless (status, ordinal and segment included), for an export: the
   * newest `limit` (default 500), or those before `before`; the reply's `hasMore`/`firstOrdinal`
   * page further back. No snapshot or page message is sent and no live state is touched.
   */
  z.object({ type: z.literal('conversations.export'), id: id.optional(), conversationId, limit: pageLimit.optional(), before: ordinal.optional() }),
  /** What the conversation spent over its whole history (ConversationUsage in gateway/history.ts). */
  z.object({ type: z.literal('conversations.usage'), id: id.optional(), conversationId }),
  z.object({ type: z.literal('settings.get'), id: id.optional() }),
  z.object({ type: z.literal('settings.set'), id: id.optional(), settings: z.record(z.string(), z.unknown()) }),
  z.object({ type: z.literal('providers.list'), id: id.optional() }),
  /** The MCP servers and their state; changes are broadcast as `mcp` messages. */
  z.object({ type: z.literal('mcp.status'), id: id.optional() }),
  /** Reconnect one MCP server now, re-reading its settings entry. */
  z.object({ type: z.literal('mcp.restart'), id: id.optional(), name: z.string().min(1).max(200) }),
]);
export type ClientMessage = z.infer<typeof ClientMessageSchema>;

/** Client message types the gateway itself handles; a plugin can never take one over. */
export const BUILTIN_CLIENT_TYPES: ReadonlySet<string> = new Set(ClientMessageSchema.options.map((o) => o.shape.type.value));
/** A plugin's own message type (GatewayService.registerHandler): `<namespace>.<name>`, e.g. `cron.list`. */
export const EXTENSION_TYPE = /^[a-z][a-z0-9_-]*\.[a-z0-9_.-]+$/i;
/** A client message for a handler a plugin registered; the handler validates everything but `id`. */
export interface ExtensionMessage {
  type: string;
  id?: string;
  [field: string]: unknown;
}

export interface ConversationSummary {
  id: string;
  title: string | null;
  createdAt: number;
  updatedAt: number;
  provider?: string | null;
  model?: string | null;
  messageCount?: number;
  running?: boolean;
  /** Listed in the Pinned group, first. */
  pinned?: boolean;
  /** In a search's answer: the text around the match in the newest matching message. */
  snippet?: string;
}

/** A message waiting behind an active run. A type, not an interface: it is a JSON object (GatewayRemote.queue). */
export type QueuedItem = {
  itemId: string;
  text: string;
  attachments?: AttachmentItem[];
  mode?: z.infer<typeof mode>;
  provider?: string;
  model?: string;
  workdir?: string;
  clientRequestId: string;
  createdAt: number;
};

/** One MCP server as clients see it. */
export interface McpServerSummary {
  name: string;
  state: 'connecting' | 'connected' | 'restarting' | 'failed' | 'stopped';
  error?: string;
  tools: string[];
  transport: string;
}

/** A model as clients see it; `contextWindow` and `price` (USD per million tokens) come from the model catalog when it knows them. */
export interface ModelSummary {
  id: string;
  name?: string;
  contextWindow?: number;
  price?: { input?: number; output?: number; cacheRead?: number; cacheWrite?: number };
}

export interface ProviderSummary {
  id: string;
  displayName: string;
  configured: boolean;
  defaultModel: string;
  models: ModelSummary[];
}

/**
 * A context checkpoint as the transcript shows it. The card belongs right before
 * `beforeMessageId` (the first message of its segment); without it, after the last message.
 */
export interface CheckpointView {
  segmentId: string;
  beforeMessageId?: string;
  kind: 'summary' | 'prune';
  trigger: CompactionTrigger;
  summary: string;
  coveredMessageCount: number;
  provider?: string;
  model?: string;
  tokensBefore: number;
  tokensAfter: number;
  createdAt: number;
  /**
   * Its place is in older messages than the snapshot (or page) holds: hide the card until the
   * page that holds that place arrives (it carries the checkpoint again, with beforeMessageId).
   */
  inOlderPage?: true;
}

/** The latest context estimate the gateway saw for a conversation (a `context` event, or a compaction's `tokensAfter`). */
export interface ContextView {
  /** The event it came from. */
  seq: number;
  usedTokens: number;
  /** Absent when it came from a compaction (which does not say the window). */
  contextWindow?: number;
  thresholdTokens?: number;
}

/** The projection of a lifecycle event onto the gateway stream. */
/** A settings problem that stops nothing (SettingsStore.warnings): an unknown key, or an invalid file on disk (`path` empty). */
export interface SettingsWarningWire {
  path: string;
  message: string;
  /** The nearest known key, as a full path. */
  suggestion?: string;
}

export type StreamKind = 'token' | 'thinking' | 'tool' | 'done' | 'error' | 'event';

/** Every server → client message. */
export type ServerMessage =
  | { type: 'hello'; protocol: number; server: string }
  /**
   * token / thinking / tool / done / error / event: one lifecycle event, projected. `phase` is set
   * for tool events. `coalesced` (token / thinking / tool-input deltas only): this message stands
   * for that many consecutive deltas of one block (seqs `seq - coalesced + 1` … `seq`), its string
   * their concatenation.
   */
  | { type: StreamKind; conversationId: string; seq: number; phase?: 'start' | 'update' | 'end'; coalesced?: number; event: LifecycleEvent }
  /** State of a conversation from history, with the in-progress partial reply when a run is active. */
  | {
      type: 'snapshot';
      conversationId: string;
      lastSeq: number;
      conversation: ConversationSummary | null;
      messages: Message[];
      running: boolean;
      partial?: Message;
      pending?: LifecycleEvent[];
      /** Context checkpoints, oldest first: all of them, those placed in older pages marked `inOlderPage`. */
      checkpoints: CheckpointView[];
      /** Older stored messages exist than `messages` holds (load them with `conversations.load { before: firstOrdinal }`). */
      hasMore: boolean;
      /** Ordinal of the oldest stored message in `messages` (absent when none is stored yet). */
      firstOrdinal?: number;
      /** How many stored messages are older than `messages` (0 when hasMore is false). */
      olderCount: number;
      /** A compaction in progress (its `start` event), run or manual. */
      compacting?: LifecycleEvent;
      /** The latest context estimate seen in this process. */
      context?: ContextView;
    }
  /** Older messages, the answer to `conversations.load { before }` (to the requester only, before its reply). */
  | {
      type: 'page';
      conversationId: string;
      /** The `before` it answers. */
      before: number;
      /** Oldest first; every one has an ordinal below `before`. */
      messages: Message[];
      /** Ordinal of `messages[0]`: the `before` of the next older page. */
      firstOrdinal?: number;
      hasMore: boolean;
      /** Only the checkpoints whose card sits before a message of this page, with beforeMessageId (the snapshot listed them all). */
      checkpoints: CheckpointView[];
    }
  | { type: 'queue'; conversationId: string; items: QueuedItem[] }
  | { type: 'conversations'; items: ConversationSummary[] }
  /** `warnings`: unknown keys (with the nearest known one) and a settings file on disk that is invalid (see SettingsStore.warnings). */
  | { type: 'settings'; settings: Record<string, unknown>; warnings?: SettingsWarningWire[] }
  | { type: 'mcp'; servers: McpServerSummary[] }
  /** A plugin's own notice (GatewayService.broadcast), e.g. `cron.tasks`; `data` is the plugin's to define. */
  | { type: 'extension'; name: string; data?: unknown }
  | { type: 'reply'; id: string; ok: true; data?: unknown }
  | { type: 'reply'; id: string; ok: false; error: { code: string; message: string } };

// ── Request → reply pairs ─────────────────────────────────────────────────────────────────
// The `data` of the `reply` to each client message, by type (and for `chat_queue` by action).
// The gateway's handlers are checked against it (`satisfies`), and the WebUI's `request()`
// returns it, so neither end guesses at a reply's shape.

/** A conversation's spending, as `conversations.usage` answers. */
export interface ConversationUsage {
  rounds: number;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  /** USD of the rounds priced when they ran; absent when none was. */
  costUsd?: number;
  /** Rounds whose model had no prices (left out of costUsd). */
  unpricedRounds: number;
}

/** A run started (or queued behind the active one) for a send, edit-and-resend or regenerate. */
export interface RunStartedReply {
  conversationId: string;
  runId?: string;
  /** Waiting behind the active run, as queue item `itemId`. */
  queued?: true;
  itemId?: string;
  /** The same clientRequestId was seen before: this is what it started. */
  duplicate?: true;
}

/** `chat_queue` replies, by item action. */
export interface ChatQueueReplies {
  send: RunStartedReply;
  edit_resend: RunStartedReply & { removedCount?: number };
  regenerate: RunStartedReply & { messageId?: string; removedCount?: number };
  stop: { conversationId: string; stopped: boolean };
  tool_answer: { toolCallId: string };
  tool_approval: { toolCallId: string; conversationId: string; decision: 'approve' | 'deny' | 'approve_session'; outcome: 'approved' | 'denied' };
  queue_remove: { conversationId: string };
  queue_reorder: { conversationId: string };
  queue_edit: { conversationId: string };
  queue_send_now: { conversationId: string; interrupted: boolean };
  /** The kernel's CompactionOutcome. */
  compact_now: CompactionOutcome;
}

/** The other replies, by client message type (`unsubscribe` answers without data). */
export interface ReplyMap {
  chat_queue: ChatQueueReplies[keyof ChatQueueReplies];
  subscribe: { conversationId: string; mode: 'live' | 'snapshot'; lastSeq: number } | { conversationId: string; mode: 'replay'; replayed: number; lastSeq: number };
  unsubscribe: undefined;
  'conversations.list': { items: ConversationSummary[] };
  /** A snapshot (without `before`; the `snapshot` message came first) or a page (the `page` message came first). */
  'conversations.load': { conversationId: string; lastSeq: number; running: boolean; hasMore: boolean } | { conversationId: string; count: number; hasMore: boolean; firstOrdinal?: number };
  'conversations.rename': { conversationId: string; title: string };
  'conversations.delete': { conversationId: string; deleted: true };
  'conversations.pin': { conversationId: string; pinned: boolean };
  /** The stored row and messages as they are (lossless: `ordinal`, `status`, `segmentId` from the store). */
  'conversations.export': { conversationId: string; conversation: { id: string; title?: string | null; [field: string]: unknown }; messages: Array<Message & { ordinal?: number; status?: string }>; hasMore: boolean; firstOrdinal?: number };
  'conversations.usage': { conversationId: string } & ConversationUsage;
  'settings.get': { settings: Record<string, unknown>; warnings: SettingsWarningWire[] };
  'settings.set': { settings: Record<string, unknown>; warnings: SettingsWarningWire[] };
  'providers.list': { providers: ProviderSummary[] };
  'mcp.status': { servers: McpServerSummary[] };
  'mcp.restart': { servers: McpServerSummary[] };
}

/** The reply `data` a client message gets. */
export type ReplyOf<M extends { type: ClientMessage['type'] }> = M extends { type: 'chat_queue'; item: { action: infer A extends keyof ChatQueueReplies } } ? ChatQueueReplies[A] : ReplyMap[M['type']];

/** Map a lifecycle event to its stream kind (the gateway's projection). */
export function streamKindOf(event: LifecycleEvent): { kind: StreamKind; phase?: 'start' | 'update' | 'end' } {
  switch (event.type) {
    case 'message_update':
      return { kind: event.delta.kind === 'thinking' ? 'thinking' : 'token' };
    case 'tool_execution_start':
      return { kind: 'tool', phase: 'start' };
    case 'tool_execution_update':
      return { kind: 'tool', phase: 'update' };
    case 'tool_execution_end':
      return { kind: 'tool', phase: 'end' };
    case 'agent_end':
      return { kind: event.status === 'error' ? 'error' : 'done' };
    // The lifecycle `error` event travels as a plain event: the run's one `done` or `error`
    // message is its agent_end, so clients see exactly one terminal message per run.
    default:
      return { kind: 'event' };
  }
}

/** The checkpoint a `compaction` end event describes (firstKeptMessageId as the card's place), or undefined when malformed. */
export function checkpointOfEndPayload(p: JsonObject, segmentId: string): CheckpointView | undefined {
  if (p.phase !== 'end' || (p.kind !== 'summary' && p.kind !== 'prune')) return undefined;
  const num = (v: unknown) => (typeof v === 'number' ? v : 0);
  return {
    segmentId,
    ...(typeof p.firstKeptMessageId === 'string' ? { beforeMessageId: p.firstKeptMessageId } : {}),
    kind: p.kind,
    trigger: (typeof p.trigger === 'string' ? p.trigger : 'manual') as CompactionTrigger,
    summary: typeof p.summary === 'string' ? p.summary : '',
    coveredMessageCount: num(p.coveredMessageCount),
    ...(typeof p.provider === 'string' ? { provider: p.provider } : {}),
    ...(typeof p.model === 'string' ? { model: p.model } : {}),
    tokensBefore: num(p.tokensBefore),
    tokensAfter: num(p.tokensAfter),
    createdAt: num(p.createdAt),
  };
}

/** Parse a client frame; the error names the bad field. */
export function parseClientMessage(
  text: string,
  extensions?: { has(type: string): boolean },
): { ok: true; message: ClientMessage; extension?: undefined } | { ok: true; message: ExtensionMessage; extension: true } | { ok: false; error: string; id?: string } {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { ok: false, error: 'frame is not valid JSON' };
  }
  // A type a plugin registered goes to its handler, which validates the rest.
  const type = raw && typeof raw === 'object' && !Array.isArray(raw) ? (raw as { type?: unknown }).type : undefined;
  if (typeof type === 'string' && extensions?.has(type)) {
    const rid = (raw as { id?: unknown }).id;
    if (rid !== undefined && (typeof rid !== 'string' || rid.length < 1 || rid.length > 200)) return { ok: false, error: 'id: must be a string of 1-200 characters' };
    return { ok: true, message: raw as ExtensionMessage, extension: true };
  }
  const r = ClientMessageSchema.safeParse(raw);
  if (r.success) return { ok: true, message: r.data };
  const issue = r.error.issues[0]!;
  const rid = raw && typeof raw === 'object' && typeof (raw as { id?: unknown }).id === 'string' ? (raw as { id: string }).id : undefined;
  return { ok: false, error: `${issue.path.join('.') || 'message'}: ${issue.message}`, ...(rid ? { id: rid } : {}) };
}

// Server → client validation. Lifecycle events and messages are checked loosely (their kernel
// types are the contract); the envelope is checked strictly so a client can trust `type`/`seq`.
const EventSchema = z.looseObject({ type: z.string(), conversationId: z.string(), runId: z.string(), seq: z.number().int().min(1), ts: z.number() });
const MessageSchema = z.looseObject({ id: z.string(), role: z.enum(['user', 'assistant', 'tool']), content: z.array(z.looseObject({ type: z.string() })), createdAt: z.number() });
const SummarySchema = z.looseObject({ id: z.string(), title: z.string().nullable(), createdAt: z.number(), updatedAt: z.number() });
const ErrorBody = z.object({ code: z.string(), message: z.string() });
const CheckpointViewSchema = z.looseObject({
  segmentId: z.string(),
  beforeMessageId: z.string().optional(),
  kind: z.enum(['summary', 'prune']),
  trigger: z.string(),
  summary: z.string(),
  coveredMessageCount: z.number(),
  tokensBefore: z.number(),
  tokensAfter: z.number(),
  createdAt: z.number(),
  inOlderPage: z.literal(true).optional(),
});
const ContextViewSchema = z.looseObject({ seq: z.number(), usedTokens: z.number(), contextWindow: z.number().optional(), thresholdTokens: z.number().optional() });

/** Every server → client message, for clients that validate what they receive. */
export const ServerMessageSchema = z.union([
  z.object({ type: z.literal('hello'), protocol: z.number(), server: z.string() }),
  z.object({ type: z.enum(['token', 'thinking', 'tool', 'done', 'error', 'event']), conversationId: z.string(), seq: z.number().int().min(1), phase: z.enum(['start', 'update', 'end']).optional(), coalesced: z.number().int().min(2).optional(), event: EventSchema }),
  z.object({
    type: z.literal('snapshot'),
    conversationId: z.string(),
    lastSeq: z.number().int().min(0),
    conversation: SummarySchema.nullable(),
    messages: z.array(MessageSchema),
    running: z.boolean(),
    partial: MessageSchema.optional(),
    pending: z.array(EventSchema).optional(),
    checkpoints: z.array(CheckpointViewSchema),
    hasMore: z.boolean(),
    firstOrdinal: z.number().int().min(1).optional(),
    olderCount: z.number().int().min(0),
    compacting: EventSchema.optional(),
    context: ContextViewSchema.optional(),
  }),
  z.object({
    type: z.literal('page'),
    conversationId: z.string(),
    before: z.number().int().min(1),
    messages: z.array(MessageSchema),
    firstOrdinal: z.number().int().min(1).optional(),
    hasMore: z.boolean(),
    checkpoints: z.array(CheckpointViewSchema),
  }),
  z.object({ type: z.literal('queue'), conversationId: z.string(), items: z.array(z.looseObject({ itemId: z.string(), text: z.string(), clientRequestId: z.string(), createdAt: z.number() })) }),
  z.object({ type: z.literal('conversations'), items: z.array(SummarySchema) }),
  z.object({ type: z.literal('extension'), name: z.string().min(1), data: z.unknown().optional() }),
  z.object({ type: z.literal('mcp'), servers: z.array(z.object({ name: z.string(), state: z.enum(['connecting', 'connected', 'restarting', 'failed', 'stopped']), error: z.string().optional(), tools: z.array(z.string()), transport: z.string() })) }),
  z.object({
    type: z.literal('settings'),
    settings: z.record(z.string(), z.unknown()),
    warnings: z.array(z.object({ path: z.string(), message: z.string(), suggestion: z.string().optional() })).optional(),
  }),
  z.object({ type: z.literal('reply'), id: z.string(), ok: z.literal(true), data: z.unknown().optional() }),
  z.object({ type: z.literal('reply'), id: z.string(), ok: z.literal(false), error: ErrorBody }),
]);

/** Parse a server frame (one message or an array of them); the error names the bad field. */
export function parseServerFrame(text: string): { ok: true; messages: ServerMessage[] } | { ok: false; error: string } {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { ok: false, error: 'frame is not valid JSON' };
  }
  const list = Array.isArray(raw) ? raw : [raw];
  const out: ServerMessage[] = [];
  for (let i = 0; i < list.length; i++) {
    const r = ServerMessageSchema.safeParse(list[i]);
    if (!r.success) {
      const issue = r.error.issues[0]!;
      return { ok: false, error: `message ${i}: ${issue.path.join('.') || 'message'}: ${issue.message}` };
    }
    out.push(list[i] as ServerMessage);
  }
  return { ok: true, messages: out };
}
