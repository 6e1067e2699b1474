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
import { randomBytes } from 'node:crypto';
import type BetterSqlite3 from 'better-sqlite3';
import { UsageError } from '../../core/errors.js';
import type { Checkpoint, CheckpointRecord, HistorySnapshot, Message, RoundRecord, SessionInfo, Usage } from '../../plugin-api.js';
import { messageParams, rowToMessage, statusOf, type ConversationRow, type MessageParams, type MessageRow, type SegmentRow } from './rows.js';

type Statement<P extends unknown[] | {} = unknown[], R = unknown> = BetterSqlite3.Statement<P, R>;

const REPAIR_SUFFIX = '-repair';

/**
 * Sequence numbers reserved for a run when it loads the history. Progress is saved at least
 * every persistIntervalMs while a reply streams, so a run that dies emits far fewer numbers than
 * this past its last save; a clean end gives the rest back.
 */
export const SEQ_RESERVE = 100_000;
const SEQ_RESERVE_NO_RUN = 16;

/** A better-sqlite3 transaction that takes the write lock up front (see the header). */
function write<F extends (...args: never[]) => unknown>(db: BetterSqlite3.Database, fn: F): F {
  return db.transaction(fn).immediate as unknown as F;
}

export function newSegmentId(): string {
  return `s_${Date.now().toString(36)}${randomBytes(5).toString('hex')}`;
}

/** What the request context tells about a run (SessionInfo does not carry it). */
export interface RunFacts {
  conversationId: string;
  provider: string;
  model: string;
  mode: string;
  workdir: string;
}

export class HistoryStore {
  private closed = false;
  private readonly conversation: Statement<[string], { last_seq: number; seq_reserved: number; active_segment_id: string; provider: string | null; model: string | null }>;
  private readonly reserveSeq: Statement<{ id: string; upTo: number }>;
  private readonly releaseSeq: Statement<{ id: string; lastSeq: number; now: number }>;
  private readonly load: (info: SessionInfo) => HistorySnapshot | undefined;
  private readonly insertConversation: Statement<{ id: string; segmentId: string; lastSeq: number; now: number }>;
  private readonly insertSegment: Statement<{ id: string; conversationId: string; parentId: string | null; summary: string | null; checkpoint: string | null; now: number }>;
  private readonly upsertMessage: Statement<MessageParams>;
  private readonly touch: Statement<{ id: string; lastSeq: number; now: number }>;
  private readonly extendSeq: Statement<{ id: string; lastSeq: number }>;
  private readonly runFacts: Statement<RunFacts>;
  private readonly insertUsage: Statement<Record<string, string | number | null>>;
  private readonly segmentMessages: Statement<[string], MessageRow>;
  private readonly segmentSummary: Statement<[string], { summary: string | null; checkpoint: string | null; parent_segment_id: string | null }>;
  private readonly segmentCount: Statement<[string], { n: number }>;
  private readonly metaPatch: Statement<[string, string], { meta: string }>;
  private readonly autoTitle: Statement<[string, string]>;
  private readonly segmentLast: Statement<[string], { id: string }>;
  private readonly messageAt: Statement<[string, string], { ordinal: number; segment_id: string }>;
  private readonly deleteFrom: Statement<[string, number]>;
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
    this.conversation = db.prepare('SELECT last_seq, seq_reserved, active_segment_id, provider, model FROM conversations WHERE id = ?');
    this.reserveSeq = db.prepare('UPDATE conversations SET seq_reserved = @upTo WHERE id = @id');
    this.releaseSeq = db.prepare(
      'UPDATE conversations SET last_seq = MAX(last_seq, @lastSeq), seq_reserved = MAX(last_seq, @lastSeq), updated_at = @now WHERE id = @id',
    );
    this.insertConversation = db.prepare(
      `INSERT INTO conversations (id, created_at, updated_at, last_seq, seq_reserved, active_segment_id)
       VALUES (@id, @now, @now, @lastSeq, @lastSeq + ${SEQ_RESERVE}, @segmentId)`,
    );
    this.insertSegment = db.prepare(
      `INSERT INTO segments (id, conversation_id, parent_segment_id, summary, checkpoint, created_at)
       VALUES (@id, @conversationId, @parentId, @summary, @checkpoint, @now)`,
    );
    // A new row goes to the end of the conversation, in its active segment; an existing one
    // (a streaming reply saved again) keeps its place. The WHERE refuses to let a message id
    // from another conversation be overwritten.
    this.upsertMessage = db.prepare(
      `INSERT INTO messages (id, conversation_id, segment_id, ordinal, role, content, status, provider, model,
         stop_reason, error_message, edited_files, usage, meta, created_at, updated_at)
       VALUES (@id, @conversationId,
         (SELECT active_segment_id FROM conversations WHERE id = @conversationId),
         (SELECT COALESCE(MAX(ordinal), 0) + 1 FROM messages WHERE conversation_id = @conversationId),
         @role, @content, @status, @provider, @model, @stopReason, @errorMessage, @editedFiles, @usage, @meta, @createdAt, @now)
       ON CONFLICT(id) DO UPDATE SET
         content = excluded.content, status = excluded.status, provider = excluded.provider, model = excluded.model,
         stop_reason = excluded.stop_reason, error_message = excluded.error_message, edited_files = excluded.edited_files,
         usage = excluded.usage, meta = excluded.meta, updated_at = excluded.updated_at
       WHERE messages.conversation_id = excluded.conversation_id`,
    );
    // last_seq only rises: a late, coalesced save must not lower what a later one stored.
    this.touch = db.prepare('UPDATE conversations SET last_seq = MAX(last_seq, @lastSeq), updated_at = @now WHERE id = @id');
    // A round commit writes no conversation row: the run's facts were stored with its user
    // message, and its last seq is covered by the reservation (extended here only when a long
    // run nears its end, an UPDATE that matches no row otherwise, so it writes no page).
    this.extendSeq = db.prepare(
      `UPDATE conversations SET seq_reserved = @lastSeq + ${SEQ_RESERVE} WHERE id = @id AND seq_reserved < @lastSeq + ${SEQ_RESERVE / 2}`,
    );
    this.runFacts = db.prepare(
      'UPDATE conversations SET provider = @provider, model = @model, mode = @mode, workdir = @workdir WHERE id = @conversationId',
    );
    this.insertUsage = db.prepare(
      `INSERT INTO usage (conversation_id, message_id, run_id, round, provider, model, input_tokens, output_tokens,
         cache_read_tokens, cache_write_tokens, reasoning_tokens, cost_usd, created_at)
       VALUES (@conversationId, @messageId, @runId, @round, @provider, @model, @input, @output, @cacheRead, @cacheWrite, @reasoning, @cost, @now)`,
    );
    this.segmentMessages = db.prepare('SELECT * FROM messages WHERE segment_id = ? ORDER BY ordinal');
    this.segmentSummary = db.prepare('SELECT summary, checkpoint, parent_segment_id FROM segments WHERE id = ?');
    this.autoTitle = db.prepare("UPDATE conversations SET title = ?, title_source = 'auto' WHERE id = ? AND (title IS NULL OR title_source = 'auto')");
    this.metaPatch = db.prepare('UPDATE conversations SET meta = json_patch(meta, ?) WHERE id = ? RETURNING meta');
    this.segmentCount = db.prepare('SELECT COUNT(*) AS n FROM messages WHERE segment_id = ?');
    this.segmentLast = db.prepare('SELECT id FROM messages WHERE segment_id = ? ORDER BY ordinal DESC LIMIT 1');
    this.messageAt = db.prepare('SELECT ordinal, segment_id FROM messages WHERE conversation_id = ? AND id = ?');
    this.deleteFrom = db.prepare('DELETE FROM messages WHERE conversation_id = ? AND ordinal >= ?');
    this.allMessages = db.prepare('SELECT * FROM messages WHERE conversation_id = ? ORDER BY ordinal');
    // Newest first through the (conversation_id, ordinal) index, then put back in order.
    this.pageBefore = db.prepare('SELECT * FROM messages WHERE conversation_id = ? AND ordinal < ? ORDER BY ordinal DESC LIMIT ?');
    // Ordinals run 1..N without holes (new rows take MAX + 1; truncation only cuts the tail), so
    // the count is the highest ordinal: one index probe instead of a scan.
    this.countMessages = db.prepare('SELECT MAX(ordinal) AS n FROM messages WHERE conversation_id = ?');
    this.conversationRow = db.prepare('SELECT * FROM conversations WHERE id = ?');
    this.segmentRows = db.prepare('SELECT id, parent_segment_id, summary, checkpoint, created_at FROM segments WHERE conversation_id = ? ORDER BY rowid');

    this.saveUserMessage = this.guard(
      write(db, (m: Message, info: SessionInfo) => {
        const now = Date.now();
        this.ensure(info.conversationId, info.lastSeq, now);
        this.upsertMessage.run(messageParams(info.conversationId, m, 'complete', now));
        this.touch.run({ id: info.conversationId, lastSeq: info.lastSeq, now });
      }),
    );
    this.saveProgress = this.guard(
      write(db, (m: Message, info: SessionInfo) => {
        const now = Date.now();
        this.ensure(info.conversationId, info.lastSeq, now);
        this.upsertMessage.run(messageParams(info.conversationId, m, 'partial', now));
        this.touch.run({ id: info.conversationId, lastSeq: info.lastSeq, now });
      }),
    );
    this.saveRunFacts = this.guard(
      write(db, (facts: RunFacts) => {
        this.ensure(facts.conversationId, 0, Date.now());
        this.runFacts.run(facts);
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
        // What the summary cost is the conversation's spending too (round 0: not a model round).
        if (c.usage && c.provider && c.model) this.recordUsage({ conversationId: r.conversationId, messageId: null, runId: `compaction:${segment}`, round: 0, provider: c.provider, model: c.model, usage: c.usage, now });
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
    const from = Math.max(conv.last_seq, conv.seq_reserved, info.lastSeq);
    // A run streams: reserve a large block. A load without a run (a manual compaction) emits a
    // few events and never reaches turn end to give the rest back: a small block keeps the gap small.
    this.reserveSeq.run({ id: info.conversationId, upTo: from + (info.run ? SEQ_RESERVE : SEQ_RESERVE_NO_RUN) });
    const segmentId = conv.active_segment_id;
    const segment = this.segmentSummary.get(segmentId);
    // The stamp names the active segment; the first one is '' (the kernel's stamp for a
    // conversation its run created).
    const stamp = segment && segment.parent_segment_id !== null ? segmentId : '';
    // The kernel still holds the window its last run ended with: when the same one is stored
    // (segment, size and newest message: rows are only added at the end or cut from the tail),
    // it goes on from it instead of a read that grows with the conversation.
    const held = info.held;
    const unchanged = !!held && held.stamp === stamp && this.segmentCount.get(segmentId)?.n === held.count && this.segmentLast.get(segmentId)?.id === held.lastMessageId;
    const messages = unchanged ? [] : this.segmentMessages.all(segmentId).map(rowToMessage);
    const snapshot: HistorySnapshot = { conversationId: info.conversationId, messages, lastSeq: from, stamp, ...(unchanged ? { unchanged } : {}) };
    if (segment?.summary) snapshot.summary = segment.summary;
    if (segment?.checkpoint) snapshot.checkpoint = JSON.parse(segment.checkpoint) as Checkpoint;
    if (conv.provider) snapshot.provider = conv.provider;
    if (conv.model) snapshot.model = conv.model;
    return snapshot;
  }

  /** Record the sequence number the kernel reached (turn end) and give back the unused reservation. */
  saveLastSeq(info: SessionInfo): void {
    this.assertOpen();
    this.releaseSeq.run({ id: info.conversationId, lastSeq: info.lastSeq, now: Date.now() });
  }


  /** Store a generated title unless the user renamed the conversation (one statement: a rename landing meanwhile wins). */
  setAutoTitle(conversationId: string, title: string): boolean {
    this.assertOpen();
    return this.autoTitle.run(title, conversationId).changes > 0;
  }

  /** Merge a JSON patch into a conversation's meta in one statement (two patches cannot lose each other's keys). */
  patchMeta(conversationId: string, patch: string): string | undefined {
    this.assertOpen();
    return this.metaPatch.get(patch, conversationId)?.meta;
  }

  /** A conversation's row, segments and messages (all, or one page), read in one go; undefined when unknown. */
  conversationDetail(conversationId: string, page: { limit?: number; before?: number }) {
    this.assertOpen();
    const conv = this.conversationRow.get(conversationId);
    if (!conv) return undefined;
    return { conv, segments: this.segmentRows.all(conversationId), ...this.messagesPage(conversationId, page) };
  }

  /** A conversation's messages, all or one page (the newest `limit` before `before`), oldest first. */
  messagesPage(conversationId: string, page: { limit?: number; before?: number }): { rows: MessageRow[]; hasMore: boolean; count: number } {
    this.assertOpen();
    const count = this.countMessages.get(conversationId)?.n ?? 0;
    if (page.limit === undefined && page.before === undefined) return { rows: this.allMessages.all(conversationId), hasMore: false, count };
    const limit = page.limit ?? 1_000_000;
    const rows = this.pageBefore.all(conversationId, page.before ?? Number.MAX_SAFE_INTEGER, limit + 1);
    const hasMore = rows.length > limit;
    if (hasMore) rows.length = limit;
    return { rows: rows.reverse(), hasMore, count };
  }

  close(): void {
    this.closed = true;
  }

  /** The conversation row (with the run's seq reservation) and its first segment, on the conversation's first write. */
  private ensure(conversationId: string, lastSeq: number, now: number): void {
    if (this.conversation.get(conversationId)) return;
    const segmentId = newSegmentId();
    this.insertConversation.run({ id: conversationId, segmentId, lastSeq, now });
    this.insertSegment.run({ id: segmentId, conversationId, parentId: null, summary: null, checkpoint: null, now });
  }

  private writeRound(r: RoundRecord): void {
    const now = Date.now();
    const id = r.conversationId;
    this.ensure(id, r.lastSeq, now);
    this.upsertMessage.run(messageParams(id, r.assistant, statusOf(r.assistant), now));
    if (r.toolResults) this.upsertMessage.run(messageParams(id, r.toolResults, 'complete', now));
    if (r.usage) this.recordUsage({ conversationId: id, messageId: r.assistant.id, runId: r.runId, round: r.round, provider: r.provider, model: r.model, usage: r.usage, now });
    this.extendSeq.run({ id, lastSeq: r.lastSeq });
  }

  private recordUsage(u: { conversationId: string; messageId: string | null; runId: string; round: number; provider: string; model: string; usage: Usage; now: number }): void {
    this.insertUsage.run({
      conversationId: u.conversationId,
      messageId: u.messageId,
      runId: u.runId,
      round: u.round,
      provider: u.provider,
      model: u.model,
      input: u.usage.inputTokens,
      output: u.usage.outputTokens,
      cacheRead: u.usage.cacheReadTokens ?? 0,
      cacheWrite: u.usage.cacheWriteTokens ?? 0,
      reasoning: u.usage.reasoningTokens ?? 0,
      cost: u.usage.costUsd ?? null,
      now: u.now,
    });
  }

  private truncateAt(conversationId: string, fromMessageId: string): void {
    let at = this.messageAt.get(conversationId, fromMessageId);
    // The kernel truncates only at a message of the history it loaded. The one kind it loads
    // but nobody stored is the synthetic result it adds after a dangling tool call (`<id>-repair`),
    // which sits right after its assistant message: truncate after that message.
    if (!at && fromMessageId.endsWith(REPAIR_SUFFIX)) {
      const base = this.messageAt.get(conversationId, fromMessageId.slice(0, -REPAIR_SUFFIX.length));
      if (base) at = { ordinal: base.ordinal + 1, segment_id: base.segment_id };
    }
    if (!at) return;
    // The kernel truncates within the history it loaded, which is the active segment, so no
    // segment ever needs to be reactivated here.
    this.deleteFrom.run(conversationId, at.ordinal);
    this.db.prepare('UPDATE conversations SET updated_at = ? WHERE id = ?').run(Date.now(), conversationId);
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
    this.insertSegment.run({ id, conversationId, parentId: conv.active_segment_id, summary, checkpoint: checkpoint ? JSON.stringify(checkpoint) : null, now });
    if (carryFrom !== undefined) {
      this.db.prepare('UPDATE messages SET segment_id = ? WHERE conversation_id = ? AND ordinal >= ?').run(id, conversationId, carryFrom);
    }
    this.db.prepare('UPDATE conversations SET active_segment_id = ?, updated_at = ? WHERE id = ?').run(id, now, conversationId);
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
