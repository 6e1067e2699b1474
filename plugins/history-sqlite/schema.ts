/**
 * The schema on SQLite: lib/history-shared/migrations.ts, with the migrations written in SQLite's
 * dialect here.
 *
 * 0005 (message search): one row per message in message_search (an integer key, since a
 * message's own rowid is not stable across VACUUM), indexed by an external-content FTS5 table
 * with the trigram tokenizer (substring matching, as the LIKE search before it, CJK included).
 * Triggers keep it in step with every insert, content update and delete (truncation and
 * cascades included), so no writer has to know about it; existing messages are backfilled.
 */
import { historyMigrationSource, SEARCH_TEXT_MAX } from '../../lib/history-shared/migrations.js';

/** The searchable text of a message row (`m`): its text blocks, one per line; NULL when there is none. */
const searchText = (m: string) =>
  `(SELECT group_concat(json_extract(b.value, '$.text'), char(10)) FROM json_each(${m}.content) b
     WHERE json_extract(b.value, '$.type') = 'text' AND json_extract(b.value, '$.text') <> '')`;

const indexMessage = (m: string, when = '1', cap?: number) =>
  `INSERT INTO message_search (message_id, conversation_id, text)
     SELECT ${m}.id, ${m}.conversation_id, ${cap ? `substr(t, 1, ${cap})` : 't'} FROM (SELECT ${searchText(m)} AS t) WHERE t IS NOT NULL AND ${when};`;
/** The two triggers that index a message row, with the text capped at `cap` characters (0007) or whole (0005). */
const indexTriggers = (cap?: number) => [
  `CREATE TRIGGER messages_search_ai AFTER INSERT ON messages
     WHEN new.role IN ('user', 'assistant') AND new.status = 'complete' AND instr(new.content, '"type":"text"') > 0 BEGIN
     ${indexMessage('new', '1', cap)}
   END`,
  `CREATE TRIGGER messages_search_au AFTER UPDATE OF content, status ON messages
     WHEN new.role IN ('user', 'assistant') AND (old.content IS NOT new.content OR old.status IS NOT new.status) BEGIN
     DELETE FROM message_search WHERE message_id = old.id;
     ${indexMessage('new', "new.status = 'complete'", cap)}
   END`,
];

const MESSAGE_SEARCH_SQL = [
  `CREATE TABLE message_search (
     id INTEGER PRIMARY KEY,
     message_id TEXT NOT NULL UNIQUE,
     conversation_id TEXT NOT NULL,
     text TEXT NOT NULL)`,
  'CREATE INDEX message_search_conversation ON message_search (conversation_id)',
  `CREATE VIRTUAL TABLE message_fts USING fts5(text, content = 'message_search', content_rowid = 'id', tokenize = 'trigram')`,
  `CREATE TRIGGER message_search_ai AFTER INSERT ON message_search BEGIN
     INSERT INTO message_fts (rowid, text) VALUES (new.id, new.text);
   END`,
  `CREATE TRIGGER message_search_ad AFTER DELETE ON message_search BEGIN
     INSERT INTO message_fts (message_fts, rowid, text) VALUES ('delete', old.id, old.text);
   END`,
  `CREATE TRIGGER message_search_au AFTER UPDATE ON message_search BEGIN
     INSERT INTO message_fts (message_fts, rowid, text) VALUES ('delete', old.id, old.text);
     INSERT INTO message_fts (rowid, text) VALUES (new.id, new.text);
   END`,
  // A streaming reply is saved again and again while partial (an upsert's UPDATE): it is indexed
  // once, when it is complete, not re-indexed at every progress save.
  // `instr` first: a tool loop's rounds (tool calls only) skip json_each, which costs more than
  // the rest of the insert. The content is JSON.stringify's output, so a text block reads exactly so.
  ...indexTriggers(),
  `CREATE TRIGGER messages_search_ad AFTER DELETE ON messages BEGIN
     DELETE FROM message_search WHERE message_id = old.id;
   END`,
  `INSERT INTO message_search (message_id, conversation_id, text)
     SELECT m.id, m.conversation_id, t FROM (SELECT m.id, m.conversation_id, ${searchText('m')} AS t FROM messages m WHERE m.role IN ('user', 'assistant') ORDER BY m.rowid) m
     WHERE t IS NOT NULL`,
  // The list's order (pinned first, then newest) read from an index, not a sort of every row.
  `CREATE INDEX conversations_pinned_updated ON conversations ((json_extract(meta, '$.pinned') IS 1) DESC, updated_at DESC, id DESC)`,
];

export const migrationSource = historyMigrationSource({
  '0005_message_search': {
    async up(knex) {
      for (const sql of MESSAGE_SEARCH_SQL) await knex.raw(sql);
    },
    async down(knex) {
      await knex.raw('DROP INDEX IF EXISTS conversations_pinned_updated');
      for (const t of ['messages_search_ai', 'messages_search_au', 'messages_search_ad', 'message_search_ai', 'message_search_ad', 'message_search_au']) await knex.raw(`DROP TRIGGER IF EXISTS ${t}`);
      await knex.raw('DROP TABLE IF EXISTS message_fts');
      await knex.raw('DROP TABLE IF EXISTS message_search');
    },
  },
  '0007_search_text_cap': {
    async up(knex) {
      await knex.raw('DROP TRIGGER IF EXISTS messages_search_ai');
      await knex.raw('DROP TRIGGER IF EXISTS messages_search_au');
      for (const sql of indexTriggers(SEARCH_TEXT_MAX)) await knex.raw(sql);
      // Rows indexed whole before: cut too (the FTS table follows through message_search_au).
      await knex.raw(`UPDATE message_search SET text = substr(text, 1, ${SEARCH_TEXT_MAX}) WHERE length(text) > ${SEARCH_TEXT_MAX}`);
    },
    async down(knex) {
      await knex.raw('DROP TRIGGER IF EXISTS messages_search_ai');
      await knex.raw('DROP TRIGGER IF EXISTS messages_search_au');
      for (const sql of indexTriggers()) await knex.raw(sql);
    },
  },
});
