/**
 * The history store's behaviour on both backends (issue 19 item 1): the same suite runs on the
 * embedded SQLite file and on a throwaway PostgreSQL cluster (tests/helpers/postgres.ts), booted
 * the way a host boots them (history-sqlite and history-postgres both loaded; the database URL
 * decides). Then what only PostgreSQL has: its dialect of the search migration, and how the URL
 * is chosen and refused. Without a PostgreSQL the PostgreSQL half is skipped with one line.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import createKnex from 'knex';
import { afterEach, describe, expect, it } from 'vitest';
import type { LifecycleEvent, Message, Plugin, Provider, ProviderEvent, Settings } from '../../plugin-api.js';
import { createKernel, type Kernel } from '../../core/kernel.js';
import historyPostgres from '../../plugins/history-postgres/index.js';
import { migrationSource as pgMigrations, POSTGRES_OVERRIDDEN } from '../../plugins/history-postgres/schema.js';
import { mergePatch } from '../../plugins/history-postgres/store.js';
import historySqlite from '../../plugins/history-sqlite/index.js';
import { migrationSource as sqliteMigrations } from '../../plugins/history-sqlite/schema.js';
import { HISTORY_SERVICE, type HistoryService } from '../../plugins/history-sqlite/service.js';
import { SEQ_RESERVE } from '../../lib/history-shared/store-rules.js';
import { echoToolPlugin } from '../helpers/echo-tool.js';
import { fakeProvider } from '../helpers/fake-provider.js';
import { postgresSkip, usePostgres } from '../helpers/postgres.js';
import { collectAll } from '../helpers/streams.js';

const pg = usePostgres();

const kernels: Kernel[] = [];
const homes: string[] = [];
afterEach(async () => {
  for (const k of kernels.splice(0)) await k.shutdown();
  for (const h of homes.splice(0)) fs.rmSync(h, { recursive: true, force: true });
});

function tmpHome() {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'h19-home-'));
  homes.push(home);
  return home;
}

const text = (t: string) => [{ type: 'text' as const, text: t }];
const textOf = (m: Message) => m.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const collect = collectAll<LifecycleEvent>;

interface Backend {
  name: 'sqlite' | 'postgres';
  skip: boolean;
  /** Settings that select this backend, for a fresh store. */
  fresh(): Promise<Settings>;
}

const backends: Backend[] = [
  { name: 'sqlite', skip: false, fresh: async () => ({}) },
  { name: 'postgres', skip: !!postgresSkip, fresh: async () => ({ history: { url: await pg.cluster().createDatabase() } }) },
];

async function boot(home: string, provider: Provider, settings: Settings, extra: Plugin[] = []) {
  const providerPlugin: Plugin = { name: 'test-provider', apply: (ctx) => void ctx.registerProvider(provider) };
  const kernel = await createKernel({ home, plugins: [historySqlite, historyPostgres, providerPlugin, ...extra], settings, thirdParty: false });
  kernels.push(kernel);
  expect(kernel.failures).toEqual([]);
  return { kernel, history: kernel.services.get<HistoryService>(HISTORY_SERVICE)! };
}

async function stop(kernel: Kernel) {
  kernels.splice(kernels.indexOf(kernel), 1);
  await kernel.shutdown();
}

const echo = fakeProvider;

for (const backend of backends) {
  describe.skipIf(backend.skip)(`history on ${backend.name}`, () => {
    it('saves and loads rounds across kernel restarts, with seq rising and the run facts stored', async () => {
      const home = tmpHome();
      const settings = await backend.fresh();
      const first = await boot(home, echo([{ text: ['Hel', 'lo'] }]), settings);
      const run1 = first.kernel.runtime.startRun({ input: text('hi'), mode: 'text' });
      const events1 = await collect(run1.events);
      expect((await run1.result).status).toBe('completed');
      await stop(first.kernel);
      expect(fs.existsSync(path.join(home, 'liveagent.db'))).toBe(backend.name === 'sqlite');

      const provider2 = echo([{ text: 'again' }]);
      const second = await boot(home, provider2, settings);
      const run2 = second.kernel.runtime.startRun({ conversationId: run1.conversationId, input: text('more'), mode: 'text' });
      const events2 = await collect(run2.events);
      expect((await run2.result).status).toBe('completed');
      expect(provider2.requests[0]!.messages.map((m) => [m.role, textOf(m)])).toEqual([['user', 'hi'], ['assistant', 'Hello'], ['user', 'more']]);
      expect(events2[0]!.seq).toBe(events1.at(-1)!.seq + 1);
      const stored = (await second.history.getConversation(run1.conversationId))!;
      expect(stored.messages.map((m) => [m.role, textOf(m), m.status, m.ordinal])).toEqual([
        ['user', 'hi', 'complete', 1],
        ['assistant', 'Hello', 'complete', 2],
        ['user', 'more', 'complete', 3],
        ['assistant', 'again', 'complete', 4],
      ]);
      expect(stored.lastSeq).toBe(events2.at(-1)!.seq);
      expect(stored).toMatchObject({ provider: 'fake', model: 'fake-1', mode: 'text', messageCount: 4 });
      expect(typeof stored.createdAt).toBe('number');
    });

    it('shows a partial reply mid-stream, then commits a tool round with its usage', async () => {
      const settings = await backend.fresh();
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      const slow: Provider = {
        id: 'slow',
        displayName: 'Slow',
        defaultModel: 'slow-1',
        isConfigured: () => true,
        async *stream(): AsyncGenerator<ProviderEvent> {
          yield { type: 'block_start', index: 0, block: { type: 'text' } };
          yield { type: 'text_delta', index: 0, text: 'part ' };
          await sleep(60);
          yield { type: 'text_delta', index: 0, text: 'one ' };
          await gate;
          yield { type: 'text_delta', index: 0, text: 'done' };
          yield { type: 'block_end', index: 0, block: { type: 'text', text: 'part one done' } };
          yield { type: 'usage', usage: { inputTokens: 3, outputTokens: 4 } };
          yield { type: 'done', stopReason: 'end' };
        },
      };
      const { kernel, history } = await boot(tmpHome(), slow, { ...settings, runtime: { persistIntervalMs: 25 } });
      const run = kernel.runtime.startRun({ input: text('stream please'), mode: 'text' });
      for (let i = 0; ; i++) {
        const reply = (await history.getConversation(run.conversationId))?.messages[1];
        if (reply && textOf(reply) === 'part one ') {
          expect(reply.status).toBe('partial');
          break;
        }
        if (i > 300) throw new Error('no partial reply stored');
        await sleep(10);
      }
      release();
      expect((await run.result).status).toBe('completed');
      const done = (await history.getConversation(run.conversationId))!.messages[1]!;
      expect([done.status, textOf(done), done.usage]).toEqual(['complete', 'part one done', { inputTokens: 3, outputTokens: 4 }]);

      const tools = await boot(tmpHome(), echo([{ toolCalls: [{ id: 't1', name: 'Echo', input: { text: 'a' } }] }, { text: 'finished' }]), settings, [echoToolPlugin]);
      const toolRun = tools.kernel.runtime.startRun({ input: text('go'), mode: 'tools', workdir: os.tmpdir() });
      const result = await toolRun.result;
      const c = (await tools.history.getConversation(toolRun.conversationId))!;
      expect(c.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
      expect(c.messages.slice(1).map(({ status, segmentId, ordinal, updatedAt, ...m }) => m)).toEqual(result.messages);
      const usage = await tools.history.getUsage(toolRun.conversationId);
      expect(usage.map((u) => [u.messageId, u.round, u.inputTokens, u.outputTokens])).toEqual([
        [c.messages[1]!.id, 1, 10, 5],
        [c.messages[3]!.id, 2, 10, 5],
      ]);
    });

    it('truncates, lists, searches, pins, renames, annotates and deletes', async () => {
      const provider = echo((req) => ({ text: `reply to ${textOf(req.messages.at(-1)!)}` }));
      const { kernel, history } = await boot(tmpHome(), provider, await backend.fresh());
      const runA = kernel.runtime.startRun({ input: text('apples one'), mode: 'text' });
      await runA.result;
      const a = runA.conversationId;
      await kernel.runtime.startRun({ conversationId: a, input: text('apples two'), mode: 'text' }).result;
      const runB = kernel.runtime.startRun({ input: text('bananas 100% 東京の天気'), mode: 'text' });
      await runB.result;
      const b = runB.conversationId;
      const secondUser = (await history.getConversation(a))!.messages[2]!;
      await sleep(5);
      await kernel.runtime.startRun({ conversationId: a, input: text('apples three'), truncateFromMessageId: secondUser.id, mode: 'text' }).result;
      expect(provider.requests.at(-1)!.messages.map(textOf)).toEqual(['apples one', 'reply to apples one', 'apples three']);
      expect((await history.getConversation(a))!.messages.map(textOf)).toEqual(['apples one', 'reply to apples one', 'apples three', 'reply to apples three']);

      const ids = async (o?: Parameters<HistoryService['listConversations']>[0]) => (await history.listConversations(o)).map((c) => c.id);
      expect((await history.listConversations()).map((c) => [c.id, c.messageCount, c.title])).toEqual([[a, 4, null], [b, 2, null]]);
      expect(await ids({ search: 'banana' })).toEqual([b]);
      expect(await ids({ search: 'APPLES three' })).toEqual([a]);
      expect(await ids({ search: 'apples two' })).toEqual([]);
      expect(await ids({ search: 'reply to' })).toEqual([a, b]);
      expect(await ids({ search: '100%' })).toEqual([b]);
      expect(await ids({ search: '%' })).toEqual([b]);
      expect(await ids({ search: '天気' })).toEqual([b]);
      expect(await ids({ search: 'tool_result' })).toEqual([]);
      for (const q of ['"', '"quoted', 'NEAR(x', '*', '(unbalanced', "'; DROP TABLE messages; --", '\\', '%_', '?', '??', '$1']) {
        await expect(history.listConversations({ search: q }), q).resolves.toBeInstanceOf(Array);
      }
      expect((await history.listConversations({ search: 'three' }))[0]!.snippet).toContain('apples three');
      expect(await ids({ limit: 1, offset: 1 })).toEqual([b]);

      expect(await history.renameConversation(b, '  Fruit talk ')).toBe(true);
      expect(await history.renameConversation('c_unknown', 'x')).toBe(false);
      expect(await ids({ search: 'fruit' })).toEqual([b]);
      expect((await history.listConversations({ search: 'fruit' }))[0]!.snippet).toBeUndefined();
      expect(await history.setTitle(b, 'generated')).toBe(false);

      expect(await history.setConversationMeta(b, { pinned: true, tag: 'x', nested: { k: 1, drop: 2 } })).toEqual({ pinned: true, tag: 'x', nested: { k: 1, drop: 2 } });
      expect(await history.setConversationMeta(b, { tag: null, nested: { drop: null } })).toEqual({ pinned: true, nested: { k: 1 } });
      expect(await history.setConversationMeta('c_unknown', { x: 1 })).toBeUndefined();
      const pinnedFirst = await history.listConversations();
      expect(pinnedFirst.map((c) => [c.id, c.pinned])).toEqual([[b, true], [a, undefined]]);

      expect(await history.deleteConversation(b)).toBe(true);
      expect(await history.deleteConversation(b)).toBe(false);
      expect(await history.conversationExists(b)).toBe(false);
      expect(await history.getUsage(b)).toEqual([]);
      expect(await ids({ search: 'banana' })).toEqual([]);
      await expect(history.listConversations({ limit: 0 })).rejects.toThrow(/history\.listConversations: options\.limit: /);
      await expect(history.getConversation('../etc')).rejects.toThrow(/history\.getConversation: id: must be 1-128 letters/);
    });

    it('pages with before/limit across a checkpoint and a truncation', async () => {
      const provider = echo((req) => ({ text: `re ${textOf(req.messages.at(-1)!)}` }));
      const { kernel, history } = await boot(tmpHome(), provider, await backend.fresh());
      let id: string | undefined;
      for (let i = 1; i <= 8; i++) {
        const run = kernel.runtime.startRun({ ...(id ? { conversationId: id } : {}), input: text(`q${i}`), mode: 'text' });
        await run.result;
        id = run.conversationId;
      }
      const all = (await history.getConversation(id!))!;
      expect(all.messages).toHaveLength(16);
      const segment = await history.startSegment(id!, { summary: 'the first half', carryFromMessageId: all.messages[8]!.id });
      await kernel.runtime.startRun({ conversationId: id!, input: text('q9'), mode: 'text' }).result;
      expect(provider.requests.at(-1)!.messages.map(textOf)).toEqual(['q5', 're q5', 'q6', 're q6', 'q7', 're q7', 'q8', 're q8', 'q9']);
      expect(provider.requests.at(-1)!.system.map((p) => p.text).join('\n')).toContain('the first half');
      const after = (await history.getConversation(id!))!;
      expect(after.activeSegmentId).toBe(segment);
      expect(after.segments.map((s) => [s.summary, s.parentSegmentId])).toEqual([[null, null], ['the first half', all.activeSegmentId]]);

      const pages: string[][] = [];
      let before: number | undefined;
      for (;;) {
        const page = (await history.getConversation(id!, { limit: 5, ...(before ? { before } : {}) }))!;
        expect(page.messageCount).toBe(18);
        pages.unshift(page.messages.map(textOf));
        if (!page.hasMore) break;
        before = page.messages[0]!.ordinal;
      }
      expect(pages.flat()).toEqual(after.messages.map(textOf));
      const q7 = after.messages.find((m) => textOf(m) === 'q7')!;
      await kernel.runtime.startRun({ conversationId: id!, input: text('q7 again'), truncateFromMessageId: q7.id, mode: 'text' }).result;
      expect((await history.getConversation(id!, { limit: 3 }))!.messages.map(textOf)).toEqual(['re q6', 'q7 again', 're q7 again']);
      await expect(history.startSegment(id!, { summary: 'x', carryFromMessageId: 'm_nope' })).rejects.toThrow(/carryFromMessageId: message "m_nope" is not in conversation/);
      expect(await history.startSegment('c_unknown', { summary: 'x' })).toBeUndefined();
    });

    it('reserves seq for a run in progress: a second kernel on the same store goes on above it', async () => {
      const settings = await backend.fresh();
      const home = tmpHome();
      const base = await boot(home, echo([{ text: 'first' }]), settings);
      const first = base.kernel.runtime.startRun({ input: text('one'), mode: 'text' });
      const firstEvents = await collect(first.events);
      const id = first.conversationId;
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      const blocked: Provider = {
        ...echo([{ text: 'slow' }]),
        async *stream(): AsyncGenerator<ProviderEvent> {
          await gate;
          yield { type: 'done', stopReason: 'end' };
        },
      };
      const a = await boot(home, blocked, settings);
      const runA = a.kernel.runtime.startRun({ conversationId: id, input: text('a'), mode: 'text' });
      const eventsA = collect(runA.events);
      await sleep(100);
      const b = await boot(home, echo([{ text: 'b' }]), settings);
      const runB = b.kernel.runtime.startRun({ conversationId: id, input: text('b'), mode: 'text' });
      const eventsB = await collect(runB.events);
      release();
      const seqA = (await eventsA).map((e) => e.seq);
      expect(seqA[0]).toBe(firstEvents.at(-1)!.seq + 1);
      // B loaded while A held its block: B's numbers start above every number A could use.
      expect(eventsB[0]!.seq).toBeGreaterThan(seqA[0]! + SEQ_RESERVE - 1);
      expect(new Set([...seqA, ...eventsB.map((e) => e.seq)]).size).toBe(seqA.length + eventsB.length);
    });
  });
}

describe.skipIf(!!postgresSkip)('history-postgres only', () => {
  it('runs the same migrations by name, with 0005 and 0007 in its own dialect (trigram index, triggers, backfill, the text cap)', async () => {
    const names = async (s: typeof sqliteMigrations) => (await s.getMigrations([])).map((m) => s.getMigrationName(m));
    expect(await names(pgMigrations as never)).toEqual(await names(sqliteMigrations));
    expect(POSTGRES_OVERRIDDEN).toEqual(['0005_message_search', '0007_search_text_cap']);

    // A database at 0004 with a message in it: 0005 indexes what is there.
    const url = await pg.cluster().createDatabase();
    const knex = createKnex({ client: 'pg', connection: url, pool: { min: 0, max: 2 } });
    try {
      const all = await pgMigrations.getMigrations([]);
      const upTo4 = { ...pgMigrations, getMigrations: async () => all.slice(0, 4) };
      await knex.migrate.latest({ migrationSource: upTo4, tableName: 'knex_migrations' });
      await knex('conversations').insert({ id: 'c_old', created_at: 1, updated_at: 1, active_segment_id: 's_1' });
      await knex('segments').insert({ id: 's_1', conversation_id: 'c_old', created_at: 1 });
      await knex('messages').insert({ id: 'm_1', conversation_id: 'c_old', segment_id: 's_1', ordinal: 1, role: 'user', content: JSON.stringify(text('an old walrus')), status: 'complete', created_at: 1, updated_at: 1 });
      await knex.migrate.latest({ migrationSource: pgMigrations, tableName: 'knex_migrations' });
      expect((await knex('message_search').select('message_id', 'text'))).toEqual([{ message_id: 'm_1', text: 'an old walrus' }]);
      const idx = await knex.raw("SELECT indexname FROM pg_indexes WHERE tablename = 'message_search' AND indexname = 'message_search_text_trgm'");
      expect(idx.rows).toHaveLength(1);
      // Triggers: a partial reply is not indexed until complete; an update re-indexes; a delete drops it.
      await knex('messages').insert({ id: 'm_2', conversation_id: 'c_old', segment_id: 's_1', ordinal: 2, role: 'assistant', content: JSON.stringify(text('half')), status: 'partial', created_at: 2, updated_at: 2 });
      expect(await knex('message_search').where({ message_id: 'm_2' })).toEqual([]);
      await knex('messages').where({ id: 'm_2' }).update({ content: JSON.stringify([...text('whole'), { type: 'thinking', text: 'hidden' }, ...text('reply')]), status: 'complete' });
      expect((await knex('message_search').where({ message_id: 'm_2' }).first('text')).text).toBe('whole\nreply');
      await knex('messages').where({ id: 'm_1' }).del();
      expect((await knex('message_search').select('message_id')).map((r: { message_id: string }) => r.message_id)).toEqual(['m_2']);
      await knex.migrate.rollback({ migrationSource: pgMigrations, tableName: 'knex_migrations' }, true);
      expect((await knex.raw("SELECT to_regclass('message_search') AS t")).rows[0].t).toBeNull();
    } finally {
      await knex.destroy();
    }
  });

  it('takes the URL from LIVEAGENT_DATABASE_URL, lets settings win, and refuses a bad one by name', async () => {
    const url = await pg.cluster().createDatabase();
    const saved = process.env.LIVEAGENT_DATABASE_URL;
    try {
      process.env.LIVEAGENT_DATABASE_URL = url;
      const home = tmpHome();
      const { kernel, history } = await boot(home, echo([{ text: 'ok' }]), {});
      const run = kernel.runtime.startRun({ input: text('hi') });
      expect((await run.result).status).toBe('completed');
      expect(await history.conversationExists(run.conversationId)).toBe(true);
      expect(fs.existsSync(path.join(home, 'liveagent.db'))).toBe(false);

      process.env.LIVEAGENT_DATABASE_URL = 'mysql://nope';
      const bad = await createKernel({ home: tmpHome(), plugins: [historySqlite, historyPostgres], settings: {}, thirdParty: false });
      kernels.push(bad);
      expect(bad.failures.map((f) => f.message)).toEqual([expect.stringContaining('LIVEAGENT_DATABASE_URL: must be a postgres:// or postgresql:// URL')]);
      expect(bad.services.get(HISTORY_SERVICE)).toBeUndefined();

      // Settings win over the environment.
      const viaSettings = await boot(tmpHome(), echo([{ text: 'ok' }]), { history: { url } });
      expect(await viaSettings.history.conversationExists(run.conversationId)).toBe(true);
    } finally {
      if (saved === undefined) delete process.env.LIVEAGENT_DATABASE_URL;
      else process.env.LIVEAGENT_DATABASE_URL = saved;
    }
    const badSettings = await createKernel({ home: tmpHome(), plugins: [historySqlite, historyPostgres], settings: { history: { url: 'sqlite:///x.db' } }, thirdParty: false });
    kernels.push(badSettings);
    expect(badSettings.failures.map((f) => f.message)).toEqual([expect.stringContaining('history.url: must be a postgres:// or postgresql:// URL')]);
  });
});

describe('history-postgres meta patches', () => {
  it('merge like JSON merge patch (RFC 7396), as SQLite json_patch does', () => {
    expect(mergePatch({ a: 1, b: { c: 2, d: 3 } }, { a: null, b: { c: null, e: [1] }, f: 'x' })).toEqual({ b: { d: 3, e: [1] }, f: 'x' });
    expect(mergePatch([1], { a: 1 })).toEqual({ a: 1 });
  });
});
