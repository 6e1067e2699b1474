/**
 * The `history` service (plugin-api.d.ts, ServiceMap `history`) over knex, for both backends:
 * the argument checks, the browsing and management queries and the row mappings are one; what
 * differs is named in {@link ServiceDeps}: the list query's dialect ({@link ListDialect}) and the
 * store that answers the reads and writes on a run's path (prepared better-sqlite3 statements,
 * or the PostgreSQL store's transactions). Bad arguments are refused with a UsageError whose
 * message names the method and the field.
 */
import type { Knex } from 'knex';
import { z } from 'zod';
import { UsageError } from '../../core/errors.js';
import type { ConversationChange, ConversationDetail, ConversationPage, ExecutionMode, HistoryService, JsonObject, ListConversationsOptions, RuntimeApi } from '../../plugin-api.js';
import { parseMeta, rowToHistoryMessage, rowToUsage, segmentInfo, usageOfMessageRow, summaryOf, type ConversationRow, type MessageRow, type SegmentRow, type SummaryRow, type UsageRow } from './rows.js';
import { likePattern, searchTerms, snippetOf } from './search.js';

/** The key the service is provided under. */
export const HISTORY_SERVICE = 'history';

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

/** A row of the list query: `pinned` is SQLite's 0/1 or PostgreSQL's boolean. */
export type ListRow = SummaryRow & { pinned: number | boolean; hit_text?: string | null };

/** What a dialect writes of the list query (see {@link listConversationsSql}). */
export interface ListDialect {
  /**
   * Conversations (`cid`) whose message text holds every term, with their newest matching
   * message_search row (`sid`); bindings in order.
   */
  hits(terms: string[]): { sql: string; bindings: unknown[] };
  /** True when `c.meta` has `pinned: true`; written as the list index's expression (schema), so the order is read from it. */
  pinnedSql: string;
  /** The title's case-insensitive substring match, one likePattern binding. */
  titleMatchSql: string;
  /** The rows of the driver's `knex.raw` result. */
  rowsOf(result: unknown): ListRow[];
}

/** The list query: pinned conversations first (so the list's limit never drops one), then most recently updated. */
export function listConversationsSql(dialect: ListDialect, terms: string[], limit: number, offset: number, likes: string[]): { sql: string; bindings: unknown[] } {
  const hits = terms.length ? dialect.hits(terms) : undefined;
  const sql = `${hits ? `WITH hits AS (${hits.sql}) ` : ''}
           SELECT c.id, c.title, c.created_at, c.updated_at, c.provider, c.model,
             (SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.id) AS message_count,
             ${dialect.pinnedSql} AS pinned
             ${hits ? ', (SELECT s.text FROM message_search s WHERE s.id = h.sid) AS hit_text' : ''}
           FROM conversations c ${hits ? 'LEFT JOIN hits h ON h.cid = c.id' : ''}
           ${hits ? `WHERE h.cid IS NOT NULL OR (${terms.map(() => `c.title ${dialect.titleMatchSql}`).join(' AND ')})` : ''}
           ORDER BY pinned DESC, c.updated_at DESC, c.id DESC
           LIMIT ? OFFSET ?`;
  return { sql, bindings: [...(hits?.bindings ?? []), ...likes, limit, offset] };
}

type Awaitable<T> = T | Promise<T>;

/** A conversation as the store reads it for getConversation. */
export interface ConversationRows {
  conv: ConversationRow;
  segments: SegmentRow[];
  rows: MessageRow[];
  hasMore: boolean;
  count: number;
}

/** What the service asks of the backend's store: the reads and writes that also run on a run's path. */
export interface ServiceStore {
  conversationDetail(conversationId: string, page: { limit?: number; before?: number }): Awaitable<ConversationRows | undefined>;
  /** Store a generated title unless the user named the conversation; true when stored. */
  setAutoTitle(conversationId: string, title: string): Awaitable<boolean>;
  /** Merge a JSON merge patch into the meta, atomically; the new meta, or undefined when unknown. */
  patchMeta(conversationId: string, patch: JsonObject): Awaitable<JsonObject | undefined>;
  startSegment(conversationId: string, summary: string, carryFromMessageId?: string): Awaitable<string | undefined>;
}

/**
 * How a backend shared by several processes carries conversation changes between them (a title
 * stored by one process reaches the conversation lists the others serve).
 */
export interface ChangeRelay {
  /** Tell the other processes about a change made here. */
  send(change: ConversationChange): void;
  /** `listener` hears the changes other processes made (never this process's own); asked once, when the service is first watched. */
  onRemote(listener: (change: ConversationChange) => void): void;
}

export interface ServiceDeps {
  /** knex over the backend's connection (SQLite makes it on first use: the hot path does not need it). */
  knex(): Promise<Knex>;
  store: ServiceStore;
  list: ListDialect;
  runtime: RuntimeApi;
  /** Runs an operation, refusing it once the database is closing, and lets shutdown wait for it. */
  track<T>(op: () => Promise<T>): Promise<T>;
  /** Other processes on the same database (PostgreSQL): changes are relayed both ways. */
  relay?: ChangeRelay;
}

export function createHistoryService({ knex: getKnex, store, list, runtime, track, relay }: ServiceDeps): HistoryService {
  const watchers = new Set<(change: ConversationChange) => void>();
  const tell = (change: ConversationChange) => {
    for (const w of watchers) {
      try {
        w(change);
      } catch {
        /* listeners are notifications */
      }
    }
  };
  const changed = (change: ConversationChange) => {
    tell(change);
    relay?.send(change);
  };
  // Other processes' changes are listened for once someone here watches (a CLI never does).
  let relayed = false;
  return {
    listConversations: (options?: ListConversationsOptions) =>
      track(async () => {
        const knex = await getKnex();
        const o = check(ListOptions, options ?? {}, 'listConversations', 'options');
        const terms = searchTerms(o.search ?? '');
        const q = listConversationsSql(list, terms, o.limit ?? 50, o.offset ?? 0, terms.map(likePattern));
        const rows = list.rowsOf(await knex.raw(q.sql, q.bindings as Knex.RawBinding[]));
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
        // The store's reads, not knex: this is what opening a long conversation costs.
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
          segments: segments.map(segmentInfo),
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
        // The store, not knex: a one-shot CLI stores its title on the way out.
        const stored = await store.setAutoTitle(id, t);
        if (stored) changed({ conversationId: id, kind: 'title', title: t, titleSource: 'auto' });
        return stored;
      }),

    watchConversations: async (listener: (change: ConversationChange) => void) => {
      if (typeof listener !== 'function') throw new UsageError('history.watchConversations: listener: must be a function');
      watchers.add(listener);
      if (relay && !relayed) {
        relayed = true;
        relay.onRemote(tell);
      }
      return { dispose: () => void watchers.delete(listener) };
    },

    deleteConversation: (id: string) =>
      track(async () => {
        const knex = await getKnex();
        check(Id, id, 'deleteConversation', 'id');
        // Stop a run first, or its final round would write into (and recreate) the conversation.
        await runtime.forgetConversation(id);
        // Segments, messages and usage go with it (ON DELETE CASCADE).
        const deleted = (await knex('conversations').where({ id }).del()) > 0;
        if (deleted) changed({ conversationId: id, kind: 'deleted' });
        return deleted;
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
        // The store, not knex: plugins patch meta on a run's path (the memory pin).
        const meta = await store.patchMeta(id, p as JsonObject);
        if (meta !== undefined) changed({ conversationId: id, kind: 'meta' });
        return meta;
      }),

    getUsage: (id: string) =>
      track(async () => {
        const knex = await getKnex();
        check(Id, id, 'getUsage', 'id');
        const rows = ((await knex('usage').where({ conversation_id: id }).orderBy('id')) as UsageRow[]).map(rowToUsage);
        // Rounds whose message carries its usage (SQLite's round commit), while the message is stored.
        const carried = (await knex('messages')
          .where({ conversation_id: id })
          .whereNotNull('run_id')
          .whereNotNull('usage')
          .orderBy('ordinal')
          .select('id', 'conversation_id', 'provider', 'model', 'usage', 'updated_at', 'run_id', 'round')) as MessageRow[];
        if (carried.length === 0) return rows;
        // A message with a usage row of its own (stored before 0008, then committed again) counts once.
        const counted = new Set(rows.map((u) => u.messageId));
        const fromMessages = carried.filter((r) => !counted.has(r.id)).map((r) => usageOfMessageRow(r)!);
        // One list in the order the rounds were spent (a stable sort keeps each source's order).
        return [...rows, ...fromMessages].sort((a, b) => a.createdAt - b.createdAt);
      }),

    startSegment: (id, options) =>
      track(async () => {
        check(Id, id, 'startSegment', 'id');
        const o = check(SegmentOptions, options, 'startSegment', 'options');
        return store.startSegment(id, o.summary, o.carryFromMessageId);
      }),
  };
}

/**
 * The service as a backend provides it at boot, before its database is open: usable at once,
 * each call waits for the opening and goes to the real service.
 */
export function lazyHistoryService(open: () => Promise<{ service: HistoryService }>): HistoryService {
  return new Proxy({} as HistoryService, {
    // Not a thenable, and no symbol keys: only method names become async forwarders.
    get: (_t, key) => (key === 'then' || typeof key === 'symbol' ? undefined : async (...args: unknown[]) => {
      const { service } = await open();
      const fn = (service as unknown as Record<PropertyKey, (...a: unknown[]) => unknown>)[key];
      if (typeof fn !== 'function') throw new Error(`history service has no method ${String(key)}`);
      return fn.apply(service, args);
    }),
  });
}
