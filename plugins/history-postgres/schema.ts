/**
 * The schema on PostgreSQL: lib/history-shared/migrations.ts (the same migrations as SQLite's, in
 * the same order under the same names), with the migrations written in PostgreSQL's dialect here.
 *
 * 0005 (message search) on PostgreSQL: the same message_search table (one row per user or
 * assistant message that has text), kept in step by PL/pgSQL triggers on insert, content or
 * status update and delete, and searched with ILIKE (case-insensitive substring, every word).
 * When the pg_trgm extension can be created (it is trusted since PostgreSQL 13: a database
 * owner may create it), a GIN trigram index serves those ILIKEs; otherwise they scan
 * message_search, which is correct, only slower on a large history.
 */
import { historyMigrationSource, SEARCH_TEXT_MAX, type DialectMigrations } from '../../lib/history-shared/migrations.js';

/** A message row's (`m`) searchable text: its text blocks in order, one per line; NULL when none. */
const searchText = (m: string) =>
  `(SELECT string_agg(b.value ->> 'text', E'\\n' ORDER BY b.n) FROM jsonb_array_elements(${m}.content::jsonb) WITH ORDINALITY AS b(value, n)
     WHERE b.value ->> 'type' = 'text' AND b.value ->> 'text' <> '')`;

/** The trigger function that indexes a message row, its text whole (0005) or capped at `cap` characters (0007). */
const indexFunction = (verb: 'CREATE' | 'CREATE OR REPLACE', cap?: number) =>
  `${verb} FUNCTION liveagent_index_message() RETURNS trigger LANGUAGE plpgsql AS $$
   DECLARE t TEXT;
   BEGIN
     IF TG_OP <> 'INSERT' THEN
       DELETE FROM message_search WHERE message_id = OLD.id;
     END IF;
     IF TG_OP <> 'DELETE' AND NEW.role IN ('user', 'assistant') AND NEW.status = 'complete' THEN
       SELECT ${cap ? `left(${searchText('NEW')}, ${cap})` : searchText('NEW')} INTO t;
       IF t IS NOT NULL THEN
         INSERT INTO message_search (message_id, conversation_id, text) VALUES (NEW.id, NEW.conversation_id, t);
       END IF;
     END IF;
     RETURN NULL;
   END $$`;

const MESSAGE_SEARCH_UP = [
  `CREATE TABLE message_search (
     id BIGSERIAL PRIMARY KEY,
     message_id TEXT NOT NULL UNIQUE,
     conversation_id TEXT NOT NULL,
     text TEXT NOT NULL)`,
  'CREATE INDEX message_search_conversation ON message_search (conversation_id)',
  // Not every server lets us create an extension: then search scans (see the header).
  `DO $$ BEGIN
     CREATE EXTENSION IF NOT EXISTS pg_trgm;
   EXCEPTION WHEN OTHERS THEN
     RAISE NOTICE 'pg_trgm unavailable (%): conversation search scans message_search', SQLERRM;
   END $$`,
  `DO $$ BEGIN
     IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm') THEN
       CREATE INDEX message_search_text_trgm ON message_search USING gin (text gin_trgm_ops);
     END IF;
   END $$`,
  indexFunction('CREATE'),
  // As on SQLite: a streaming reply saved again and again is indexed once, when complete.
  `CREATE TRIGGER messages_search_ai AFTER INSERT ON messages FOR EACH ROW
     WHEN (NEW.role IN ('user', 'assistant') AND NEW.status = 'complete') EXECUTE FUNCTION liveagent_index_message()`,
  `CREATE TRIGGER messages_search_au AFTER UPDATE OF content, status ON messages FOR EACH ROW
     WHEN (NEW.role IN ('user', 'assistant') AND (OLD.content IS DISTINCT FROM NEW.content OR OLD.status IS DISTINCT FROM NEW.status))
     EXECUTE FUNCTION liveagent_index_message()`,
  'CREATE TRIGGER messages_search_ad AFTER DELETE ON messages FOR EACH ROW EXECUTE FUNCTION liveagent_index_message()',
  `INSERT INTO message_search (message_id, conversation_id, text)
     SELECT id, conversation_id, t FROM (SELECT m.id, m.conversation_id, m.ordinal, ${searchText('m')} AS t FROM messages m
       WHERE m.role IN ('user', 'assistant') AND m.status = 'complete') x
     WHERE t IS NOT NULL ORDER BY conversation_id, ordinal`,
  // The list's order (pinned first, then newest) from an index.
  `CREATE INDEX conversations_pinned_updated ON conversations ((COALESCE((meta::jsonb -> 'pinned') = 'true'::jsonb, false)) DESC, updated_at DESC, id DESC)`,
];

const PG_MIGRATIONS: DialectMigrations = {
  '0005_message_search': {
    async up(knex) {
      for (const sql of MESSAGE_SEARCH_UP) await knex.raw(sql);
    },
    async down(knex) {
      await knex.raw('DROP INDEX IF EXISTS conversations_pinned_updated');
      for (const t of ['messages_search_ai', 'messages_search_au', 'messages_search_ad']) await knex.raw(`DROP TRIGGER IF EXISTS ${t} ON messages`);
      await knex.raw('DROP FUNCTION IF EXISTS liveagent_index_message()');
      await knex.raw('DROP TABLE IF EXISTS message_search');
    },
  },
  '0007_search_text_cap': {
    async up(knex) {
      await knex.raw(indexFunction('CREATE OR REPLACE', SEARCH_TEXT_MAX));
      await knex.raw(`UPDATE message_search SET text = left(text, ${SEARCH_TEXT_MAX}) WHERE length(text) > ${SEARCH_TEXT_MAX}`);
    },
    async down(knex) {
      await knex.raw(indexFunction('CREATE OR REPLACE'));
    },
  },
};

/** Names of the migrations PostgreSQL runs in its own dialect. */
export const POSTGRES_OVERRIDDEN = Object.keys(PG_MIGRATIONS);

export const migrationSource = historyMigrationSource(PG_MIGRATIONS);
