/**
 * The title plugin through the server host and the gateway, against the Anthropic wire mock: a
 * first turn gets a stored title that every client's conversation list shows; a slow title model
 * never delays the next message; a user's rename is never overwritten; an answer that is no
 * title gives way to the first user text; `title.enabled: false` sends no title request.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Settings } from '../../plugin-api.js';
import { createKernel } from '../../core/kernel.js';
import { HISTORY_SERVICE, type ConversationChange, type HistoryService } from '../../plugins/history-sqlite/service.js';
import { fakeProvider } from '../helpers/fake-provider.js';
import historySqlite from '../../plugins/history-sqlite/index.js';
import modelCatalog from '../../plugins/model-catalog/index.js';
import providerAnthropic from '../../plugins/provider-anthropic/index.js';
import title, { cleanTitle, fallbackTitle } from '../../plugins/title/index.js';
import type { ServerMessage } from '../../lib/gateway-protocol/protocol.js';
import { anthropicReply, startMockAnthropic, type MockAnthropicServer } from '../fixtures/mock-anthropic.js';
import type { RecordedRequest } from '../fixtures/mock-http.js';
import { TestClient, boot, cleanup, sendTo, sleep, text } from './gateway-harness.js';

const KEY = 'sk-ant-title';
const isTitleRequest = (r: RecordedRequest) => JSON.stringify(r.body.system ?? '').includes('You name chat conversations');

let mock: MockAnthropicServer;
/** What the title model answers, and how long it takes; a held title request waits for `release`. */
let titleAnswer = 'Baking Sourdough at Home';
let titleDelayMs = 0;
let hold: Promise<void> | undefined;
let titlePending = 0;

beforeAll(async () => {
  mock = await startMockAnthropic({
    apiKey: KEY,
    script: async (req) => {
      if (!isTitleRequest(req)) return anthropicReply({ text: ['Mix flour, water', ' and a starter, then wait.'] });
      titlePending++;
      try {
        if (titleDelayMs) await sleep(titleDelayMs);
        if (hold) await hold;
        return anthropicReply({ text: titleAnswer });
      } finally {
        titlePending--;
      }
    },
  });
});
afterAll(() => mock.close());
afterEach(async () => {
  titleAnswer = 'Baking Sourdough at Home';
  titleDelayMs = 0;
  hold = undefined;
  await cleanup();
});

type Conversations = Extract<ServerMessage, { type: 'conversations' }>;
type Summary = Conversations['items'][number];

async function start(settings: Settings = {}) {
  const b = await boot({
    extra: [historySqlite, modelCatalog, providerAnthropic, title],
    settings: { defaultProvider: 'claude_code', providers: { claude_code: { apiKey: KEY, baseUrl: mock.url } }, runtime: { retryMaxAttempts: 1 }, ...settings },
  });
  return { b, a: await TestClient.connect(b) };
}

const titleRequests = () => mock.requests.filter(isTitleRequest);

async function list(c: TestClient): Promise<Summary[]> {
  return (await c.ok<{ items: Summary[] }>({ type: 'conversations.list' })).items;
}

async function until<T>(fn: () => Promise<T | undefined> | T | undefined, what: string, timeoutMs = 5000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

describe('conversation titles', () => {
  it('a first turn gets a stored title, written by the small model from the first exchange, and every client sees it in its list', async () => {
    const { b, a } = await start();
    const other = await TestClient.connect(b);
    const before = titleRequests().length;
    const { conversationId } = await a.ok<{ conversationId: string }>(text('How do I bake sourdough bread at home?'));
    const done = await a.terminal(conversationId);
    // Broadcast to a client that never asked: its list updates.
    const heard = await other.waitFor<Conversations>((m) => m.type === 'conversations' && m.items.some((i) => i.id === conversationId && i.title === 'Baking Sourdough at Home'));
    expect(heard.items.find((i) => i.id === conversationId)!.title).toBe('Baking Sourdough at Home');
    expect((await list(a)).find((i) => i.id === conversationId)?.title).toBe('Baking Sourdough at Home');

    const reqs = titleRequests().slice(before);
    expect(reqs).toHaveLength(1);
    const body = reqs[0]!.body;
    // The conversation runs claude-sonnet-4-6; the catalog's cheapest Claude writes the title.
    expect(body.model).toBe('claude-haiku-4-5');
    expect(body.max_tokens).toBe(1024);
    expect(body.tools ?? []).toEqual([]);
    const prompt = JSON.stringify(body.messages);
    expect(prompt).toContain('How do I bake sourdough bread at home?');
    expect(prompt).toContain('Mix flour, water and a starter');

    // A second turn asks for no second title.
    await a.ok(sendTo(conversationId, 'And how long should it rise?'));
    await a.terminal(conversationId, done.seq);
    await sleep(200);
    expect(titleRequests().length - before).toBe(1);
  });

  it('a slow title model does not delay the next message on the conversation', async () => {
    titleDelayMs = 1500;
    const { a } = await start();
    const { conversationId } = await a.ok<{ conversationId: string }>(text('How do I bake sourdough bread at home?'));
    const first = await a.terminal(conversationId);
    await until(() => (titlePending > 0 ? true : undefined), 'the title request');
    // Not refused as "already has a run in progress", and answered while the title is still being written.
    await a.ok(sendTo(conversationId, 'And how long should it rise?'));
    const second = await a.terminal(conversationId, first.seq);
    expect(second.type).toBe('done');
    expect(titlePending).toBe(1);
    const titled = await until(async () => (await list(a)).find((i) => i.id === conversationId && i.title) ?? undefined, 'the title');
    expect(titled.title).toBe('Baking Sourdough at Home');
  });

  it("never overwrites the user's rename, even one made while the title was being written", async () => {
    let release!: () => void;
    hold = new Promise<void>((r) => (release = r));
    const { a } = await start();
    const before = titleRequests().length;
    const { conversationId } = await a.ok<{ conversationId: string }>(text('How do I bake sourdough bread at home?'));
    const done = await a.terminal(conversationId);
    await until(() => (titlePending > 0 ? true : undefined), 'the title request');
    await a.ok({ type: 'conversations.rename', conversationId, title: 'My bread notes' });
    release();
    await until(() => (titlePending === 0 ? true : undefined), 'the title answer');
    await sleep(200);
    expect((await list(a)).find((i) => i.id === conversationId)?.title).toBe('My bread notes');
    // Renamed: later turns ask for no title.
    await a.ok(sendTo(conversationId, 'And how long should it rise?'));
    await a.terminal(conversationId, done.seq);
    await sleep(200);
    expect(titleRequests().length - before).toBe(1);
    expect((await list(a)).find((i) => i.id === conversationId)?.title).toBe('My bread notes');
  });

  it('a refusal or an echo of the prompt falls back to the first user text, cut at a word', async () => {
    const { a } = await start();
    const long = 'Please explain in detail how the TCP three-way handshake works and why it needs three steps';
    const cases: Array<[string, string]> = [
      ["I'm sorry, but I can't help with naming this.", long],
      ['Write a short title for the conversation', 'Short question about DNS'],
    ];
    for (const [answer, question] of cases) {
      titleAnswer = answer;
      const { conversationId } = await a.ok<{ conversationId: string }>(text(question));
      await a.terminal(conversationId);
      const got = await until(async () => (await list(a)).find((i) => i.id === conversationId && i.title)?.title ?? undefined, 'the fallback title');
      expect(got).toBe(fallbackTitle(question));
    }
    const cut = fallbackTitle(long)!;
    expect(cut).toBe('Please explain in detail how the TCP three-way…');
    expect(Array.from(cut).length).toBeLessThanOrEqual(48);
  });

  it('title.enabled false sends no title request and stores no title', async () => {
    const { a } = await start({ title: { enabled: false } });
    const before = titleRequests().length;
    const { conversationId } = await a.ok<{ conversationId: string }>(text('How do I bake sourdough bread at home?'));
    await a.terminal(conversationId);
    await sleep(300);
    expect(titleRequests().length).toBe(before);
    expect((await list(a)).find((i) => i.id === conversationId)?.title).toBeNull();
  });

  it('an invalid title section fails the plugin with the key named; the host goes on', async () => {
    const { b } = await start({ title: { maxOutputTokens: 2 } });
    const loaded = b.server.kernel.loaded.find((p) => p.name === 'title');
    expect(loaded?.status).toBe('failed');
    expect(loaded?.error?.message).toMatch(/title\.maxOutputTokens: must be at least 16/);
  });
});

describe('history service titles', () => {
  it("setTitle never replaces the user's title (nor one stored before titles had a source); watchers hear every stored title", async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'la-title-'));
    const provider = fakeProvider(() => ({ text: 'ok' }));
    const kernel = await createKernel({ home, plugins: [historySqlite, { name: 'test-fake', apply: (ctx) => void ctx.registerProvider(provider) }], settings: { defaultProvider: 'fake' }, thirdParty: false });
    try {
      const svc = kernel.services.get<HistoryService>(HISTORY_SERVICE)!;
      const changes: ConversationChange[] = [];
      const sub = await svc.watchConversations((c) => void changes.push(c));
      const ids: string[] = [];
      for (const t of ['one', 'two']) ids.push((await kernel.runtime.startRun({ input: [{ type: 'text', text: t }], mode: 'text' }).result).conversationId);
      const [a, b] = ids as [string, string];
      const titleOf = async (id: string) => (await svc.getConversation(id, { limit: 1 }))?.title;

      expect(await svc.setTitle(a, '  Generated  ')).toBe(true);
      expect(await titleOf(a)).toBe('Generated');
      expect(await svc.setTitle(a, 'Generated again')).toBe(true);
      expect(await svc.renameConversation(a, 'Mine')).toBe(true);
      expect(await svc.setTitle(a, 'Generated late')).toBe(false);
      expect(await titleOf(a)).toBe('Mine');
      expect(await svc.setTitle('c_unknown', 'x')).toBe(false);
      await expect(svc.setTitle(a, '   ')).rejects.toThrow(/history\.setTitle: title: must not be empty/);

      // A title written before migration 0004 (no source) counts as the user's.
      const db = new Database(path.join(home, 'liveagent.db'));
      db.prepare("UPDATE conversations SET title = 'Legacy', title_source = NULL WHERE id = ?").run(b);
      db.close();
      expect(await svc.setTitle(b, 'Generated')).toBe(false);
      expect(await titleOf(b)).toBe('Legacy');

      expect(changes).toEqual([
        { conversationId: a, kind: 'title', title: 'Generated', titleSource: 'auto' },
        { conversationId: a, kind: 'title', title: 'Generated again', titleSource: 'auto' },
        { conversationId: a, kind: 'title', title: 'Mine', titleSource: 'user' },
      ]);
      sub.dispose();
      await svc.renameConversation(a, 'Quiet');
      expect(changes).toHaveLength(3);
    } finally {
      await kernel.shutdown();
      fs.rmSync(home, { recursive: true, force: true });
    }
  });
});

describe('what counts as a title', () => {
  const prompt = ['You name chat conversations. Reply with the title and nothing else.', 'Write a short title for the conversation that starts like this.'];
  it('keeps a clean title and strips quotes, markdown, a "Title:" prefix and trailing punctuation', () => {
    expect(cleanTitle('"Sourdough basics."', prompt)).toBe('Sourdough basics');
    expect(cleanTitle('**Title:** Réglage du serveur DNS !', prompt)).toBe('Réglage du serveur DNS');
    expect(cleanTitle('「天气预报查询」。', prompt)).toBe('天气预报查询');
    expect(cleanTitle('Here is a title:\nKubernetes pod restarts', prompt)).toBe('Kubernetes pod restarts');
  });
  it('refuses empty, refusal, over-long and echo answers', () => {
    for (const bad of ['', '   ""  ', 'I cannot help with that', 'As an AI, I do not name things', '抱歉，我无法完成', 'x'.repeat(51), 'Short title for the conversation', '<user_message>hi</user_message>']) {
      expect(cleanTitle(bad, prompt), bad).toBeUndefined();
    }
  });
  it('falls back to the user text, whole when short, cut with … when long', () => {
    expect(fallbackTitle('  What is   DNS? ')).toBe('What is DNS?');
    expect(fallbackTitle('这是一个非常长的问题'.repeat(10))!.endsWith('…')).toBe(true);
    expect(Array.from(fallbackTitle('这是一个非常长的问题'.repeat(10))!).length).toBe(48);
    expect(fallbackTitle('   ')).toBeUndefined();
  });
});
