/**
 * The history schema, as knex migrations kept in code, for both backends: a migration source
 * that reads nothing from disk (no migrations folder, no loadModules) keeps working when the host
 * is bundled. Both run the same migrations in the same order under the same names, so one
 * knex_migrations history describes either database. Those built with knex's schema builder are
 * written once, here; a migration in raw SQL is a dialect's ({@link DialectMigrations}: the
 * backend's schema.ts writes it, and the type makes a backend that lacks one fail to compile).
 *
 * Shaped for compaction: a conversation's messages belong to segments; compaction starts a new
 * segment (with a summary of what came before) and makes it the active one, which is what
 * `loadHistory` returns. Ordinals are per conversation and shared by every segment, so the
 * whole transcript stays in order. Timestamps are epoch milliseconds; JSON columns are text.
 */
import type { Knex } from 'knex';

export interface InCodeMigration {
  name: string;
  up(knex: Knex): Promise<void>;
  down(knex: Knex): Promise<void>;
}

export type MigrationBody = Omit<InCodeMigration, 'name'>;

/** The migrations written in each dialect's SQL, by name. */
export const DIALECT_MIGRATIONS = ['0005_message_search', '0007_search_text_cap'] as const;

/**
 * How much of a message's text the search index holds: its first 64K characters. Indexing costs
 * grow with the text (a trigram index of a 385 KB reply took ~37 ms on SQLite, the row itself 5),
 * and words beyond this in one reply are rarely what anyone searches for.
 */
export const SEARCH_TEXT_MAX = 65_536;
export type DialectMigrationName = (typeof DIALECT_MIGRATIONS)[number];
export type DialectMigrations = Record<DialectMigrationName, MigrationBody>;

const MIGRATIONS: Array<InCodeMigration | DialectMigrationName> = [
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
  // Full-text search over what people wrote (the text blocks of user and assistant messages, in
  // message_search): raw SQL (triggers, an index of each dialect's kind), so each dialect writes it.
  '0005_message_search',
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
  // The search index holds the first SEARCH_TEXT_MAX characters of a message (triggers, so each dialect writes it).
  '0007_search_text_cap',
  {
    // The run and round of an assistant message that carries its round's usage itself (SQLite's
    // round commit writes no usage row: lib/history-shared/rows.ts usageOfMessageRow). Null on
    // every other row, and on rows stored before: their usage rows stay where they are.
    name: '0008_message_round',
    async up(knex) {
      await knex.schema.alterTable('messages', (t) => {
        t.string('run_id').nullable();
        t.integer('round').nullable();
      });
    },
    async down(knex) {
      await knex.schema.alterTable('messages', (t) => {
        t.dropColumn('run_id');
        t.dropColumn('round');
      });
    },
  },
];

/** Every migration in order, the dialect's own in their places. */
export function historyMigrationSource(dialect: DialectMigrations): Knex.MigrationSource<InCodeMigration> {
  const migrations = MIGRATIONS.map((m): InCodeMigration => (typeof m === 'string' ? { name: m, ...dialect[m] } : m));
  return {
    getMigrations: async () => migrations,
    getMigrationName: (m) => m.name,
    getMigration: async (m) => m,
  };
}
