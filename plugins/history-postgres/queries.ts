/**
 * The `history` service on PostgreSQL: the same interface, argument checks and row mappings as
 * history-sqlite's (imported from it), with the queries in PostgreSQL's dialect. Search is
 * ILIKE over message_search (trigram-indexed when pg_trgm is there, see schema.ts): every word a
 * case-insensitive substring of one message's text, or of the title.
 */
import type { Knex } from 'knex';
import type { ExecutionMode, JsonObject, RuntimeApi } from '../../plugin-api.js';
import { UsageError } from '../../core/errors.js';
import { check, Id, likePattern, ListOptions, MetaPatch, Page, searchTerms, SegmentOptions, snippetOf, summaryOf, Title, type SummaryRow } from '../history-sqlite/queries.js';
import { parseMeta, rowToHistoryMessage, rowToUsage, type UsageRow } from '../history-sqlite/rows.js';
import type { ConversationChange, ConversationDetail, ConversationPage, HistoryService, ListConversationsOptions, SegmentInfo } from '../history-sqlite/service.js';
import type { PgHistoryStore } from './store.js';

export interface PgServiceDeps {
  knex: Knex;
  store: PgHistoryStore;
  runtime: RuntimeApi;
  /** Runs an operation, refusing it once the database is closing, and lets shutdown wait for it. */
  track<T>(op: () => Promise<T>): Promise<T>;
}

const ILIKE = `ILIKE ? ESCAPE '\\'`;

export function createPgHistoryService({ knex, store, runtime, track }: PgServiceDeps): HistoryService {
  const watchers = new Set<(change: ConversationChange) => void>();
  const changed = (change: ConversationChange) => {
    for (const w of watchers) {
      try {
        w(change);
      } catch {
        /* listeners are notifications */
      }
    }
  };
  return {
    listConversations: (options?: ListConversationsOptions) =>
      track(async () => {
        const o = check(ListOptions, options ?? {}, 'listConversations', 'options');
        const terms = searchTerms(o.search ?? '');
        const patterns = terms.map(likePattern);
        const hits = terms.length
          ? `WITH hits AS (SELECT s.conversation_id AS cid, MAX(s.id) AS sid FROM message_search s WHERE ${terms.map(() => `s.text ${ILIKE}`).join(' AND ')} GROUP BY s.conversation_id) `
          : '';
        const { rows } = (await knex.raw(
          `${hits}SELECT c.id, c.title, c.created_at, c.updated_at, c.provider, c.model,
             (SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.id) AS message_count,
             COALESCE((c.meta::jsonb -> 'pinned') = 'true'::jsonb, false) AS pinned
             ${hits ? ', (SELECT s.text FROM message_search s WHERE s.id = h.sid) AS hit_text' : ''}
           FROM conversations c ${hits ? 'LEFT JOIN hits h ON h.cid = c.id' : ''}
           ${hits ? `WHERE h.cid IS NOT NULL OR (${terms.map(() => `c.title ${ILIKE}`).join(' AND ')})` : ''}
           ORDER BY pinned DESC, c.updated_at DESC, c.id DESC
           LIMIT ? OFFSET ?`,
          [...(hits ? patterns : []), ...patterns, o.limit ?? 50, o.offset ?? 0],
        )) as { rows: Array<SummaryRow & { pinned: boolean; hit_text?: string | null }> };
        return rows.map((r) => {
          const s = summaryOf(r);
          if (r.pinned) s.pinned = true;
          if (r.hit_text) s.snippet = snippetOf(r.hit_text, terms);
          return s;
        });
      }),

    getConversation: (id: string, page?: ConversationPage) =>
      track(async () => {
        check(Id, id, 'getConversation', 'id');
        const p = check(Page, page ?? {}, 'getConversation', 'page');
        const found = await store.conversationDetail(id, p);
        if (!found) return undefined;
        const { conv, segments, rows, hasMore, count } = found;
        const detail: ConversationDetail = {
          ...summaryOf({ ...conv, message_count: count }),
          lastSeq: conv.last_seq,
          mode: conv.mode as ExecutionMode | null,
          workdir: conv.workdir,
          meta: parseMeta(conv.meta),
          activeSegmentId: conv.active_segment_id,
          segments: segments.map((s): SegmentInfo => ({ id: s.id, parentSegmentId: s.parent_segment_id, summary: s.summary, checkpoint: s.checkpoint ? JSON.parse(s.checkpoint) : null, createdAt: s.created_at })),
          messages: rows.map(rowToHistoryMessage),
          hasMore,
        };
        return detail;
      }),

    renameConversation: (id: string, title: string) =>
      track(async () => {
        check(Id, id, 'renameConversation', 'id');
        const t = check(Title, title, 'renameConversation', 'title');
        const stored = (await knex('conversations').where({ id }).update({ title: t, title_source: 'user' })) > 0;
        if (stored) changed({ conversationId: id, kind: 'title', title: t, titleSource: 'user' });
        return stored;
      }),

    setTitle: (id: string, title: string) =>
      track(async () => {
        check(Id, id, 'setTitle', 'id');
        const t = check(Title, title, 'setTitle', 'title');
        const stored = await store.setAutoTitle(id, t);
        if (stored) changed({ conversationId: id, kind: 'title', title: t, titleSource: 'auto' });
        return stored;
      }),

    watchConversations: async (listener: (change: ConversationChange) => void) => {
      if (typeof listener !== 'function') throw new UsageError('history.watchConversations: listener: must be a function');
      watchers.add(listener);
      return { dispose: () => void watchers.delete(listener) };
    },

    deleteConversation: (id: string) =>
      track(async () => {
        check(Id, id, 'deleteConversation', 'id');
        await runtime.forgetConversation(id);
        return (await knex('conversations').where({ id }).del()) > 0;
      }),

    conversationExists: (id: string) =>
      track(async () => {
        check(Id, id, 'conversationExists', 'id');
        return !!(await knex('conversations').where({ id }).first('id'));
      }),

    setConversationMeta: (id: string, patch: JsonObject) =>
      track(async () => {
        check(Id, id, 'setConversationMeta', 'id');
        const p = check(MetaPatch, patch, 'setConversationMeta', 'patch');
        return store.patchMeta(id, p as JsonObject);
      }),

    getUsage: (id: string) =>
      track(async () => {
        check(Id, id, 'getUsage', 'id');
        return ((await knex('usage').where({ conversation_id: id }).orderBy('id')) as UsageRow[]).map(rowToUsage);
      }),

    startSegment: (id, options) =>
      track(async () => {
        check(Id, id, 'startSegment', 'id');
        const o = check(SegmentOptions, options, 'startSegment', 'options');
        return store.startSegment(id, o.summary, o.carryFromMessageId);
      }),
  };
}
