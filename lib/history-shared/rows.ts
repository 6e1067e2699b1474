/**
 * The history's rows as both backends return them (SQLite, and PostgreSQL with bigints read as
 * numbers: lib/database/pg.ts), and their mapping to and from the contract's types. Optional
 * message fields are left out (not set to undefined) so a loaded message equals the one stored.
 */
import type { Checkpoint, ConversationSummary, EditedFile, HistoryMessage, JsonObject, Message, SegmentInfo, StopReason, Usage, UsageRecord } from '../../plugin-api.js';

export interface MessageRow {
  id: string;
  conversation_id: string;
  segment_id: string;
  ordinal: number;
  role: Message['role'];
  content: string;
  status: 'partial' | 'complete';
  provider: string | null;
  model: string | null;
  stop_reason: string | null;
  error_message: string | null;
  edited_files: string | null;
  usage: string | null;
  meta: string | null;
  created_at: number;
  updated_at: number;
  /** The run and round that committed an assistant message whose usage the row carries (0008; SQLite only, see usageOfMessageRow). */
  run_id?: string | null;
  round?: number | null;
}

export interface ConversationRow {
  id: string;
  title: string | null;
  created_at: number;
  updated_at: number;
  last_seq: number;
  active_segment_id: string;
  provider: string | null;
  model: string | null;
  mode: string | null;
  workdir: string | null;
  meta: string;
}

/** What loading the history reads of the active segment. */
export interface SegmentHead {
  summary: string | null;
  checkpoint: string | null;
  parent_segment_id: string | null;
}

export interface SegmentRow {
  id: string;
  parent_segment_id: string | null;
  summary: string | null;
  checkpoint: string | null;
  created_at: number;
}

export interface UsageRow {
  conversation_id: string;
  message_id: string | null;
  run_id: string;
  round: number;
  provider: string;
  model: string;
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
  reasoning_tokens: number;
  cost_usd?: number | null;
  created_at: number;
}

/** Named parameters of the message upsert. */
export interface MessageParams {
  id: string;
  conversationId: string;
  role: Message['role'];
  content: string;
  status: 'partial' | 'complete';
  provider: string | null;
  model: string | null;
  stopReason: string | null;
  errorMessage: string | null;
  editedFiles: string | null;
  usage: string | null;
  meta: string | null;
  createdAt: number;
  now: number;
  /** Set when the row carries its round's usage (no usage row written for it); null otherwise. */
  runId: string | null;
  round: number | null;
}

const json = (v: unknown): string | null => (v === undefined ? null : JSON.stringify(v));

export function messageParams(conversationId: string, m: Message, status: 'partial' | 'complete', now: number, usageOf?: { runId: string; round: number }): MessageParams {
  return {
    id: m.id,
    conversationId,
    role: m.role,
    content: JSON.stringify(m.content),
    status,
    provider: m.provider ?? null,
    model: m.model ?? null,
    stopReason: m.stopReason ?? null,
    errorMessage: m.errorMessage ?? null,
    editedFiles: json(m.editedFiles),
    usage: json(m.usage),
    meta: json(m.meta),
    createdAt: m.createdAt,
    now,
    runId: usageOf?.runId ?? null,
    round: usageOf?.round ?? null,
  };
}

/** A stored assistant message is partial while streaming and when its round never committed. */
export function statusOf(m: Message): 'partial' | 'complete' {
  return m.meta?.partial === true ? 'partial' : 'complete';
}

export function rowToMessage(r: MessageRow): Message {
  return withOptional({ id: r.id, role: r.role, content: JSON.parse(r.content), createdAt: r.created_at }, r);
}

/** The optional fields, set in place (one object per row: opening 10k messages makes 10k, not 20k). */
function withOptional<M extends Message>(m: M, r: MessageRow): M {
  if (r.provider !== null) m.provider = r.provider;
  if (r.model !== null) m.model = r.model;
  if (r.stop_reason !== null) m.stopReason = r.stop_reason as StopReason;
  if (r.usage !== null) m.usage = JSON.parse(r.usage) as Usage;
  if (r.error_message !== null) m.errorMessage = r.error_message;
  if (r.edited_files !== null) m.editedFiles = JSON.parse(r.edited_files) as EditedFile[];
  if (r.meta !== null) m.meta = JSON.parse(r.meta) as JsonObject;
  return m;
}

export function rowToHistoryMessage(r: MessageRow): HistoryMessage {
  const m: HistoryMessage = { id: r.id, role: r.role, content: JSON.parse(r.content), createdAt: r.created_at, status: r.status, segmentId: r.segment_id, ordinal: r.ordinal, updatedAt: r.updated_at };
  return withOptional(m, r);
}

export function rowToUsage(r: UsageRow): UsageRecord {
  return {
    conversationId: r.conversation_id,
    messageId: r.message_id,
    runId: r.run_id,
    round: r.round,
    provider: r.provider,
    model: r.model,
    inputTokens: r.input_tokens,
    outputTokens: r.output_tokens,
    cacheReadTokens: r.cache_read_tokens,
    cacheWriteTokens: r.cache_write_tokens,
    reasoningTokens: r.reasoning_tokens,
    ...(typeof r.cost_usd === 'number' ? { costUsd: r.cost_usd } : {}),
    createdAt: r.created_at,
  };
}

/**
 * The usage record of a message row that carries its round's usage (run_id set): SQLite writes a
 * committed round's usage on its assistant message instead of a usage row (one row and three
 * index pages less per round commit), and turns it into a usage row only when the message is
 * truncated away. Undefined for any other row.
 */
export function usageOfMessageRow(r: Pick<MessageRow, 'id' | 'conversation_id' | 'provider' | 'model' | 'usage' | 'updated_at' | 'run_id' | 'round'>): UsageRecord | undefined {
  if (!r.run_id || r.round === null || r.round === undefined || r.usage === null) return undefined;
  const u = JSON.parse(r.usage) as Usage;
  return {
    conversationId: r.conversation_id,
    messageId: r.id,
    runId: r.run_id,
    round: r.round,
    provider: r.provider ?? '',
    model: r.model ?? '',
    inputTokens: u.inputTokens ?? 0,
    outputTokens: u.outputTokens ?? 0,
    cacheReadTokens: u.cacheReadTokens ?? 0,
    cacheWriteTokens: u.cacheWriteTokens ?? 0,
    reasoningTokens: u.reasoningTokens ?? 0,
    ...(typeof u.costUsd === 'number' ? { costUsd: u.costUsd } : {}),
    createdAt: r.updated_at,
  };
}

export function parseMeta(text: string | null): JsonObject {
  if (!text) return {};
  const v: unknown = JSON.parse(text);
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as JsonObject) : {};
}

/** A row of the conversation list. */
export interface SummaryRow {
  id: string;
  title: string | null;
  created_at: number;
  updated_at: number;
  provider: string | null;
  model: string | null;
  message_count: number;
}

export const summaryOf = (r: SummaryRow): ConversationSummary => ({
  id: r.id,
  title: r.title,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  provider: r.provider,
  model: r.model,
  messageCount: r.message_count,
});

export const segmentInfo = (s: SegmentRow): SegmentInfo => ({
  id: s.id,
  parentSegmentId: s.parent_segment_id,
  summary: s.summary,
  checkpoint: s.checkpoint ? (JSON.parse(s.checkpoint) as Checkpoint) : null,
  createdAt: s.created_at,
});
