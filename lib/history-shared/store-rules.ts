/**
 * The rules both history stores keep, whatever their driver (the synchronous better-sqlite3
 * store and the asynchronous knex/pg one): how event sequence numbers are reserved, how segments
 * are named and stamped, what a loaded history holds, where a truncation at a synthetic repair
 * result lands, which usage a round or a checkpoint records, and how a page of messages is cut.
 * The stores keep their own transactions and statements; these are the decisions inside them.
 */
import { randomBytes } from 'node:crypto';
import type { Checkpoint, CheckpointRecord, HistorySnapshot, Message, RoundRecord, SessionInfo, Usage } from '../../plugin-api.js';
import type { SegmentHead } from './rows.js';

/**
 * Sequence numbers reserved for a run when it loads the history. Progress is saved at least
 * every persistIntervalMs while a reply streams, so a run that dies emits far fewer numbers than
 * this past its last save; a clean end gives the rest back.
 */
export const SEQ_RESERVE = 100_000;
/**
 * A load without a run (a manual compaction) emits a few events and never reaches turn end to
 * give the rest back: a small block keeps the gap small.
 */
export const SEQ_RESERVE_NO_RUN = 16;
/**
 * A round commit extends the reservation (to its seq + SEQ_RESERVE) only once the run came within
 * this of its end; otherwise it writes no conversation row.
 */
export const SEQ_EXTEND_WITHIN = SEQ_RESERVE / 2;

/** The conversation's seq columns, as a load reads them. */
export interface SeqState {
  last_seq: number;
  seq_reserved: number;
}

/**
 * Where a loading run goes on from (above any number a run that died could have used) and up to
 * where its numbers are reserved.
 */
export function seqReservation(conv: SeqState, info: SessionInfo): { from: number; upTo: number } {
  const from = Math.max(conv.last_seq, conv.seq_reserved, info.lastSeq);
  return { from, upTo: from + (info.run ? SEQ_RESERVE : SEQ_RESERVE_NO_RUN) };
}

export function newSegmentId(): string {
  return `s_${Date.now().toString(36)}${randomBytes(5).toString('hex')}`;
}

/**
 * The stamp of a loaded history names its active segment; the first one's is '' (the kernel's
 * stamp for a conversation its run created).
 */
export function segmentStamp(segmentId: string, segment: SegmentHead | undefined): string {
  return segment && segment.parent_segment_id !== null ? segmentId : '';
}

/**
 * The kernel still holds the window its last run ended with: when the same one is stored
 * (segment, size and newest message: rows are only added at the end or cut from the tail), it
 * goes on from it instead of a read that grows with the conversation.
 */
export function heldMatches(held: SessionInfo['held'], stamp: string): held is NonNullable<SessionInfo['held']> {
  return !!held && held.stamp === stamp;
}

/** What loadHistory answers, from what the store read. */
export function historySnapshot(
  info: SessionInfo,
  from: number,
  stamp: string,
  messages: Message[],
  unchanged: boolean,
  segment: SegmentHead | undefined,
  conv: { provider: string | null; model: string | null },
): HistorySnapshot {
  const snapshot: HistorySnapshot = { conversationId: info.conversationId, messages, lastSeq: from, stamp, ...(unchanged ? { unchanged } : {}) };
  if (segment?.summary) snapshot.summary = segment.summary;
  if (segment?.checkpoint) snapshot.checkpoint = JSON.parse(segment.checkpoint) as Checkpoint;
  if (conv.provider) snapshot.provider = conv.provider;
  if (conv.model) snapshot.model = conv.model;
  return snapshot;
}

const REPAIR_SUFFIX = '-repair';

/**
 * The kernel truncates only at a message of the history it loaded. The one kind it loads but
 * nobody stored is the synthetic result it adds after a dangling tool call (`<id>-repair`), which
 * sits right after its assistant message: the id of that message, where truncation goes on from
 * its ordinal + 1. Undefined for any other id.
 */
export function repairedMessageId(fromMessageId: string): string | undefined {
  return fromMessageId.endsWith(REPAIR_SUFFIX) ? fromMessageId.slice(0, -REPAIR_SUFFIX.length) : undefined;
}

/** What the request context tells about a run (SessionInfo does not carry it). */
export interface RunFacts {
  conversationId: string;
  provider: string;
  model: string;
  mode: string;
  workdir: string;
}

/** The run's facts the conversation row learns with its user message (shown in lists, used to continue it); undefined without a run. */
export function runFactsOf(info: SessionInfo): RunFacts | undefined {
  return info.run ? { conversationId: info.conversationId, provider: info.run.provider, model: info.run.model, mode: info.run.mode, workdir: info.run.workdir } : undefined;
}

/** One usage row to record. */
export interface UsageFacts {
  conversationId: string;
  messageId: string | null;
  runId: string;
  round: number;
  provider: string;
  model: string;
  usage: Usage;
  now: number;
}

/** The usage of a committed round, if the provider reported any. */
export function roundUsage(r: RoundRecord, now: number): UsageFacts | undefined {
  return r.usage ? { conversationId: r.conversationId, messageId: r.assistant.id, runId: r.runId, round: r.round, provider: r.provider, model: r.model, usage: r.usage, now } : undefined;
}

/** What a compaction's summary cost is the conversation's spending too (round 0: not a model round). */
export function checkpointUsage(r: CheckpointRecord, segmentId: string, now: number): UsageFacts | undefined {
  const c = r.checkpoint;
  return c.usage && c.provider && c.model ? { conversationId: r.conversationId, messageId: null, runId: `compaction:${segmentId}`, round: 0, provider: c.provider, model: c.model, usage: c.usage, now } : undefined;
}

/** A page of a conversation's messages: all of them, or the newest `limit` before `before`. */
export type PageRequest = { limit?: number; before?: number };

/** How to read a page: undefined for all messages; else newest first below `before`, one more than `limit` (to tell hasMore). */
export function pageWindow(page: PageRequest): { before: number; limit: number; fetch: number } | undefined {
  if (page.limit === undefined && page.before === undefined) return undefined;
  const limit = page.limit ?? 1_000_000;
  return { before: page.before ?? Number.MAX_SAFE_INTEGER, limit, fetch: limit + 1 };
}

/** The rows read for a {@link pageWindow} (newest first, one extra), cut to the page and put back oldest first. */
export function pageOf<R>(newestFirst: R[], limit: number): { rows: R[]; hasMore: boolean } {
  const hasMore = newestFirst.length > limit;
  if (hasMore) newestFirst.length = limit;
  return { rows: newestFirst.reverse(), hasMore };
}
