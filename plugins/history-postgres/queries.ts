/**
 * The `history` service on PostgreSQL: lib/history-shared/queries.ts (the interface, argument
 * checks and row mappings both backends share) over this plugin's store, with the list query in
 * PostgreSQL's dialect. Search is ILIKE over message_search (trigram-indexed when pg_trgm is
 * there, see schema.ts): every word a case-insensitive substring of one message's text, or of
 * the title.
 */
import type { Knex } from 'knex';
import type { HistoryService, RuntimeApi } from '../../plugin-api.js';
import { createHistoryService, type ChangeRelay, type ListDialect, type ListRow } from '../../lib/history-shared/queries.js';
import { likePattern } from '../../lib/history-shared/search.js';
import type { PgHistoryStore } from './store.js';

export interface PgServiceDeps {
  knex: Knex;
  store: PgHistoryStore;
  runtime: RuntimeApi;
  /** Runs an operation, refusing it once the database is closing, and lets shutdown wait for it. */
  track<T>(op: () => Promise<T>): Promise<T>;
  relay?: ChangeRelay;
}

const ILIKE = `ILIKE ? ESCAPE '\\'`;

export const POSTGRES_LIST: ListDialect = {
  hits: (terms) => ({
    sql: `SELECT s.conversation_id AS cid, MAX(s.id) AS sid FROM message_search s WHERE ${terms.map(() => `s.text ${ILIKE}`).join(' AND ')} GROUP BY s.conversation_id`,
    bindings: terms.map(likePattern),
  }),
  // The expression of the conversations_pinned_updated index (schema.ts).
  pinnedSql: `COALESCE((c.meta::jsonb -> 'pinned') = 'true'::jsonb, false)`,
  titleMatchSql: ILIKE,
  rowsOf: (result) => (result as { rows: ListRow[] }).rows,
};

export function createPgHistoryService({ knex, store, runtime, track, relay }: PgServiceDeps): HistoryService {
  return createHistoryService({ knex: async () => knex, store, list: POSTGRES_LIST, runtime, track, ...(relay ? { relay } : {}) });
}
