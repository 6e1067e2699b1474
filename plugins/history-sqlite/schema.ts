/**
 * The schema, as knex migrations kept in code: a migration source that reads nothing from disk
 * (no migrations folder, no loadModules) keeps working when the host is bundled.
 *
 * Shaped for compaction: a conversation's messages belong to segments; compaction starts a new
 * segment (with a summary of what came before) and makes it the active one, which is what
 * `loadHistory` returns. Ordinals are per conversation and shared by every segment, so the
 * whole transcript stays in order. Timestamps are epoch milliseconds; JSON columns are text.
 */
import type { Knex } from 'knex';

interface InCodeMigration {
  name: string;
  up(knex: Knex): Promise<void>;
  down(knex: Knex): Promise<void>;
}

const MIGRATIONS: InCodeMigration[] = [
  {
    name: '0001_history',
    async up(knex) {
      await knex.schema.createTable('conversations', (t) => {
        t.string('id').primary();
        t.text('title').nullable();
        t.bigInteger('created_at').notNullable();
        t.bigInteger('updated_at').notNullable();
        t.bigInteger('last_seq').notNullable().defaultTo(0);
        // No foreign key: segments point at their conversation, and a cycle would make inserts order-dependent.
        t.string('active_segment_id').notNullable();
        t.string('provider').nullable();
        t.string('model').nullable();
        t.string('mode').nullable();
        t.text('workdir').nullable();
        t.text('meta').notNullable().defaultTo('{}');
        t.index(['updated_at'], 'conversations_updated_at');
      });
      await knex.schema.createTable('segments', (t) => {
        t.string('id').primary();
        t.string('conversation_id').notNullable().references('id').inTable('conversations').onDelete('CASCADE');
        t.string('parent_segment_id').nullable().references('id').inTable('segments').onDelete('SET NULL');
        t.text('summary').nullable();
        t.bigInteger('created_at').notNullable();
        t.index(['conversation_id'], 'segments_conversation');
        t.index(['parent_segment_id'], 'segments_parent');
      });
      await knex.schema.createTable('messages', (t) => {
        t.string('id').primary();
        t.string('conversation_id').notNullable().references('id').inTable('conversations').onDelete('CASCADE');
        t.string('segment_id').notNullable().references('id').inTable('segments').onDelete('CASCADE');
        t.integer('ordinal').notNullable();
        t.string('role').notNullable().checkIn(['user', 'assistant', 'tool']);
        // Content blocks (text, thinking, tool_call, tool_result, image, hosted_search) stored as given.
        t.text('content').notNullable();
        t.string('status').notNullable().checkIn(['partial', 'complete']);
        t.string('provider').nullable();
        t.string('model').nullable();
        t.string('stop_reason').nullable();
        t.text('error_message').nullable();
        t.text('edited_files').nullable();
        t.text('usage').nullable();
        t.text('meta').nullable();
        t.bigInteger('created_at').notNullable();
        t.bigInteger('updated_at').notNullable();
        t.unique(['conversation_id', 'ordinal'], { indexName: 'messages_conversation_ordinal' });
        t.index(['segment_id', 'ordinal'], 'messages_segment_ordinal');
      });
      await knex.schema.createTable('usage', (t) => {
        t.increments('id');
        t.string('conversation_id').notNullable().references('id').inTable('conversations').onDelete('CASCADE');
        // Usage is accounting: tokens were spent even if the message is truncated away later.
        t.string('message_id').nullable().references('id').inTable('messages').onDelete('SET NULL');
        t.string('run_id').notNullable();
        t.integer('round').notNullable();
        t.string('provider').notNullable();
        t.string('model').notNullable();
        t.integer('input_tokens').notNullable().defaultTo(0);
        t.integer('output_tokens').notNullable().defaultTo(0);
        t.integer('cache_read_tokens').notNullable().defaultTo(0);
        t.integer('cache_write_tokens').notNullable().defaultTo(0);
        t.integer('reasoning_tokens').notNullable().defaultTo(0);
        t.bigInteger('created_at').notNullable();
        t.index(['conversation_id'], 'usage_conversation');
        t.index(['message_id'], 'usage_message');
      });
    },
    async down(knex) {
      for (const table of ['usage', 'messages', 'segments', 'conversations']) await knex.schema.dropTableIfExists(table);
    },
  },
  {
    // The compaction checkpoint that opened a segment (kind, covered count, file ledger, pruned
    // tool outputs, who summarized, tokens before/after), as JSON. Null for segments made before
    // it existed or by startSegment with only a summary.
    name: '0002_segment_checkpoints',
    async up(knex) {
      await knex.schema.alterTable('segments', (t) => {
        t.text('checkpoint').nullable();
      });
    },
    async down(knex) {
      await knex.schema.alterTable('segments', (t) => {
        t.dropColumn('checkpoint');
      });
    },
  },
  {
    // A high-water mark for event sequence numbers, reserved ahead of use when a run loads the
    // history and released to last_seq when the run ends cleanly: after a kill -9 the next run
    // starts above every number the dead one could have emitted, so seq never repeats.
    name: '0003_seq_reserved',
    async up(knex) {
      await knex.schema.alterTable('conversations', (t) => {
        t.bigInteger('seq_reserved').notNullable().defaultTo(0);
      });
    },
    async down(knex) {
      await knex.schema.alterTable('conversations', (t) => {
        t.dropColumn('seq_reserved');
      });
    },
  },
  {
    // Who named the conversation: 'user' (a rename) or 'auto' (the title plugin). A generated
    // title never replaces a user's; a title stored before this column existed counts as the user's.
    name: '0004_title_source',
    async up(knex) {
      await knex.schema.alterTable('conversations', (t) => {
        t.string('title_source').nullable();
      });
    },
    async down(knex) {
      await knex.schema.alterTable('conversations', (t) => {
        t.dropColumn('title_source');
      });
    },
  },
  {
    // Full-text search over what people wrote: the text blocks of user and assistant messages,
    // one row per message in message_search (an integer key, since a message's own rowid is not
    // stable across VACUUM), indexed by an external-content FTS5 table with the trigram tokenizer
    // (substring matching, as the LIKE search before it, CJK included). Triggers keep it in step
    // with every insert, content update and delete (truncation and cascades included), so no
    // writer has to know about it; existing messages are backfilled here.
    name: '0005_message_search',
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
  {
    // What each round cost at the model's prices when it ran (Usage.costUsd; NULL when unpriced),
    // so a conversation's spending is a sum, not a re-pricing at today's prices.
    name: '0006_usage_cost',
    async up(knex) {
      await knex.schema.alterTable('usage', (t) => t.double('cost_usd').nullable());
    },
    async down(knex) {
      await knex.schema.alterTable('usage', (t) => t.dropColumn('cost_usd'));
    },
  },
];

/** The searchable text of a message row (`m`): its text blocks, one per line; NULL when there is none. */
const searchText = (m: string) =>
  `(SELECT group_concat(json_extract(b.value, '$.text'), char(10)) FROM json_each(${m}.content) b
     WHERE json_extract(b.value, '$.type') = 'text' AND json_extract(b.value, '$.text') <> '')`;

const indexMessage = (m: string, when = '1') =>
  `INSERT INTO message_search (message_id, conversation_id, text)
     SELECT ${m}.id, ${m}.conversation_id, t FROM (SELECT ${searchText(m)} AS t) WHERE t IS NOT NULL AND ${when};`;

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
  `CREATE TRIGGER messages_search_ai AFTER INSERT ON messages
     WHEN new.role IN ('user', 'assistant') AND new.status = 'complete' AND instr(new.content, '"type":"text"') > 0 BEGIN
     ${indexMessage('new')}
   END`,
  `CREATE TRIGGER messages_search_au AFTER UPDATE OF content, status ON messages
     WHEN new.role IN ('user', 'assistant') AND (old.content IS NOT new.content OR old.status IS NOT new.status) BEGIN
     DELETE FROM message_search WHERE message_id = old.id;
     ${indexMessage('new', "new.status = 'complete'")}
   END`,
  `CREATE TRIGGER messages_search_ad AFTER DELETE ON messages BEGIN
     DELETE FROM message_search WHERE message_id = old.id;
   END`,
  `INSERT INTO message_search (message_id, conversation_id, text)
     SELECT m.id, m.conversation_id, t FROM (SELECT m.id, m.conversation_id, ${searchText('m')} AS t FROM messages m WHERE m.role IN ('user', 'assistant') ORDER BY m.rowid) m
     WHERE t IS NOT NULL`,
  // The list's order (pinned first, then newest) read from an index, not a sort of every row.
  `CREATE INDEX conversations_pinned_updated ON conversations ((json_extract(meta, '$.pinned') IS 1) DESC, updated_at DESC, id DESC)`,
];

export const migrationSource: Knex.MigrationSource<InCodeMigration> = {
  getMigrations: async () => MIGRATIONS,
  getMigrationName: (m) => m.name,
  getMigration: async (m) => m,
};
