/**
 * Issue 18 item 11, the store side: conversation search over message text through the FTS5
 * index (kept in step by triggers on insert, streaming update, truncation and delete), a
 * snippet of the match, hostile queries taken literally, pinned conversations listed first,
 * and the migration on a database made before it (existing messages are found after it).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import createKnex from 'knex';
import { afterEach, describe, expect, it } from 'vitest';
import type { Plugin, Provider } from '../../plugin-api.js';
import { createKernel, type Kernel } from '../../core/kernel.js';
import historySqlite from '../../plugins/history-sqlite/index.js';
import { snippetOf } from '../../lib/history-shared/search.js';
import { SEARCH_TEXT_MAX } from '../../lib/history-shared/migrations.js';
import { migrationSource } from '../../plugins/history-sqlite/schema.js';
import { HISTORY_SERVICE, type HistoryService } from '../../plugins/history-sqlite/service.js';
import { fakeProvider } from '../helpers/fake-provider.js';

const kernels: Kernel[] = [];
const homes: string[] = [];
afterEach(async () => {
  for (const k of kernels.splice(0)) await k.shutdown();
  for (const h of homes.splice(0)) fs.rmSync(h, { recursive: true, force: true });
});

function tmpHome() {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'h18b-search-'));
  homes.push(home);
  return home;
}

async function boot(home: string, provider: Provider = fakeProvider((req) => ({ text: `reply to ${textOf(req.messages.at(-1)!.content)}` }))) {
  const providerPlugin: Plugin = { name: 'test-provider', apply: (ctx) => void ctx.registerProvider(provider) };
  const kernel = await createKernel({ home, plugins: [historySqlite, providerPlugin], settings: {}, thirdParty: false });
  kernels.push(kernel);
  return { kernel, history: kernel.services.get<HistoryService>(HISTORY_SERVICE)! };
}

const text = (t: string) => [{ type: 'text' as const, text: t }];
const textOf = (content: Array<{ type: string; text?: string }>) => content.map((b) => b.text ?? '').join('');

describe('history search (FTS5)', () => {
  it('matches message text and titles by every word, with a snippet, and takes hostile queries literally', async () => {
    const { kernel, history } = await boot(tmpHome());
    const a = kernel.runtime.startRun({ input: text('How do I migrate the SQLite schema for the zebra table?'), mode: 'text' });
    await a.result;
    const b = kernel.runtime.startRun({ input: text('Tell me about "quoted" NEAR(things) * and (unbalanced'), mode: 'text' });
    await b.result;
    const c = kernel.runtime.startRun({ input: text('東京の天気はどうですか'), mode: 'text' });
    await c.result;
    await history.renameConversation(c.conversationId, 'Weather in Tokyo');

    const ids = async (search: string) => (await history.listConversations({ search })).map((x) => x.id);
    expect(await ids('zebra')).toEqual([a.conversationId]);
    expect(await ids('ZEBRA sqlite')).toEqual([a.conversationId]);
    expect(await ids('zebra quoted')).toEqual([]);
    // A word of the reply matches too (assistant text), in every conversation.
    expect((await ids('reply to')).sort()).toEqual([a.conversationId, b.conversationId, c.conversationId].sort());
    expect(await ids('天気')).toEqual([c.conversationId]);
    expect(await ids('tokyo')).toEqual([c.conversationId]);

    const [hit] = await history.listConversations({ search: 'zebra' });
    expect(hit!.snippet).toContain('zebra');
    // Title-only matches have no snippet.
    expect((await history.listConversations({ search: 'Tokyo' }))[0]!.snippet).toBeUndefined();

    for (const q of ['"', '""', '"quoted', 'NEAR(things', '*', 'a*', '(unbalanced', ')', 'AND', 'OR NOT', 'NEAR', "'; DROP TABLE messages; --", '\\', '%_']) {
      await expect(history.listConversations({ search: q }), q).resolves.toBeInstanceOf(Array);
    }
    expect(await ids('"quoted"')).toEqual([b.conversationId]);
    expect(await ids('NEAR(things)')).toEqual([b.conversationId]);
    expect(await ids('(unbalanced')).toEqual([b.conversationId]);
    expect(await ids('*')).toEqual([b.conversationId]);
  });

  it('indexes the first SEARCH_TEXT_MAX characters of a message: words there are found, words past it are not', async () => {
    const { kernel, history } = await boot(tmpHome(), fakeProvider(() => ({ text: 'ok' })));
    const long = `alphaword ${'x'.repeat(SEARCH_TEXT_MAX)} omegaword`;
    const run = kernel.runtime.startRun({ input: text(long), mode: 'text' });
    await run.result;
    const ids = async (search: string) => (await history.listConversations({ search })).map((x) => x.id);
    expect(await ids('alphaword')).toEqual([run.conversationId]);
    expect(await ids('omegaword')).toEqual([]);
    // The message itself is stored whole.
    const detail = await history.getConversation(run.conversationId);
    expect(textOf(detail!.messages[0]!.content)).toBe(long);
  });

  it('follows truncation, streaming updates and deletes', async () => {
    const { kernel, history } = await boot(tmpHome());
    const run = kernel.runtime.startRun({ input: text('first apricot'), mode: 'text' });
    await run.result;
    const id = run.conversationId;
    await kernel.runtime.startRun({ conversationId: id, input: text('second blueberry'), mode: 'text' }).result;
    expect(await history.listConversations({ search: 'blueberry' })).toHaveLength(1);
    const second = (await history.getConversation(id))!.messages[2]!;
    await kernel.runtime.startRun({ conversationId: id, input: text('third cherry'), truncateFromMessageId: second.id, mode: 'text' }).result;
    expect(await history.listConversations({ search: 'blueberry' })).toEqual([]);
    expect(await history.listConversations({ search: 'cherry' })).toHaveLength(1);
    expect(await history.deleteConversation(id)).toBe(true);
    expect(await history.listConversations({ search: 'apricot' })).toEqual([]);
  });

  it('lists pinned conversations first, whatever their age', async () => {
    const { kernel, history } = await boot(tmpHome());
    const ids: string[] = [];
    for (const t of ['one', 'two', 'three']) {
      const r = kernel.runtime.startRun({ input: text(t), mode: 'text' });
      await r.result;
      ids.push(r.conversationId);
    }
    expect(await history.setConversationMeta(ids[0]!, { pinned: true })).toEqual({ pinned: true });
    const list = await history.listConversations();
    expect(list.map((c) => c.id)).toEqual([ids[0], ids[2], ids[1]]);
    expect(list.map((c) => !!c.pinned)).toEqual([true, false, false]);
    expect((await history.listConversations({ limit: 1 }))[0]!.id).toBe(ids[0]);
    await history.setConversationMeta(ids[0]!, { pinned: null });
    expect((await history.listConversations())[0]!.id).toBe(ids[2]);
  });

  it('a database made before the index is backfilled on upgrade', async () => {
    const home = tmpHome();
    const file = path.join(home, 'liveagent.db');
    // The schema as it was before 0005: the first four migrations only.
    const all = await migrationSource.getMigrations([]);
    const old = createKnex({ client: 'better-sqlite3', connection: { filename: file }, useNullAsDefault: true });
    await old.migrate.latest({ tableName: 'knex_migrations', migrationSource: { ...migrationSource, getMigrations: async () => all.filter((m) => m.name < '0005') } });
    await old.destroy();
    const db = new Database(file);
    db.pragma('journal_mode = WAL');
    const now = Date.now();
    db.prepare("INSERT INTO conversations (id, created_at, updated_at, active_segment_id) VALUES ('c_old', ?, ?, 's_old')").run(now, now);
    db.prepare("INSERT INTO segments (id, conversation_id, created_at) VALUES ('s_old', 'c_old', ?)").run(now);
    const insert = db.prepare("INSERT INTO messages (id, conversation_id, segment_id, ordinal, role, content, status, created_at, updated_at) VALUES (?, 'c_old', 's_old', ?, ?, ?, 'complete', ?, ?)");
    insert.run('m1', 1, 'user', JSON.stringify(text('an old note about walruses')), now, now);
    insert.run('m2', 2, 'assistant', JSON.stringify([{ type: 'thinking', thinking: 'hidden narwhal' }, ...text('walruses are large')]), now, now);
    insert.run('m3', 3, 'tool', JSON.stringify([{ type: 'tool_result', toolCallId: 't', content: text('tool output narwhal') }]), now, now);
    expect(db.prepare("SELECT name FROM sqlite_master WHERE name = 'message_fts'").get()).toBeUndefined();
    db.close();

    const { history } = await boot(home);
    const found = await history.listConversations({ search: 'walrus' });
    expect(found.map((c) => c.id)).toEqual(['c_old']);
    expect(found[0]!.snippet).toBe('walruses are large');
    // Thinking and tool output are not indexed.
    expect(await history.listConversations({ search: 'narwhal' })).toEqual([]);
  });

  it('two connections writing at once keep the index whole', async () => {
    const home = tmpHome();
    const { kernel, history } = await boot(home);
    await kernel.runtime.startRun({ input: text('seed message'), mode: 'text' }).result;
    // A second process's writes (the CLI) land through their own connection and the triggers.
    const other = await boot(home);
    await Promise.all([
      ...Array.from({ length: 5 }, (_, i) => kernel.runtime.startRun({ input: text(`alpha writer ${i}`), mode: 'text' }).result),
      ...Array.from({ length: 5 }, (_, i) => other.kernel.runtime.startRun({ input: text(`omega writer ${i}`), mode: 'text' }).result),
    ]);
    expect(await history.listConversations({ search: 'alpha writer' })).toHaveLength(5);
    expect(await history.listConversations({ search: 'omega writer' })).toHaveLength(5);
    const db = new Database(path.join(home, 'liveagent.db'));
    try {
      // Throws when the index and its content table disagree.
      db.prepare("INSERT INTO message_fts (message_fts, rank) VALUES ('integrity-check', 1)").run();
      const counted = db.prepare("SELECT COUNT(*) AS n FROM messages WHERE role IN ('user', 'assistant')").get() as { n: number };
      const indexed = db.prepare('SELECT COUNT(*) AS n FROM message_search').get() as { n: number };
      expect(indexed.n).toBe(counted.n);
    } finally {
      db.close();
    }
  });

  it('snippets start on a word near the match', () => {
    const long = `${'lorem ipsum '.repeat(20)}the needle sits here ${'dolor sit '.repeat(30)}`;
    const s = snippetOf(long, ['needle']);
    expect(s.startsWith('…')).toBe(true);
    expect(s.endsWith('…')).toBe(true);
    expect(s).toContain('needle');
    expect(snippetOf('short needle', ['needle'])).toBe('short needle');
  });
});
