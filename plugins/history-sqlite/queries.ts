/**
 * The `history` service over knex: the browsing and management queries, off the hot path.
 * Each write here is a single statement; a multi-statement write (startSegment) goes through
 * the store's better-sqlite3 transaction, never a knex transaction (see database.ts). The
 * argument checks and row mappings are exported for history-postgres, which answers the same service.
 */
import type { Knex } from 'knex';
import { z } from 'zod';
import type { ExecutionMode, JsonObject, RuntimeApi } from '../../plugin-api.js';
import { UsageError } from '../../core/errors.js';
import { parseMeta, rowToHistoryMessage, rowToUsage, type UsageRow } from './rows.js';
import type { ConversationChange, ConversationDetail, ConversationPage, ConversationSummary, HistoryService, ListConversationsOptions, SegmentInfo } from './service.js';
import type { HistoryStore } from './store.js';

export const Id = z.string().regex(/^[A-Za-z0-9_-]{1,128}$/, 'must be 1-128 letters, digits, _ or -');
export const ListOptions = z.strictObject({
  search: z.string().max(200, 'must be at most 200 characters').optional(),
  limit: z.number().int().min(1).max(500).optional(),
  offset: z.number().int().min(0).optional(),
});
export const Title = z.string().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters');
export const MetaPatch = z.record(z.string(), z.json());
export const Page = z.strictObject({
  limit: z.number().int().min(1).max(1000).optional(),
  before: z.number().int().min(1).optional(),
});
export const SegmentOptions = z.strictObject({
  summary: z.string().min(1, 'must not be empty'),
  carryFromMessageId: z.string().min(1).optional(),
});

export function check<T>(schema: z.ZodType<T>, value: unknown, method: string, arg: string): T {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const i = r.error.issues[0]!;
  throw new UsageError(`history.${method}: ${[arg, ...i.path.map(String)].join('.')}: ${i.message}`);
}

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

/** LIKE pattern for a literal substring (`\` escapes %, _ and itself). */
export const likePattern = (s: string) => `%${s.replace(/[\\%_]/g, (ch) => `\\${ch}`)}%`;

/** The search's words (at most 16), each matched as a substring; every one must match. */
export function searchTerms(search: string): string[] {
  return search.trim().split(/\s+/).filter(Boolean).slice(0, 16);
}

/**
 * Conversations whose message text holds every term, with their newest matching message. Terms
 * of three characters or more go through the trigram index, each quoted as an FTS5 string (so
 * quotes, `*`, `NEAR`, `AND`, parentheses are plain text); shorter ones, which trigrams cannot
 * match, are a LIKE over the matching rows' text.
 */
function matchSql(terms: string[]): { sql: string; bindings: string[] } {
  const long = terms.filter((t) => [...t].length >= 3);
  const short = terms.filter((t) => [...t].length < 3);
  const likes = short.map(() => `s.text LIKE ? ESCAPE '\\'`);
  const sql = long.length
    ? `SELECT s.conversation_id AS cid, MAX(s.id) AS sid FROM message_fts f JOIN message_search s ON s.id = f.rowid
         WHERE message_fts MATCH ?${likes.map((l) => ` AND ${l}`).join('')} GROUP BY s.conversation_id`
    : `SELECT s.conversation_id AS cid, MAX(s.id) AS sid FROM message_search s WHERE ${likes.join(' AND ')} GROUP BY s.conversation_id`;
  const match = long.map((t) => `"${t.replace(/"/g, '""')}"`).join(' AND ');
  return { sql, bindings: [...(long.length ? [match] : []), ...short.map(likePattern)] };
}

const SNIPPET_BEFORE = 40;
const SNIPPET_LENGTH = 160;

/** A line's worth of `text` around the first term found in it, whitespace folded. */
export function snippetOf(text: string, terms: string[]): string {
  const lower = text.toLowerCase();
  const found = terms.map((t) => lower.indexOf(t.toLowerCase())).filter((i) => i >= 0);
  const at = found.length ? Math.min(...found) : 0;
  let start = Math.max(0, at - SNIPPET_BEFORE);
  // Start on a word when one begins shortly before the match.
  if (start > 0) {
    const space = text.indexOf(' ', start);
    if (space >= 0 && space < at) start = space + 1;
  }
  const end = Math.min(text.length, start + SNIPPET_LENGTH);
  return `${start > 0 ? '…' : ''}${text.slice(start, end).replace(/\s+/g, ' ').trim()}${end < text.length ? '…' : ''}`;
}

export interface ServiceDeps {
  /** knex over the store's connection, made on first use. */
  knex(): Promise<Knex>;
  store: HistoryStore;
  runtime: RuntimeApi;
  /** Runs an operation, refusing it once the database is closing, and lets shutdown wait for it. */
  track<T>(op: () => Promise<T>): Promise<T>;
}

export function createHistoryService({ knex: getKnex, store, runtime, track }: ServiceDeps): HistoryService {
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
        const knex = await getKnex();
        const o = check(ListOptions, options ?? {}, 'listConversations', 'options');
        const terms = searchTerms(o.search ?? '');
        const hits = terms.length ? matchSql(terms) : undefined;
        // Pinned conversations first, so the list's limit never drops one.
        const rows = (await knex.raw(
          `${hits ? `WITH hits AS (${hits.sql}) ` : ''}
           SELECT c.id, c.title, c.created_at, c.updated_at, c.provider, c.model,
             (SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.id) AS message_count,
             json_extract(c.meta, '$.pinned') IS 1 AS pinned
             ${hits ? ', (SELECT s.text FROM message_search s WHERE s.id = h.sid) AS hit_text' : ''}
           FROM conversations c ${hits ? 'LEFT JOIN hits h ON h.cid = c.id' : ''}
           ${hits ? `WHERE h.cid IS NOT NULL OR (${terms.map(() => `c.title LIKE ? ESCAPE '\\'`).join(' AND ')})` : ''}
           ORDER BY pinned DESC, c.updated_at DESC, c.id DESC
           LIMIT ? OFFSET ?`,
          [...(hits?.bindings ?? []), ...terms.map(likePattern), o.limit ?? 50, o.offset ?? 0],
        )) as Array<SummaryRow & { pinned: number; hit_text?: string | null }>;
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
        // Prepared statements, not knex: this is what opening a long conversation costs.
        const found = store.conversationDetail(id, p);
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
        const knex = await getKnex();
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
        // A prepared statement, not knex: a one-shot CLI stores its title on the way out.
        const stored = store.setAutoTitle(id, t);
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
        const knex = await getKnex();
        check(Id, id, 'deleteConversation', 'id');
        // Stop a run first, or its final round would write into (and recreate) the conversation.
        await runtime.forgetConversation(id);
        // Segments, messages and usage go with it (ON DELETE CASCADE).
        return (await knex('conversations').where({ id }).del()) > 0;
      }),

    conversationExists: (id: string) =>
      track(async () => {
        const knex = await getKnex();
        check(Id, id, 'conversationExists', 'id');
        return !!(await knex('conversations').where({ id }).first('id'));
      }),

    setConversationMeta: (id: string, patch: JsonObject) =>
      track(async () => {
        check(Id, id, 'setConversationMeta', 'id');
        const p = check(MetaPatch, patch, 'setConversationMeta', 'patch');
        // A prepared statement, not knex: plugins patch meta on a run's path (the memory pin).
        const meta = store.patchMeta(id, JSON.stringify(p));
        return meta === undefined ? undefined : parseMeta(meta);
      }),

    getUsage: (id: string) =>
      track(async () => {
        const knex = await getKnex();
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
