/**
 * The kernel-facing side of the store: what the persistence hooks call on every run, round and
 * coalesced progress save. Prepared better-sqlite3 statements, compiled once; each hook's writes
 * go in one transaction (one WAL append, and nothing else can interleave on the connection).
 *
 * Every transaction that writes is `BEGIN IMMEDIATE` (`write(...)` below): it takes the write
 * lock before its first read, waiting up to the busy timeout for another process to finish. A
 * deferred transaction reads first and then asks for the lock; if another process committed in
 * between, SQLite cannot wait (its snapshot is stale) and fails at once with "database is
 * locked", which is what several CLIs and `serve` on one home used to hit.
 */
import type BetterSqlite3 from 'better-sqlite3';
import { UsageError } from '../../core/errors.js';
import type { Checkpoint, CheckpointRecord, HistorySnapshot, JsonObject, Message, RoundRecord, SessionInfo, Usage } from '../../plugin-api.js';
import { messageParams, parseMeta, rowToMessage, statusOf, usageOfMessageRow, type ConversationRow, type MessageParams, type MessageRow, type SegmentHead, type SegmentRow } from '../../lib/history-shared/rows.js';
import { positionalMessageUpsert, runFactsBindings, segmentBindings, SQL, usageBindings, type RunFactsBindings, type SegmentBindings, type UsageBindings } from '../../lib/history-shared/store-sql.js';
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

type Statement<P extends unknown[] | {} = unknown[], R = unknown> = BetterSqlite3.Statement<P, R>;

/** A better-sqlite3 transaction that takes the write lock up front (see the header). */
function write<F extends (...args: never[]) => unknown>(db: BetterSqlite3.Database, fn: F): F {
  return db.transaction(fn).immediate as unknown as F;
}

export class HistoryStore {
  private closed = false;
  private readonly conversation: Statement<[string], { last_seq: number; seq_reserved: number; active_segment_id: string; provider: string | null; model: string | null }>;
  private readonly reserveSeq: Statement<{ id: string; upTo: number }>;
  private readonly releaseSeq: Statement<{ id: string; lastSeq: number; now: number }>;
  private readonly load: (info: SessionInfo) => HistorySnapshot | undefined;
  private readonly insertConversation: Statement<{ id: string; segmentId: string; lastSeq: number; now: number }>;
  private readonly insertSegment: Statement<SegmentBindings>;
  private readonly upsertStatement: Statement<unknown[]>;
  private readonly upsertBindings: (p: MessageParams) => unknown[];
  /**
   * How far each conversation's seq numbers are reserved, as this store last wrote it (a load's
   * reservation or an extension), while its run goes on: a round commit then checks the
   * reservation here instead of with an UPDATE. Dropped at turn end; absent means "ask SQLite".
   */
  private readonly reservedUpTo = new Map<string, number>();
  private readonly touch: Statement<{ id: string; lastSeq: number; now: number }>;
  private readonly extendSeq: Statement<{ id: string; lastSeq: number }>;
  private readonly runFacts: Statement<RunFactsBindings>;
  private readonly insertUsage: Statement<UsageBindings>;
  private readonly segmentMessages: Statement<[string], MessageRow>;
  private readonly segmentSummary: Statement<[string], SegmentHead>;
  private readonly segmentCount: Statement<[string], { n: number }>;
  private readonly metaPatch: Statement<[string, string], { meta: string }>;
  private readonly autoTitle: Statement<[string, string]>;
  private readonly segmentLast: Statement<[string], { id: string }>;
  private readonly messageAt: Statement<[string, string], { ordinal: number; segment_id: string }>;
  private readonly deleteFrom: Statement<[string, number]>;
  private readonly carriedUsage: Statement<[string, number], MessageRow>;
  private readonly allMessages: Statement<[string], MessageRow>;
  private readonly pageBefore: Statement<[string, number, number], MessageRow>;
  private readonly countMessages: Statement<[string], { n: number | null }>;
  private readonly conversationRow: Statement<[string], ConversationRow>;
  private readonly segmentRows: Statement<[string], SegmentRow>;

  readonly saveUserMessage: (m: Message, info: SessionInfo) => void;
  readonly saveProgress: (m: Message, info: SessionInfo) => void;
  readonly saveRound: (r: RoundRecord) => void;
  /** Remember which provider, model, mode and workdir the conversation last ran with. */
  readonly saveRunFacts: (facts: RunFacts) => void;
  readonly truncate: (conversationId: string, fromMessageId: string) => void;
  readonly startSegment: (conversationId: string, summary: string, carryFromMessageId?: string, checkpoint?: Checkpoint) => string | undefined;
  /** Store a compaction checkpoint: a new active segment that carries the kept messages, in one transaction. */
  readonly saveCheckpoint: (record: CheckpointRecord) => void;

  constructor(private readonly db: BetterSqlite3.Database) {
    this.conversation = db.prepare(SQL.conversationSeq);
    this.reserveSeq = db.prepare('UPDATE conversations SET seq_reserved = @upTo WHERE id = @id');
    this.releaseSeq = db.prepare(
      'UPDATE conversations SET last_seq = MAX(last_seq, @lastSeq), seq_reserved = MAX(last_seq, @lastSeq), updated_at = @now WHERE id = @id',
    );
    this.insertConversation = db.prepare(
      `INSERT INTO conversations (id, created_at, updated_at, last_seq, seq_reserved, active_segment_id)
       VALUES (@id, @now, @now, @lastSeq, @lastSeq + ${SEQ_RESERVE}, @segmentId)`,
    );
    this.insertSegment = db.prepare(SQL.insertSegment);
    // Positional: binding 14 values by name costs more than the rest of the statement's setup.
    const upsert = positionalMessageUpsert();
    this.upsertStatement = db.prepare(upsert.sql);
    this.upsertBindings = upsert.bindings;
    // last_seq only rises: a late, coalesced save must not lower what a later one stored.
    this.touch = db.prepare('UPDATE conversations SET last_seq = MAX(last_seq, @lastSeq), updated_at = @now WHERE id = @id');
    // A round commit writes no conversation row: the run's facts were stored with its user
    // message, and its last seq is covered by the reservation (extended here only when a long
    // run nears its end, an UPDATE that matches no row otherwise, so it writes no page).
    this.extendSeq = db.prepare(
      `UPDATE conversations SET seq_reserved = @lastSeq + ${SEQ_RESERVE} WHERE id = @id AND seq_reserved < @lastSeq + ${SEQ_EXTEND_WITHIN}`,
    );
    this.runFacts = db.prepare(SQL.runFacts);
    this.insertUsage = db.prepare(SQL.insertUsage);
    this.segmentMessages = db.prepare(SQL.segmentMessages);
    this.segmentSummary = db.prepare(SQL.segmentHead);
    this.autoTitle = db.prepare(SQL.autoTitle);
    this.metaPatch = db.prepare('UPDATE conversations SET meta = json_patch(meta, ?) WHERE id = ? RETURNING meta');
    this.segmentCount = db.prepare('SELECT COUNT(*) AS n FROM messages WHERE segment_id = ?');
    this.segmentLast = db.prepare('SELECT id FROM messages WHERE segment_id = ? ORDER BY ordinal DESC LIMIT 1');
    this.messageAt = db.prepare(SQL.messageAt);
    this.deleteFrom = db.prepare(SQL.deleteFrom);
    this.carriedUsage = db.prepare(
      'SELECT id, conversation_id, provider, model, usage, updated_at, run_id, round FROM messages WHERE conversation_id = ? AND ordinal >= ? AND run_id IS NOT NULL AND usage IS NOT NULL ORDER BY ordinal',
    );
    this.allMessages = db.prepare(SQL.allMessages);
    // Newest first through the (conversation_id, ordinal) index, then put back in order.
    this.pageBefore = db.prepare('SELECT * FROM messages WHERE conversation_id = ? AND ordinal < ? ORDER BY ordinal DESC LIMIT ?');
    this.countMessages = db.prepare(SQL.messageCount);
    this.conversationRow = db.prepare(SQL.conversationRow);
    this.segmentRows = db.prepare('SELECT id, parent_segment_id, summary, checkpoint, created_at FROM segments WHERE conversation_id = ? ORDER BY rowid');

    this.saveUserMessage = this.guard(
      write(db, (m: Message, info: SessionInfo) => {
        const now = Date.now();
        this.ensure(info.conversationId, info.lastSeq, now);
        this.upsertMessage(messageParams(info.conversationId, m, 'complete', now));
        this.touch.run({ id: info.conversationId, lastSeq: info.lastSeq, now });
      }),
    );
    this.saveProgress = this.guard(
      write(db, (m: Message, info: SessionInfo) => {
        const now = Date.now();
        this.ensure(info.conversationId, info.lastSeq, now);
        this.upsertMessage(messageParams(info.conversationId, m, 'partial', now));
        this.touch.run({ id: info.conversationId, lastSeq: info.lastSeq, now });
      }),
    );
    this.saveRunFacts = this.guard(
      write(db, (facts: RunFacts) => {
        this.ensure(facts.conversationId, 0, Date.now());
        this.runFacts.run(...runFactsBindings(facts));
      }),
    );
    this.saveRound = this.guard(write(db, (r: RoundRecord) => this.writeRound(r)));
    this.load = write(db, (info: SessionInfo) => this.loadAndReserve(info));
    this.truncate = this.guard(write(db, (conversationId: string, fromMessageId: string) => this.truncateAt(conversationId, fromMessageId)));
    this.startSegment = this.guard(
      write(db, (conversationId: string, summary: string, carryFromMessageId?: string, checkpoint?: Checkpoint) => this.newSegment(conversationId, summary, carryFromMessageId, checkpoint)),
    );
    this.saveCheckpoint = this.guard(
      write(db, (r: CheckpointRecord) => {
        const now = Date.now();
        this.ensure(r.conversationId, r.lastSeq, now);
        const c = r.checkpoint;
        // Nothing kept: the new segment starts empty (every message stays in the old one).
        const segment = this.newSegment(r.conversationId, c.summary, c.firstKeptMessageId ?? null, c);
        if (!segment) throw new UsageError(`unknown conversation "${r.conversationId}"`);
        const usage = checkpointUsage(r, segment, now);
        if (usage) this.recordUsage(usage);
        this.touch.run({ id: r.conversationId, lastSeq: r.lastSeq, now });
      }),
    );
  }

  /**
   * The active segment's messages, its checkpoint and the sequence to continue from (above any
   * number a run that died could have used); reserves the next block of numbers for this run.
   * Undefined for an unknown conversation.
   */
  loadHistory(info: SessionInfo): HistorySnapshot | undefined {
    this.assertOpen();
    return this.load(info);
  }

  private loadAndReserve(info: SessionInfo): HistorySnapshot | undefined {
    const conv = this.conversation.get(info.conversationId);
    if (!conv) return undefined;
    const { from, upTo } = seqReservation(conv, info);
    this.reserveSeq.run({ id: info.conversationId, upTo });
    if (info.run) this.remember(info.conversationId, upTo);
    const segmentId = conv.active_segment_id;
    const segment = this.segmentSummary.get(segmentId);
    const stamp = segmentStamp(segmentId, segment);
    const held = info.held;
    // Each probe only when the one before matched (an index read each).
    const unchanged = heldMatches(held, stamp) && this.segmentCount.get(segmentId)?.n === held.count && this.segmentLast.get(segmentId)?.id === held.lastMessageId;
    const messages = unchanged ? [] : this.segmentMessages.all(segmentId).map(rowToMessage);
    return historySnapshot(info, from, stamp, messages, unchanged, segment, conv);
  }

  /** Record the sequence number the kernel reached (turn end) and give back the unused reservation. */
  saveLastSeq(info: SessionInfo): void {
    this.assertOpen();
    this.releaseSeq.run({ id: info.conversationId, lastSeq: info.lastSeq, now: Date.now() });
    this.reservedUpTo.delete(info.conversationId);
  }


  /** Store a generated title unless the user renamed the conversation (one statement: a rename landing meanwhile wins). */
  setAutoTitle(conversationId: string, title: string): boolean {
    this.assertOpen();
    return this.autoTitle.run(title, conversationId).changes > 0;
  }

  /** Merge a JSON patch into a conversation's meta in one statement (two patches cannot lose each other's keys). */
  patchMeta(conversationId: string, patch: JsonObject): JsonObject | undefined {
    this.assertOpen();
    const meta = this.metaPatch.get(JSON.stringify(patch), conversationId)?.meta;
    return meta === undefined ? undefined : parseMeta(meta);
  }

  /** A conversation's row, segments and messages (all, or one page), read in one go; undefined when unknown. */
  conversationDetail(conversationId: string, page: PageRequest) {
    this.assertOpen();
    const conv = this.conversationRow.get(conversationId);
    if (!conv) return undefined;
    return { conv, segments: this.segmentRows.all(conversationId), ...this.messagesPage(conversationId, page) };
  }

  /** A conversation's messages, all or one page (the newest `limit` before `before`), oldest first. */
  messagesPage(conversationId: string, page: PageRequest): { rows: MessageRow[]; hasMore: boolean; count: number } {
    this.assertOpen();
    const count = this.countMessages.get(conversationId)?.n ?? 0;
    const window = pageWindow(page);
    if (!window) return { rows: this.allMessages.all(conversationId), hasMore: false, count };
    return { ...pageOf(this.pageBefore.all(conversationId, window.before, window.fetch), window.limit), count };
  }

  close(): void {
    this.closed = true;
  }

  /** The conversation row (with the run's seq reservation) and its first segment, on the conversation's first write. */
  private ensure(conversationId: string, lastSeq: number, now: number): void {
    if (this.conversation.get(conversationId)) return;
    const segmentId = newSegmentId();
    this.insertConversation.run({ id: conversationId, segmentId, lastSeq, now });
    this.insertSegment.run(...segmentBindings({ id: segmentId, conversationId, parentId: null, summary: null, checkpoint: null, now }));
  }

  private writeRound(r: RoundRecord): void {
    const now = Date.now();
    const id = r.conversationId;
    // The conversation row exists (its user message made it): no lookup first. Gone meanwhile
    // (deleted by another process), the insert finds no segment and the row is made again.
    // The round's usage goes on its assistant message (no usage row: lib/history-shared/rows.ts usageOfMessageRow).
    const carried = r.usage !== undefined && r.usage === r.assistant.usage;
    const assistant = messageParams(id, r.assistant, statusOf(r.assistant), now, carried ? { runId: r.runId, round: r.round } : undefined);
    try {
      this.upsertMessage(assistant);
    } catch (err) {
      if ((err as { code?: string }).code !== 'SQLITE_CONSTRAINT_NOTNULL') throw err;
      this.ensure(id, r.lastSeq, now);
      this.upsertMessage(assistant);
    }
    if (r.toolResults) this.upsertMessage(messageParams(id, r.toolResults, 'complete', now));
    const usage = carried ? undefined : roundUsage(r, now);
    if (usage) this.recordUsage(usage);
    this.extendReservation(id, r.lastSeq);
  }

  private upsertMessage(p: MessageParams): void {
    this.upsertStatement.run(this.upsertBindings(p));
  }

  /** Extend the run's seq reservation once it comes within SEQ_EXTEND_WITHIN of its end. */
  private extendReservation(id: string, lastSeq: number): void {
    const reserved = this.reservedUpTo.get(id);
    if (reserved !== undefined && lastSeq + SEQ_EXTEND_WITHIN <= reserved) return;
    const extended = this.extendSeq.run({ id, lastSeq }).changes > 0;
    if (extended) this.remember(id, lastSeq + SEQ_RESERVE);
    else this.reservedUpTo.delete(id);
  }

  /** Only a cache: a run that never reached turn end (a crash, a failed load) leaves its entry, so it is capped. */
  private remember(id: string, upTo: number): void {
    if (this.reservedUpTo.size >= 1024 && !this.reservedUpTo.has(id)) this.reservedUpTo.clear();
    this.reservedUpTo.set(id, upTo);
  }

  private recordUsage(u: UsageFacts): void {
    this.insertUsage.run(...usageBindings(u));
  }

  private truncateAt(conversationId: string, fromMessageId: string): void {
    let at = this.messageAt.get(conversationId, fromMessageId);
    const repaired = at ? undefined : repairedMessageId(fromMessageId);
    if (repaired) {
      const base = this.messageAt.get(conversationId, repaired);
      if (base) at = { ordinal: base.ordinal + 1, segment_id: base.segment_id };
    }
    if (!at) return;
    // Tokens were spent even if the reply goes: the usage its message carried becomes a usage row
    // (with no message, as the usage table's ON DELETE SET NULL leaves the others).
    for (const row of this.carriedUsage.all(conversationId, at.ordinal)) {
      const { runId, round, provider, model, createdAt, inputTokens, outputTokens, cacheReadTokens, cacheWriteTokens, reasoningTokens, costUsd } = usageOfMessageRow(row)!;
      const usage: Usage = { inputTokens, outputTokens, cacheReadTokens, cacheWriteTokens, reasoningTokens, ...(costUsd !== undefined ? { costUsd } : {}) };
      this.recordUsage({ conversationId, messageId: null, runId, round, provider, model, usage, now: createdAt });
    }
    // The kernel truncates within the history it loaded, which is the active segment, so no
    // segment ever needs to be reactivated here.
    this.deleteFrom.run(conversationId, at.ordinal);
    this.db.prepare(SQL.touchUpdatedAt).run(Date.now(), conversationId);
  }

  /** `carryFromMessageId` null: carry nothing (the new segment starts empty). */
  private newSegment(conversationId: string, summary: string, carryFromMessageId?: string | null, checkpoint?: Checkpoint): string | undefined {
    const conv = this.conversation.get(conversationId);
    if (!conv) return undefined;
    let carryFrom: number | undefined;
    if (carryFromMessageId !== undefined && carryFromMessageId !== null) {
      const at = this.messageAt.get(conversationId, carryFromMessageId);
      if (!at) throw new UsageError(`history.startSegment: options.carryFromMessageId: message "${carryFromMessageId}" is not in conversation "${conversationId}"`);
      carryFrom = at.ordinal;
    }
    const now = Date.now();
    const id = newSegmentId();
    this.insertSegment.run(...segmentBindings({ id, conversationId, parentId: conv.active_segment_id, summary, checkpoint: checkpoint ? JSON.stringify(checkpoint) : null, now }));
    if (carryFrom !== undefined) this.db.prepare(SQL.carryMessages).run(id, conversationId, carryFrom);
    this.db.prepare(SQL.activateSegment).run(id, now, conversationId);
    return id;
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('the history database is closed');
  }

  private guard<A extends unknown[], R>(fn: (...args: A) => R): (...args: A) => R {
    return (...args: A) => {
      this.assertOpen();
      return fn(...args);
    };
  }
}
