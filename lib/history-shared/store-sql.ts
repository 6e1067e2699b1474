/**
 * The statements both history stores run as written: plain SQL that SQLite and PostgreSQL read
 * alike, with `?` parameters (better-sqlite3 and knex.raw both bind them in order). What a
 * dialect writes its own way (GREATEST or MAX, `::bigint` casts, row locks, RETURNING) stays in
 * that backend's store.
 */
import type { MessageParams } from './rows.js';
import type { RunFacts, UsageFacts } from './store-rules.js';

export const SQL = {
  /** The conversation's seq state and active segment (PostgreSQL appends FOR UPDATE to lock the row). */
  conversationSeq: 'SELECT last_seq, seq_reserved, active_segment_id, provider, model FROM conversations WHERE id = ?',
  conversationRow: 'SELECT * FROM conversations WHERE id = ?',
  segmentHead: 'SELECT summary, checkpoint, parent_segment_id FROM segments WHERE id = ?',
  segmentMessages: 'SELECT * FROM messages WHERE segment_id = ? ORDER BY ordinal',
  allMessages: 'SELECT * FROM messages WHERE conversation_id = ? ORDER BY ordinal',
  // Ordinals run 1..N without holes (new rows take MAX + 1; truncation only cuts the tail), so
  // the count is the highest ordinal: one index probe instead of a scan.
  messageCount: 'SELECT MAX(ordinal) AS n FROM messages WHERE conversation_id = ?',
  messageAt: 'SELECT ordinal, segment_id FROM messages WHERE conversation_id = ? AND id = ?',
  deleteFrom: 'DELETE FROM messages WHERE conversation_id = ? AND ordinal >= ?',
  touchUpdatedAt: 'UPDATE conversations SET updated_at = ? WHERE id = ?',
  /** Bindings: title, id. One statement, so a rename landing meanwhile wins. */
  autoTitle: "UPDATE conversations SET title = ?, title_source = 'auto' WHERE id = ? AND (title IS NULL OR title_source = 'auto')",
  /** Bindings: new segment id, conversation id, first carried ordinal. */
  carryMessages: 'UPDATE messages SET segment_id = ? WHERE conversation_id = ? AND ordinal >= ?',
  /** Bindings: segment id, now, conversation id. */
  activateSegment: 'UPDATE conversations SET active_segment_id = ?, updated_at = ? WHERE id = ?',
  /** Bindings: {@link segmentBindings}. */
  insertSegment: 'INSERT INTO segments (id, conversation_id, parent_segment_id, summary, checkpoint, created_at) VALUES (?, ?, ?, ?, ?, ?)',
  /** Bindings: {@link runFactsBindings}. */
  runFacts: 'UPDATE conversations SET provider = ?, model = ?, mode = ?, workdir = ? WHERE id = ?',
  /** Bindings: {@link usageBindings}. */
  insertUsage: `INSERT INTO usage (conversation_id, message_id, run_id, round, provider, model, input_tokens, output_tokens,
         cache_read_tokens, cache_write_tokens, reasoning_tokens, cost_usd, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
} as const;

export type SegmentBindings = [id: string, conversationId: string, parentId: string | null, summary: string | null, checkpoint: string | null, now: number];
export const segmentBindings = (s: { id: string; conversationId: string; parentId: string | null; summary: string | null; checkpoint: string | null; now: number }): SegmentBindings =>
  [s.id, s.conversationId, s.parentId, s.summary, s.checkpoint, s.now];

export type RunFactsBindings = [provider: string, model: string, mode: string, workdir: string, conversationId: string];
export const runFactsBindings = (f: RunFacts): RunFactsBindings => [f.provider, f.model, f.mode, f.workdir, f.conversationId];

export type UsageBindings = [string, string | null, string, number, string, string, number, number, number, number, number, number | null, number];
export const usageBindings = (u: UsageFacts): UsageBindings =>
  [u.conversationId, u.messageId, u.runId, u.round, u.provider, u.model, u.usage.inputTokens, u.usage.outputTokens, u.usage.cacheReadTokens ?? 0, u.usage.cacheWriteTokens ?? 0, u.usage.reasoningTokens ?? 0, u.usage.costUsd ?? null, u.now];

/**
 * The message upsert, with each parameter written by `param` (`@name` for better-sqlite3's
 * named parameters, `?` for knex.raw: see {@link positionalMessageUpsert}). A new row goes to
 * the end of the conversation, in its active segment; an existing one (a streaming reply saved
 * again) keeps its place. The WHERE refuses to let a message id from another conversation be
 * overwritten.
 */
export function messageUpsertSql(param: (name: keyof MessageParams) => string): string {
  return `INSERT INTO messages (id, conversation_id, segment_id, ordinal, role, content, status, provider, model,
         stop_reason, error_message, edited_files, usage, meta, created_at, updated_at, run_id, round)
       VALUES (${param('id')}, ${param('conversationId')},
         (SELECT active_segment_id FROM conversations WHERE id = ${param('conversationId')}),
         (SELECT COALESCE(MAX(ordinal), 0) + 1 FROM messages WHERE conversation_id = ${param('conversationId')}),
         ${(['role', 'content', 'status', 'provider', 'model', 'stopReason', 'errorMessage', 'editedFiles', 'usage', 'meta', 'createdAt', 'now', 'runId', 'round'] as const).map(param).join(', ')})
       ON CONFLICT (id) DO UPDATE SET
         content = excluded.content, status = excluded.status, provider = excluded.provider, model = excluded.model,
         stop_reason = excluded.stop_reason, error_message = excluded.error_message, edited_files = excluded.edited_files,
         usage = excluded.usage, meta = excluded.meta, updated_at = excluded.updated_at,
         run_id = COALESCE(excluded.run_id, messages.run_id), round = COALESCE(excluded.round, messages.round)
       WHERE messages.conversation_id = excluded.conversation_id`;
}

/** The upsert with `?` parameters, and the bindings for it in their order. */
export function positionalMessageUpsert(): { sql: string; bindings(p: MessageParams): unknown[] } {
  const order: Array<keyof MessageParams> = [];
  const sql = messageUpsertSql((name) => {
    order.push(name);
    return '?';
  });
  return { sql, bindings: (p) => order.map((name) => p[name]) };
}
