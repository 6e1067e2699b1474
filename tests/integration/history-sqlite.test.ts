import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { LifecycleEvent, Message, Plugin, Provider, ProviderEvent, Settings } from '../../plugin-api.js';
import { createKernel, type Kernel } from '../../core/kernel.js';
import historySqlite from '../../plugins/history-sqlite/index.js';
import { HISTORY_SERVICE, type ConversationDetail, type HistoryService } from '../../plugins/history-sqlite/service.js';
import { fakeProvider, type FakeStep } from '../helpers/fake-provider.js';
import { collectAll } from '../helpers/streams.js';
import { echoToolPlugin } from '../helpers/echo-tool.js';

const kernels: Kernel[] = [];
const homes: string[] = [];
afterEach(async () => {
  for (const k of kernels.splice(0)) await k.shutdown();
  for (const h of homes.splice(0)) fs.rmSync(h, { recursive: true, force: true });
});

function tmpHome() {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'la-history-'));
  homes.push(home);
  return home;
}

async function boot(home: string, provider: Provider, extra: Plugin[] = [], settings: Settings = {}) {
  const providerPlugin: Plugin = { name: 'test-provider', apply: (ctx) => void ctx.registerProvider(provider) };
  const kernel = await createKernel({ home, plugins: [historySqlite, providerPlugin, ...extra], settings, thirdParty: false });
  kernels.push(kernel);
  return { kernel, history: kernel.services.get<HistoryService>(HISTORY_SERVICE)! };
}

async function stop(kernel: Kernel) {
  kernels.splice(kernels.indexOf(kernel), 1);
  await kernel.shutdown();
}

const collect = collectAll<LifecycleEvent>;

const text = (t: string) => [{ type: 'text' as const, text: t }];
const textOf = (m: Message) => m.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitFor<T>(probe: () => Promise<T | undefined>, what: string, timeoutMs = 5000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

const echoTool = echoToolPlugin;

describe('history-sqlite', () => {
  it('a conversation persists across kernel restarts, and seq keeps rising across kernels', async () => {
    const home = tmpHome();
    const first = await boot(home, fakeProvider([{ text: ['Hel', 'lo'] }]));
    expect(first.kernel.failures).toEqual([]);
    const run1 = first.kernel.runtime.startRun({ input: text('hi'), mode: 'text' });
    const events1 = await collect(run1.events);
    expect((await run1.result).status).toBe('completed');
    await stop(first.kernel);
    await expect(first.history.listConversations()).rejects.toThrow(/closed/);

    const raw = new Database(path.join(home, 'liveagent.db'), { readonly: true });
    expect(raw.pragma('journal_mode', { simple: true })).toBe('wal');
    raw.close();

    const provider2 = fakeProvider([{ text: 'again' }]);
    const second = await boot(home, provider2);
    const run2 = second.kernel.runtime.startRun({ conversationId: run1.conversationId, input: text('more'), mode: 'text' });
    const events2 = await collect(run2.events);
    expect((await run2.result).status).toBe('completed');
    expect(provider2.requests[0]!.messages.map((m) => [m.role, textOf(m)])).toEqual([
      ['user', 'hi'],
      ['assistant', 'Hello'],
      ['user', 'more'],
    ]);
    expect(events2[0]!.seq).toBe(events1.at(-1)!.seq + 1);

    const stored = (await second.history.getConversation(run1.conversationId))!;
    expect(stored.messages.map((m) => [m.role, textOf(m), m.status])).toEqual([
      ['user', 'hi', 'complete'],
      ['assistant', 'Hello', 'complete'],
      ['user', 'more', 'complete'],
      ['assistant', 'again', 'complete'],
    ]);
    expect(stored.messages.map((m) => m.ordinal)).toEqual([1, 2, 3, 4]);
    expect(stored.lastSeq).toBe(events2.at(-1)!.seq);
    expect(stored).toMatchObject({ provider: 'fake', model: 'fake-1', mode: 'text', messageCount: 4 });
  });

  it('stores the user message before the provider is called', async () => {
    let history!: HistoryService;
    let seen: ConversationDetail | undefined;
    const inner = fakeProvider([{ text: 'ok' }]);
    const provider: Provider = {
      ...inner,
      async *stream(request, signal) {
        seen = await history.getConversation(request.conversationId);
        yield* inner.stream(request, signal);
      },
    };
    ({ history } = await boot(tmpHome(), provider));
    const run = kernels[0]!.runtime.startRun({ input: text('remember me') });
    expect((await run.result).status).toBe('completed');
    expect(seen?.messages.map((m) => [m.role, textOf(m), m.status])).toEqual([['user', 'remember me', 'complete']]);
  });

  it('persists streaming progress coalesced, with the partial reply visible mid-stream', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const fastDeltas = 30;
    const provider: Provider = {
      id: 'slow',
      displayName: 'Slow',
      defaultModel: 'slow-1',
      isConfigured: () => true,
      async *stream(): AsyncGenerator<ProviderEvent> {
        yield { type: 'block_start', index: 0, block: { type: 'text' } };
        for (let i = 0; i < fastDeltas; i++) {
          yield { type: 'text_delta', index: 0, text: 'a' };
          await new Promise((r) => setImmediate(r));
        }
        yield { type: 'block_end', index: 0, block: { type: 'text', text: 'a'.repeat(fastDeltas) } };
        yield { type: 'block_start', index: 1, block: { type: 'text' } };
        yield { type: 'text_delta', index: 1, text: 'b0 ' };
        await sleep(60);
        // Arrives after the persist interval: the unfinished block is saved as it stands.
        yield { type: 'text_delta', index: 1, text: 'b1 ' };
        await gate;
        yield { type: 'text_delta', index: 1, text: 'b2' };
        yield { type: 'block_end', index: 1, block: { type: 'text', text: 'b0 b1 b2' } };
        yield { type: 'usage', usage: { inputTokens: 3, outputTokens: 4 } };
        yield { type: 'done', stopReason: 'end' };
      },
    };
    let saves = 0;
    const counter: Plugin = { name: 'count-saves', apply: (ctx) => void ctx.sessionHooks.saveProgress.tap(() => void saves++) };
    const { kernel, history } = await boot(tmpHome(), provider, [counter], { runtime: { persistIntervalMs: 25 } });
    const run = kernel.runtime.startRun({ input: text('stream please'), mode: 'text' });

    const partial = await waitFor(async () => {
      const c = await history.getConversation(run.conversationId);
      const reply = c?.messages[1];
      return reply && reply.content.length === 2 && textOf(reply).endsWith('b1 ') ? reply : undefined;
    }, 'the partial reply');
    expect(partial.status).toBe('partial');
    expect(partial.meta).toEqual({ partial: true });
    expect(partial.content).toEqual([
      { type: 'text', text: 'a'.repeat(fastDeltas) },
      { type: 'text', text: 'b0 b1 ' },
    ]);
    expect(saves).toBeGreaterThan(0);
    expect(saves).toBeLessThan(fastDeltas);

    release();
    expect((await run.result).status).toBe('completed');
    const done = (await history.getConversation(run.conversationId))!.messages[1]!;
    expect(done.status).toBe('complete');
    expect(done.meta).toBeUndefined();
    expect(done.content.at(-1)).toEqual({ type: 'text', text: 'b0 b1 b2' });
    expect(done.usage).toEqual({ inputTokens: 3, outputTokens: 4 });
  });

  it('commits a tool round as assistant + tool results + usage, and records the run facts', async () => {
    const workdir = tmpHome();
    const { kernel, history } = await boot(
      tmpHome(),
      fakeProvider([{ toolCalls: [{ id: 't1', name: 'Echo', input: { text: 'a' } }] }, { text: 'finished' }]),
      [echoTool],
    );
    const run = kernel.runtime.startRun({ input: text('go'), mode: 'tools', workdir });
    const result = await run.result;
    expect(result.status).toBe('completed');

    const c = (await history.getConversation(run.conversationId))!;
    expect(c).toMatchObject({ provider: 'fake', model: 'fake-1', mode: 'tools', workdir });
    expect(c.messages.map((m) => [m.role, m.status])).toEqual([
      ['user', 'complete'],
      ['assistant', 'complete'],
      ['tool', 'complete'],
      ['assistant', 'complete'],
    ]);
    const [, call, results, final] = c.messages;
    expect(call!.content).toEqual([{ type: 'tool_call', id: 't1', name: 'Echo', input: { text: 'a' } }]);
    expect(call).toMatchObject({ stopReason: 'tool_use', usage: { inputTokens: 10, outputTokens: 5 }, provider: 'fake', model: 'fake-1' });
    expect(results!.content).toEqual([{ type: 'tool_result', toolCallId: 't1', toolName: 'Echo', content: [{ type: 'text', text: 'echo:a' }], isError: false }]);
    expect(textOf(final!)).toBe('finished');
    // Stored messages read back equal to what the run produced.
    expect(c.messages.slice(1).map(({ status, segmentId, ordinal, updatedAt, ...m }) => m)).toEqual(result.messages);

    const usage = await history.getUsage(run.conversationId);
    expect(usage.map((u) => [u.messageId, u.round, u.runId, u.inputTokens, u.outputTokens])).toEqual([
      [call!.id, 1, run.runId, 10, 5],
      [final!.id, 2, run.runId, 10, 5],
    ]);
  });

  it('repairs a tool call whose round never committed, so the next request is valid', async () => {
    const home = tmpHome();
    // A tool that outlasts persistIntervalMs gets its call stored as progress before it runs
    // (quick tools leave everything to the one round commit).
    const slowEcho: Plugin = {
      name: 'tool-slow-echo',
      apply: (ctx) =>
        void ctx.registerTool({
          name: 'Echo',
          description: 'Echo text back, slowly',
          parameters: z.object({ text: z.string() }),
          execute: async (args: { text: string }) => {
            await new Promise((r) => setTimeout(r, 80));
            return { content: [{ type: 'text', text: `echo:${args.text}` }] };
          },
        }),
    };
    // Dies between the stored tool call and the round's commit.
    const crash: Plugin = {
      name: 'crash-before-commit',
      apply: (ctx) =>
        void ctx.sessionHooks.saveRound.tap(
          (r) => {
            if (r.toolResults) throw new Error('simulated crash');
          },
          { stage: -1 },
        ),
    };
    const first = await boot(home, fakeProvider([{ toolCalls: [{ id: 't1', name: 'Echo', input: { text: 'a' } }] }]), [slowEcho, crash], { runtime: { persistIntervalMs: 10 } });
    const run1 = first.kernel.runtime.startRun({ input: text('go') });
    expect((await run1.result).status).toBe('error');
    const stranded = (await first.history.getConversation(run1.conversationId))!;
    expect(stranded.messages.map((m) => [m.role, m.status])).toEqual([
      ['user', 'complete'],
      ['assistant', 'partial'],
    ]);
    expect(stranded.messages[1]!.content).toEqual([{ type: 'tool_call', id: 't1', name: 'Echo', input: { text: 'a' } }]);
    await stop(first.kernel);

    const provider2 = fakeProvider([{ text: 'recovered' }]);
    const second = await boot(home, provider2, [echoTool]);
    const run2 = second.kernel.runtime.startRun({ conversationId: run1.conversationId, input: text('continue') });
    expect((await run2.result).status).toBe('completed');
    const sent = provider2.requests[0]!.messages;
    expect(sent.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'user']);
    expect(sent[2]!.content[0]).toMatchObject({ type: 'tool_result', toolCallId: 't1', isError: true });
  });

  it('truncates from a message on, and lists, searches, renames, annotates and deletes conversations', async () => {
    const provider = fakeProvider((req) => ({ text: `reply to ${textOf(req.messages.at(-1)!)}` }));
    const home = tmpHome();
    const { kernel, history } = await boot(home, provider);
    const runA = kernel.runtime.startRun({ input: text('apples one'), mode: 'text' });
    await runA.result;
    const a = runA.conversationId;
    await kernel.runtime.startRun({ conversationId: a, input: text('apples two'), mode: 'text' }).result;
    const runB = kernel.runtime.startRun({ input: text('bananas 100%'), mode: 'text' });
    await runB.result;
    const b = runB.conversationId;

    const secondUser = (await history.getConversation(a))!.messages[2]!;
    expect(textOf(secondUser)).toBe('apples two');
    await sleep(5);
    const edit = await kernel.runtime.startRun({ conversationId: a, input: text('apples three'), truncateFromMessageId: secondUser.id, mode: 'text' }).result;
    expect(edit.status).toBe('completed');
    expect(provider.requests.at(-1)!.messages.map(textOf)).toEqual(['apples one', 'reply to apples one', 'apples three']);
    expect((await history.getConversation(a))!.messages.map(textOf)).toEqual(['apples one', 'reply to apples one', 'apples three', 'reply to apples three']);
    // Each round's usage rides on its reply; the truncated reply's tokens were still spent, so
    // they stay, as a usage row with no message. Every round counted once.
    const kept = (await history.getConversation(a))!.messages;
    expect((await history.getUsage(a)).map((u) => [u.messageId, u.round, u.inputTokens, u.outputTokens])).toEqual([
      [kept[1]!.id, 1, 10, 5],
      [null, 1, 10, 5],
      [kept[3]!.id, 1, 10, 5],
    ]);
    const db = new Database(path.join(home, 'liveagent.db'), { readonly: true });
    try {
      expect(db.prepare('SELECT COUNT(*) AS n FROM usage WHERE conversation_id = ?').get(a)).toEqual({ n: 1 });
    } finally {
      db.close();
    }

    const ids = async (o?: Parameters<HistoryService['listConversations']>[0]) => (await history.listConversations(o)).map((c) => c.id);
    const list = await history.listConversations();
    expect(list.map((c) => [c.id, c.messageCount, c.title])).toEqual([
      [a, 4, null],
      [b, 2, null],
    ]);
    expect(await ids({ search: 'banana' })).toEqual([b]);
    expect(await ids({ search: 'APPLES three' })).toEqual([a]);
    expect(await ids({ search: 'apples two' })).toEqual([]);
    expect(await ids({ search: 'reply to' })).toEqual([a, b]);
    expect(await ids({ search: '100%' })).toEqual([b]);
    expect(await ids({ search: '%' })).toEqual([b]);
    expect(await ids({ search: 'tool_result' })).toEqual([]);
    expect(await ids({ limit: 1, offset: 1 })).toEqual([b]);

    expect(await history.renameConversation(b, '  Fruit talk ')).toBe(true);
    expect(await history.renameConversation('c_unknown', 'x')).toBe(false);
    expect(await ids({ search: 'fruit' })).toEqual([b]);
    expect((await history.getConversation(b))!.title).toBe('Fruit talk');

    expect(await history.setConversationMeta(a, { pinned: true, tag: 'x' })).toEqual({ pinned: true, tag: 'x' });
    expect(await history.setConversationMeta(a, { tag: null })).toEqual({ pinned: true });
    expect((await history.getConversation(a))!.meta).toEqual({ pinned: true });
    expect(await history.setConversationMeta('c_unknown', { x: 1 })).toBeUndefined();

    expect(await history.conversationExists(b)).toBe(true);
    expect(await history.deleteConversation(b)).toBe(true);
    expect(await history.deleteConversation(b)).toBe(false);
    expect(await history.conversationExists(b)).toBe(false);
    expect(await history.getConversation(b)).toBeUndefined();
    expect(await history.getUsage(b)).toEqual([]);
    expect(await ids()).toEqual([a]);
    const again = await kernel.runtime.startRun({ conversationId: b, input: text('hello?') }).result;
    expect(again.status).toBe('error');
    expect(again.error?.message).toContain(`unknown conversation "${b}"`);

    await expect(history.renameConversation(a, '   ')).rejects.toThrow('history.renameConversation: title: must not be empty');
    await expect(history.listConversations({ limit: 0 })).rejects.toThrow(/history\.listConversations: options\.limit: /);
    await expect(history.getConversation('../etc')).rejects.toThrow(/history\.getConversation: id: must be 1-128 letters/);
  });

  it('starts a compaction segment: the next request carries its summary and only the carried messages', async () => {
    const provider = fakeProvider((req) => ({ text: `reply to ${textOf(req.messages.at(-1)!)}` }));
    const { kernel, history } = await boot(tmpHome(), provider);
    const run = kernel.runtime.startRun({ input: text('one'), mode: 'text' });
    await run.result;
    const id = run.conversationId;
    await kernel.runtime.startRun({ conversationId: id, input: text('two'), mode: 'text' }).result;
    const before = (await history.getConversation(id))!;
    const segment = await history.startSegment(id, { summary: 'They counted to one.', carryFromMessageId: before.messages[2]!.id });
    expect(segment).toMatch(/^s_/);

    await kernel.runtime.startRun({ conversationId: id, input: text('three'), mode: 'text' }).result;
    const request = provider.requests.at(-1)!;
    expect(request.messages.map(textOf)).toEqual(['two', 'reply to two', 'three']);
    expect(request.system.map((p) => p.text).join('\n')).toContain('They counted to one.');

    const after = (await history.getConversation(id))!;
    expect(after.activeSegmentId).toBe(segment);
    expect(after.segments.map((s) => [s.summary, s.parentSegmentId])).toEqual([
      [null, null],
      ['They counted to one.', before.activeSegmentId],
    ]);
    expect(after.messages.map((m) => [textOf(m), m.segmentId === segment])).toEqual([
      ['one', false],
      ['reply to one', false],
      ['two', true],
      ['reply to two', true],
      ['three', true],
      ['reply to three', true],
    ]);
    await expect(history.startSegment(id, { summary: 'x', carryFromMessageId: 'm_nope' })).rejects.toThrow(/carryFromMessageId: message "m_nope" is not in conversation/);
    expect(await history.startSegment('c_unknown', { summary: 'x' })).toBeUndefined();
  });

  it('honours a database path from settings and refuses invalid settings by name', async () => {
    const home = tmpHome();
    const { kernel } = await boot(home, fakeProvider([{ text: 'ok' }]), [], { pluginSettings: { 'history-sqlite': { file: 'data/chat.db' } } });
    expect((await kernel.runtime.startRun({ input: text('hi') }).result).status).toBe('completed');
    expect(fs.existsSync(path.join(home, 'data', 'chat.db'))).toBe(true);
    expect(fs.existsSync(path.join(home, 'liveagent.db'))).toBe(false);

    const bad = await boot(tmpHome(), fakeProvider([]), [], { pluginSettings: { 'history-sqlite': { file: 42 } } });
    expect(bad.kernel.failures.map((f) => f.message)).toEqual([expect.stringContaining('pluginSettings.history-sqlite.file')]);
    expect(bad.history).toBeUndefined();
  });
});

describe('history-sqlite paging', () => {
  it('pages a long conversation from its end through the index, across a checkpoint and a truncation', async () => {
    const home = tmpHome();
    const provider = fakeProvider((req) => ({ text: `re ${textOf(req.messages.at(-1)!)}` }));
    const { kernel, history } = await boot(home, provider);
    let id: string | undefined;
    for (let i = 1; i <= 12; i++) {
      const run = kernel.runtime.startRun({ ...(id ? { conversationId: id } : {}), input: text(`q${i}`), mode: 'text' });
      await run.result;
      id = run.conversationId;
    }
    const all = (await history.getConversation(id!))!;
    expect(all.messages).toHaveLength(24);
    expect(all.hasMore).toBe(false);
    // A checkpoint in the middle: paging still walks the whole transcript in order.
    await history.startSegment(id!, { summary: 'the first half', carryFromMessageId: all.messages[12]!.id });
    const last = (await history.getConversation(id!, { limit: 5 }))!;
    expect(last.messages.map(textOf)).toEqual(['re q10', 'q11', 're q11', 'q12', 're q12']);
    expect(last.hasMore).toBe(true);
    expect(last.messageCount).toBe(24);
    const pages: string[][] = [last.messages.map(textOf)];
    let before = last.messages[0]!.ordinal;
    for (;;) {
      const page = (await history.getConversation(id!, { limit: 5, before }))!;
      pages.unshift(page.messages.map(textOf));
      if (!page.hasMore) break;
      before = page.messages[0]!.ordinal;
    }
    expect(pages.flat()).toEqual(all.messages.map(textOf));
    // Edit and resend at q11: the pages end at the new reply.
    const q11 = all.messages.find((m) => textOf(m) === 'q11')!;
    await kernel.runtime.startRun({ conversationId: id!, input: text('q11 again'), truncateFromMessageId: q11.id, mode: 'text' }).result;
    const after = (await history.getConversation(id!, { limit: 3 }))!;
    expect(after.messages.map(textOf)).toEqual(['re q10', 'q11 again', 're q11 again']);
    await expect(history.getConversation(id!, { limit: 0 })).rejects.toThrow(/history\.getConversation: page\.limit/);
  });
});
