/**
 * The kernel-facing side of the store on PostgreSQL: what the persistence hooks call on every
 * run, round and coalesced progress save, and the reads the service shares with it. The rows,
 * the rules and the SQL the dialects share are lib/history-shared's, as in history-sqlite's store;
 * here they run in PostgreSQL's dialect, each hook one transaction.
 *
 * Several processes write one database. Every write transaction that reads before it writes
 * first locks the conversation row (`SELECT … FOR UPDATE`): the next ordinal (MAX + 1), the seq
 * reservation and the active segment are then decided by one process at a time per
 * conversation, while different conversations never wait for each other. A conversation's
 * first write creates its row with `INSERT … ON CONFLICT DO NOTHING`, so two processes creating
 * it at once both go on with the one row.
 */
import type { Knex } from 'knex';
import { UsageError } from '../../core/errors.js';
import type { Checkpoint, CheckpointRecord, HistorySnapshot, JsonObject, JsonValue, Message, RoundRecord, SessionInfo } from '../../plugin-api.js';
import { messageParams, rowToMessage, statusOf, type ConversationRow, type MessageRow, type SegmentHead, type SegmentRow } from '../../lib/history-shared/rows.js';
import { positionalMessageUpsert, runFactsBindings, segmentBindings, SQL, usageBindings } from '../../lib/history-shared/store-sql.js';
import {
  checkpointUsage,
  heldMatches,
  historySnapshot,
  newSegmentId,
  pageOf,
  pageWindow,
  repairedMessageId,
  roundUsage,
  segmentStamp,
  SEQ_EXTEND_WITHIN,
  SEQ_RESERVE,
  seqReservation,
  type PageRequest,
  type RunFacts,
  type UsageFacts,
} from '../../lib/history-shared/store-rules.js';

type Db = Knex | Knex.Transaction;

async function all<R>(db: Db, sql: string, bindings: readonly unknown[] = []): Promise<R[]> {
  return ((await db.raw(sql, bindings as Knex.RawBinding[])) as { rows: R[] }).rows;
}
async function one<R>(db: Db, sql: string, bindings: readonly unknown[] = []): Promise<R | undefined> {
  return (await all<R>(db, sql, bindings))[0];
}
async function run(db: Db, sql: string, bindings: readonly unknown[] = []): Promise<number> {
  return ((await db.raw(sql, bindings as Knex.RawBinding[])) as { rowCount: number }).rowCount;
}

interface ConversationLock {
  last_seq: number;
  seq_reserved: number;
  active_segment_id: string;
  provider: string | null;
  model: string | null;
}

const UPSERT = positionalMessageUpsert();

/** RFC 7396 JSON merge patch (what SQLite's json_patch does): null removes a key, objects merge, anything else replaces. */
export function mergePatch(target: JsonValue, patch: JsonValue): JsonValue {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch;
  const out: JsonObject = target !== null && typeof target === 'object' && !Array.isArray(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k] ?? null, v);
  }
  return out;
}

export class PgHistoryStore {
  private closed = false;
  /**
   * The reservation this process made last, per conversation: a run gives its unused numbers
   * back only when nobody reserved after it (another process running the same conversation).
   */
  private readonly reserved = new Map<string, number>();

  constructor(private readonly knex: Knex) {}

  async loadHistory(info: SessionInfo): Promise<HistorySnapshot | undefined> {
    this.assertOpen();
    return this.knex.transaction(async (trx) => {
      const conv = await this.lock(trx, info.conversationId);
      if (!conv) return undefined;
      const { from, upTo } = seqReservation(conv, info);
      await run(trx, 'UPDATE conversations SET seq_reserved = ? WHERE id = ?', [upTo, info.conversationId]);
      this.reserved.set(info.conversationId, upTo);
      const segmentId = conv.active_segment_id;
      const segment = await one<SegmentHead>(trx, SQL.segmentHead, [segmentId]);
      const stamp = segmentStamp(segmentId, segment);
      const held = info.held;
      let unchanged = false;
      if (heldMatches(held, stamp)) {
        const tail = await one<{ n: number; last: string | null }>(
          trx,
          'SELECT COUNT(*) AS n, (SELECT id FROM messages WHERE segment_id = ? ORDER BY ordinal DESC LIMIT 1) AS last FROM messages WHERE segment_id = ?',
          [segmentId, segmentId],
        );
        unchanged = tail?.n === held.count && tail.last === held.lastMessageId;
      }
      const messages = unchanged ? [] : (await all<MessageRow>(trx, SQL.segmentMessages, [segmentId])).map(rowToMessage);
      return historySnapshot(info, from, stamp, messages, unchanged, segment, conv);
    });
  }

  saveUserMessage(m: Message, info: SessionInfo): Promise<void> {
    return this.saveMessage(m, info, 'complete');
  }

  saveProgress(m: Message, info: SessionInfo): Promise<void> {
    return this.saveMessage(m, info, 'partial');
  }

  async saveRunFacts(f: RunFacts): Promise<void> {
    await this.write(async (trx) => {
      await this.ensure(trx, f.conversationId, 0, Date.now());
      await run(trx, SQL.runFacts, runFactsBindings(f));
    });
  }

  async saveRound(r: RoundRecord): Promise<void> {
    await this.write(async (trx) => {
      const now = Date.now();
      const id = r.conversationId;
      await this.ensure(trx, id, r.lastSeq, now);
      await run(trx, UPSERT.sql, UPSERT.bindings(messageParams(id, r.assistant, statusOf(r.assistant), now)));
      if (r.toolResults) await run(trx, UPSERT.sql, UPSERT.bindings(messageParams(id, r.toolResults, 'complete', now)));
      const usage = roundUsage(r, now);
      if (usage) await this.recordUsage(trx, usage);
      const extended = await one<{ seq_reserved: number }>(
        trx,
        'UPDATE conversations SET seq_reserved = ?::bigint + ? WHERE id = ? AND seq_reserved < ?::bigint + ? RETURNING seq_reserved',
        [r.lastSeq, SEQ_RESERVE, id, r.lastSeq, SEQ_EXTEND_WITHIN],
      );
      if (extended) this.reserved.set(id, extended.seq_reserved);
    });
  }

  async truncate(conversationId: string, fromMessageId: string): Promise<void> {
    await this.write(async (trx) => {
      if (!(await this.lock(trx, conversationId))) return;
      const messageAt = (id: string) => one<{ ordinal: number }>(trx, SQL.messageAt, [conversationId, id]);
      let at = await messageAt(fromMessageId);
      const repaired = at ? undefined : repairedMessageId(fromMessageId);
      if (repaired) {
        const base = await messageAt(repaired);
        if (base) at = { ordinal: base.ordinal + 1 };
      }
      if (!at) return;
      await run(trx, SQL.deleteFrom, [conversationId, at.ordinal]);
      await run(trx, SQL.touchUpdatedAt, [Date.now(), conversationId]);
    });
  }

  startSegment(conversationId: string, summary: string, carryFromMessageId?: string, checkpoint?: Checkpoint): Promise<string | undefined> {
    return this.write((trx) => this.newSegment(trx, conversationId, summary, carryFromMessageId, checkpoint));
  }

  async saveCheckpoint(r: CheckpointRecord): Promise<void> {
    await this.write(async (trx) => {
      const now = Date.now();
      await this.ensure(trx, r.conversationId, r.lastSeq, now);
      const c = r.checkpoint;
      const segment = await this.newSegment(trx, r.conversationId, c.summary, c.firstKeptMessageId ?? null, c);
      if (!segment) throw new UsageError(`unknown conversation "${r.conversationId}"`);
      const usage = checkpointUsage(r, segment, now);
      if (usage) await this.recordUsage(trx, usage);
      await this.touch(trx, r.conversationId, r.lastSeq, now);
    });
  }

  /** Turn end: record the seq reached and give back the unused reservation, unless another run reserved after this one. */
  async saveLastSeq(info: SessionInfo): Promise<void> {
    this.assertOpen();
    const ours = this.reserved.get(info.conversationId);
    this.reserved.delete(info.conversationId);
    await run(
      this.knex,
      `UPDATE conversations SET last_seq = GREATEST(last_seq, ?::bigint),
         seq_reserved = CASE WHEN seq_reserved = ?::bigint OR ?::bigint IS NULL THEN GREATEST(last_seq, ?::bigint) ELSE GREATEST(seq_reserved, ?::bigint) END,
         updated_at = ? WHERE id = ?`,
      [info.lastSeq, ours ?? null, ours ?? null, info.lastSeq, info.lastSeq, Date.now(), info.conversationId],
    );
  }

  async setAutoTitle(conversationId: string, title: string): Promise<boolean> {
    this.assertOpen();
    return (await run(this.knex, SQL.autoTitle, [title, conversationId])) > 0;
  }

  /** Merge a JSON patch into the meta under the row lock (two patches cannot lose each other's keys). */
  patchMeta(conversationId: string, patch: JsonObject): Promise<JsonObject | undefined> {
    return this.write(async (trx) => {
      const row = await one<{ meta: string }>(trx, 'SELECT meta FROM conversations WHERE id = ? FOR UPDATE', [conversationId]);
      if (!row) return undefined;
      const meta = mergePatch(JSON.parse(row.meta || '{}') as JsonValue, patch) as JsonObject;
      await run(trx, 'UPDATE conversations SET meta = ? WHERE id = ?', [JSON.stringify(meta), conversationId]);
      return meta;
    });
  }

  /** A conversation's row, segments and messages (all, or one page), read in one snapshot; undefined when unknown. */
  conversationDetail(conversationId: string, page: PageRequest) {
    this.assertOpen();
    return this.knex.transaction(
      async (trx) => {
        const conv = await one<ConversationRow>(trx, SQL.conversationRow, [conversationId]);
        if (!conv) return undefined;
        // Oldest first: along the parent chain (two segments may share a millisecond).
        const segments = await all<SegmentRow>(
          trx,
          `WITH RECURSIVE chain AS (
             SELECT id, parent_segment_id, summary, checkpoint, created_at, 0 AS depth FROM segments WHERE conversation_id = ? AND parent_segment_id IS NULL
             UNION ALL
             SELECT s.id, s.parent_segment_id, s.summary, s.checkpoint, s.created_at, c.depth + 1 FROM segments s JOIN chain c ON s.parent_segment_id = c.id)
           SELECT id, parent_segment_id, summary, checkpoint, created_at FROM chain ORDER BY depth, created_at, id`,
          [conversationId],
        );
        const count = (await one<{ n: number | null }>(trx, SQL.messageCount, [conversationId]))?.n ?? 0;
        const window = pageWindow(page);
        if (!window) return { conv, segments, rows: await all<MessageRow>(trx, SQL.allMessages, [conversationId]), hasMore: false, count };
        // Newest first through the (conversation_id, ordinal) index; `before` may exceed an integer.
        const newestFirst = await all<MessageRow>(trx, 'SELECT * FROM messages WHERE conversation_id = ? AND ordinal < ?::bigint ORDER BY ordinal DESC LIMIT ?', [conversationId, window.before, window.fetch]);
        return { conv, segments, ...pageOf(newestFirst, window.limit), count };
      },
      { isolationLevel: 'repeatable read', readOnly: true },
    );
  }

  close(): void {
    this.closed = true;
  }

  private async saveMessage(m: Message, info: SessionInfo, status: 'partial' | 'complete'): Promise<void> {
    await this.write(async (trx) => {
      const now = Date.now();
      await this.ensure(trx, info.conversationId, info.lastSeq, now);
      await run(trx, UPSERT.sql, UPSERT.bindings(messageParams(info.conversationId, m, status, now)));
      await this.touch(trx, info.conversationId, info.lastSeq, now);
    });
  }

  private touch(trx: Db, id: string, lastSeq: number, now: number) {
    return run(trx, 'UPDATE conversations SET last_seq = GREATEST(last_seq, ?::bigint), updated_at = ? WHERE id = ?', [lastSeq, now, id]);
  }

  /** The conversation row, locked for this transaction. */
  private lock(trx: Db, conversationId: string) {
    return one<ConversationLock>(trx, `${SQL.conversationSeq} FOR UPDATE`, [conversationId]);
  }

  /** Create the conversation (with its first segment) unless it exists, and lock its row either way. */
  private async ensure(trx: Db, conversationId: string, lastSeq: number, now: number): Promise<ConversationLock> {
    const found = await this.lock(trx, conversationId);
    if (found) return found;
    const segmentId = newSegmentId();
    const created = await one<{ id: string }>(
      trx,
      `INSERT INTO conversations (id, created_at, updated_at, last_seq, seq_reserved, active_segment_id)
       VALUES (?, ?, ?, ?::bigint, ?::bigint + ${SEQ_RESERVE}, ?) ON CONFLICT (id) DO NOTHING RETURNING id`,
      [conversationId, now, now, lastSeq, lastSeq, segmentId],
    );
    if (created) {
      await run(trx, SQL.insertSegment, segmentBindings({ id: segmentId, conversationId, parentId: null, summary: null, checkpoint: null, now }));
    }
    // Another process created it meanwhile: ON CONFLICT waited for its commit, so the row is there to lock.
    return (await this.lock(trx, conversationId))!;
  }

  private async newSegment(trx: Db, conversationId: string, summary: string, carryFromMessageId?: string | null, checkpoint?: Checkpoint): Promise<string | undefined> {
    const conv = await this.lock(trx, conversationId);
    if (!conv) return undefined;
    let carryFrom: number | undefined;
    if (carryFromMessageId !== undefined && carryFromMessageId !== null) {
      const at = await one<{ ordinal: number }>(trx, SQL.messageAt, [conversationId, carryFromMessageId]);
      if (!at) throw new UsageError(`history.startSegment: options.carryFromMessageId: message "${carryFromMessageId}" is not in conversation "${conversationId}"`);
      carryFrom = at.ordinal;
    }
    const now = Date.now();
    const id = newSegmentId();
    await run(trx, SQL.insertSegment, segmentBindings({ id, conversationId, parentId: conv.active_segment_id, summary, checkpoint: checkpoint ? JSON.stringify(checkpoint) : null, now }));
    if (carryFrom !== undefined) await run(trx, SQL.carryMessages, [id, conversationId, carryFrom]);
    await run(trx, SQL.activateSegment, [id, now, conversationId]);
    return id;
  }

  private recordUsage(trx: Db, u: UsageFacts) {
    return run(trx, SQL.insertUsage, usageBindings(u));
  }

  private write<T>(fn: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
    this.assertOpen();
    return this.knex.transaction(fn);
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('the history database is closed');
  }
}
