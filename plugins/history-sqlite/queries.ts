/**
 * The `history` service over knex: the browsing and management queries, off the hot path.
 * Each write here is a single statement; a multi-statement write (startSegment) goes through
 * the store's better-sqlite3 transaction, never a knex transaction (see database.ts).
 */
import type { Knex } from 'knex';
import { z } from 'zod';
import type { ExecutionMode, JsonObject, RuntimeApi } from '../../plugin-api.js';
import { UsageError } from '../../core/errors.js';
import { parseMeta, rowToHistoryMessage, rowToUsage, type UsageRow } from './rows.js';
import type { ConversationChange, ConversationDetail, ConversationPage, ConversationSummary, HistoryService, ListConversationsOptions, SegmentInfo } from './service.js';
import type { HistoryStore } from './store.js';

const Id = z.string().regex(/^[A-Za-z0-9_-]{1,128}$/, 'must be 1-128 letters, digits, _ or -');
const ListOptions = z.strictObject({
  search: z.string().max(200, 'must be at most 200 characters').optional(),
  limit: z.number().int().min(1).max(500).optional(),
  offset: z.number().int().min(0).optional(),
});
const Title = z.string().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters');
const MetaPatch = z.record(z.string(), z.json());
const Page = z.strictObject({
  limit: z.number().int().min(1).max(1000).optional(),
  before: z.number().int().min(1).optional(),
});
const SegmentOptions = z.strictObject({
  summary: z.string().min(1, 'must not be empty'),
  carryFromMessageId: z.string().min(1).optional(),
});

function check<T>(schema: z.ZodType<T>, value: unknown, method: string, arg: string): T {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const i = r.error.issues[0]!;
  throw new UsageError(`history.${method}: ${[arg, ...i.path.map(String)].join('.')}: ${i.message}`);
}

interface SummaryRow {
  id: string;
  title: string | null;
  created_at: number;
  updated_at: number;
  provider: string | null;
  model: string | null;
  message_count: number;
}

const summaryOf = (r: SummaryRow): ConversationSummary => ({
  id: r.id,
  title: r.title,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  provider: r.provider,
  model: r.model,
  messageCount: r.message_count,
});

/** LIKE pattern for a literal substring (`\` escapes %, _ and itself). */
const likePattern = (s: string) => `%${s.replace(/[\\%_]/g, (ch) => `\\${ch}`)}%`;

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
        const q = knex('conversations as c')
          .select('c.id', 'c.title', 'c.created_at', 'c.updated_at', 'c.provider', 'c.model')
          .select(knex.raw('(SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.id) AS message_count'))
          .orderBy([
            { column: 'c.updated_at', order: 'desc' },
            { column: 'c.id', order: 'desc' },
          ])
          .limit(o.limit ?? 50)
          .offset(o.offset ?? 0);
        const search = o.search?.trim();
        if (search) {
          const pattern = likePattern(search);
          // Only text blocks of user and assistant messages: matching the raw JSON would find
          // every block type name and tool output.
          q.where((w) =>
            w.whereRaw(`c.title LIKE ? ESCAPE '\\'`, [pattern]).orWhereRaw(
              `EXISTS (SELECT 1 FROM messages m, json_each(m.content) b
                 WHERE m.conversation_id = c.id AND m.role IN ('user', 'assistant')
                   AND json_extract(b.value, '$.type') = 'text' AND json_extract(b.value, '$.text') LIKE ? ESCAPE '\\')`,
              [pattern],
            ),
          );
        }
        return ((await q) as SummaryRow[]).map(summaryOf);
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
