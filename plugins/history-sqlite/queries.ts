/**
 * The `history` service on SQLite: lib/history-shared/queries.ts over this plugin's store, with the
 * list query in SQLite's dialect. Browsing queries go through knex, off the hot path; each is a
 * single statement, and a multi-statement write (startSegment) goes through the store's
 * better-sqlite3 transaction, never a knex transaction (see database.ts).
 */
import type { Knex } from 'knex';
import type { HistoryService, RuntimeApi } from '../../plugin-api.js';
import { createHistoryService as createService, type ListDialect, type ListRow } from '../../lib/history-shared/queries.js';
import { likePattern } from '../../lib/history-shared/search.js';
import type { HistoryStore } from './store.js';

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

export const SQLITE_LIST: ListDialect = {
  hits: matchSql,
  // The expression of the conversations_pinned_updated index (schema.ts).
  pinnedSql: `json_extract(c.meta, '$.pinned') IS 1`,
  // SQLite's LIKE is case-insensitive (ASCII).
  titleMatchSql: `LIKE ? ESCAPE '\\'`,
  // better-sqlite3's knex.raw answers the rows.
  rowsOf: (result) => result as ListRow[],
};

export interface ServiceDeps {
  /** knex over the store's connection, made on first use. */
  knex(): Promise<Knex>;
  store: HistoryStore;
  runtime: RuntimeApi;
  /** Runs an operation, refusing it once the database is closing, and lets shutdown wait for it. */
  track<T>(op: () => Promise<T>): Promise<T>;
}

export function createHistoryService(deps: ServiceDeps): HistoryService {
  return createService({ ...deps, list: SQLITE_LIST });
}
