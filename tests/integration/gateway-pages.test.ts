/**
 * Paged history through the gateway: a snapshot holds the newest page (`hasMore`,
 * `firstOrdinal`, `olderCount`), `conversations.load { before }` answers a `page` of older
 * messages without touching the live state, checkpoint cards are placed by the page that holds
 * their message, and a long run's snapshot never repeats a message. In SQLite and in memory alike.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Message, Plugin, PluginModule } from '../../plugin-api.js';
import type { CheckpointView, ServerMessage } from '../../lib/gateway-protocol/protocol.js';
import historySqlite from '../../plugins/history-sqlite/index.js';
import { TestClient, coveredSeqs, boot, cleanup, contiguous, gate, sendTo, text, type Booted } from './gateway-harness.js';

afterEach(cleanup);

type Snapshot = Extract<ServerMessage, { type: 'snapshot' }>;
type Page = Extract<ServerMessage, { type: 'page' }>;

const stores: Array<[string, PluginModule[]]> = [
  ['SQLite', [historySqlite]],
  ['memory', []],
];

/** Compacts on compact_now, keeping the last user turn (or nothing). */
function compactionTap(mode: { keepNothing: boolean }): Plugin {
  return {
    name: 'test-compaction',
    apply(ctx) {
      ctx.sessionHooks.compaction.tap(async (req) => {
        if (req.trigger !== 'manual') return undefined;
        req.begin();
        const lastUser = req.messages.map((m) => m.role).lastIndexOf('user');
        const keep = mode.keepNothing ? undefined : req.messages[lastUser]?.id;
        return {
          checkpoint: {
            kind: 'summary',
            summary: `summary ${req.messages.length}`,
            ...(keep ? { firstKeptMessageId: keep } : {}),
            coveredMessageCount: keep ? lastUser : req.messages.length,
            prunedToolCallIds: [],
            ledger: { read: [], modified: [] },
            tokensBefore: 1000,
            tokensAfter: 100,
          },
        };
      });
    },
  };
}

/** `turns` user turns (two messages each) in one conversation, one run after the other. */
async function seed(a: TestClient, turns: number, conversationId?: string, from = 0): Promise<string> {
  let id = conversationId;
  let last = id ? Math.max(0, ...coveredSeqs(a.stream(id))) : 0;
  for (let i = from; i < from + turns; i++) {
    const r = await a.ok<{ conversationId: string }>(id ? sendTo(id, `question ${i}`) : text(`question ${i}`));
    id = r.conversationId;
    last = (await a.terminal(id, last)).seq;
  }
  return id!;
}

async function snapshotOf(b: Booted, conversationId: string, limit?: number): Promise<Snapshot> {
  const c = await TestClient.connect(b);
  await c.ok({ type: 'conversations.load', conversationId, ...(limit ? { limit } : {}) });
  const snap = await c.waitFor<Snapshot>((m) => m.type === 'snapshot');
  c.terminate();
  return snap;
}

/** Page back from a snapshot to the first message; every page as it came. */
async function pageBack(c: TestClient, conversationId: string, snap: Snapshot, limit?: number): Promise<Page[]> {
  const pages: Page[] = [];
  let before = snap.hasMore ? snap.firstOrdinal : undefined;
  while (before !== undefined) {
    const reply = await c.ok<{ count: number; hasMore: boolean; firstOrdinal?: number }>({ type: 'conversations.load', conversationId, before, ...(limit ? { limit } : {}) });
    const page = await c.waitFor<Page>((m) => m.type === 'page' && m.before === before && !pages.includes(m as Page));
    expect(reply).toMatchObject({ count: page.messages.length, hasMore: page.hasMore });
    pages.push(page);
    before = page.hasMore ? page.firstOrdinal : undefined;
  }
  return pages;
}

const idsOf = (ms: Message[]) => ms.map((m) => m.id);

describe('gateway paged history', () => {
  for (const [name, extra] of stores) {
    it(`${name}: a snapshot is the newest page; older pages come back in order, without duplicates and without touching the live state`, async () => {
      const b = await boot({ steps: (_req, i) => ({ text: `answer ${i}` }), extra, settings: { gateway: { snapshotMessages: 25 } } });
      const a = await TestClient.connect(b);
      const conversationId = await seed(a, 60);
      const full = await snapshotOf(b, conversationId, 500);
      expect(full.messages).toHaveLength(120);
      expect(full).toMatchObject({ hasMore: false, olderCount: 0, firstOrdinal: 1 });

      const c = await TestClient.connect(b);
      expect(await c.ok({ type: 'subscribe', conversationId })).toMatchObject({ mode: 'snapshot' });
      const snap = await c.waitFor<Snapshot>((m) => m.type === 'snapshot');
      expect(idsOf(snap.messages)).toEqual(idsOf(full.messages.slice(-25)));
      expect(snap).toMatchObject({ hasMore: true, olderCount: 95, firstOrdinal: 96 });
      expect(snap.conversation?.messageCount).toBe(120);

      const pages = await pageBack(c, conversationId, snap);
      expect(pages.map((p) => p.messages.length)).toEqual([25, 25, 25, 20]);
      expect(pages.at(-1)).toMatchObject({ hasMore: false, firstOrdinal: 1 });
      const all = [...pages].reverse().flatMap((p) => p.messages).concat(snap.messages);
      expect(idsOf(all)).toEqual(idsOf(full.messages));
      expect(all[0]!.content).toEqual([{ type: 'text', text: 'question 0' }]);
      // A page is an answer to its requester only: no snapshot, no stream, still subscribed.
      expect(c.messages.filter((m) => m.type === 'snapshot')).toHaveLength(1);
      expect(a.messages.some((m) => m.type === 'page')).toBe(false);
      await seed(a, 1, conversationId, 60);
      await c.terminal(conversationId, snap.lastSeq);
      expect(contiguous(coveredSeqs(c.stream(conversationId)))).toBe(true);
      expect(c.stream(conversationId)[0]!.seq).toBe(snap.lastSeq + 1);

      // A smaller page on request; before 1 and an unknown conversation.
      await c.ok({ type: 'conversations.load', conversationId, before: 11, limit: 4 });
      const small = await c.waitFor<Page>((m) => m.type === 'page' && m.before === 11);
      expect(idsOf(small.messages)).toEqual(idsOf(full.messages.slice(6, 10)));
      expect(small).toMatchObject({ firstOrdinal: 7, hasMore: true });
      expect(await c.ok({ type: 'conversations.load', conversationId, before: 1 })).toMatchObject({ count: 0, hasMore: false });
      const unknown = await c.request({ type: 'conversations.load', conversationId: 'c_nope', before: 5 });
      expect(!unknown.ok && unknown.error.code).toBe('not_found');
      const bad = await c.request({ type: 'conversations.load', conversationId, limit: 5000 });
      expect(!bad.ok && bad.error.message).toMatch(/^limit: /);
      expect(c.invalid).toEqual([]);
    });

    it(`${name}: checkpoint cards are placed by the page that holds their message, wherever the page boundaries fall`, async () => {
      const mode = { keepNothing: false };
      const b = await boot({ steps: (_req, i) => ({ text: `answer ${i}` }), extra: [...extra, compactionTap(mode)] });
      const a = await TestClient.connect(b);
      const conversationId = await seed(a, 5);
      expect(await a.ok({ type: 'chat_queue', item: { action: 'compact_now', conversationId } })).toMatchObject({ status: 'compacted' });
      await seed(a, 4, conversationId, 5);
      mode.keepNothing = true;
      expect(await a.ok({ type: 'chat_queue', item: { action: 'compact_now', conversationId } })).toMatchObject({ status: 'compacted' });
      await seed(a, 3, conversationId, 9);

      const full = await snapshotOf(b, conversationId, 500);
      expect(full.messages).toHaveLength(24);
      const places = full.checkpoints.map((cp) => cp.beforeMessageId);
      // The last user turn before each compaction was kept; the second kept nothing, so its card goes before the next message.
      expect(places).toEqual([full.messages[8]!.id, full.messages[18]!.id]);

      for (const limit of [1, 2, 3, 5, 6, 7, 10]) {
        const c = await TestClient.connect(b);
        const snap = await snapshotOf(b, conversationId, limit);
        const found = new Map<string, string>();
        const note = (cps: CheckpointView[], held: Message[]) => {
          for (const cp of cps) {
            if (cp.inOlderPage) continue;
            expect(found.has(cp.segmentId), `limit ${limit}: placed twice`).toBe(false);
            expect(idsOf(held)).toContain(cp.beforeMessageId);
            found.set(cp.segmentId, cp.beforeMessageId!);
          }
        };
        expect(snap.checkpoints).toHaveLength(2);
        // Marked when (and only when) its message is not in the snapshot.
        expect(snap.checkpoints.map((cp) => !!cp.inOlderPage), `limit ${limit}`).toEqual(places.map((id) => !idsOf(snap.messages).includes(id!)));
        note(snap.checkpoints, snap.messages);
        for (const page of await pageBack(c, conversationId, snap, limit)) note(page.checkpoints, page.messages);
        expect(full.checkpoints.map((cp) => found.get(cp.segmentId)), `limit ${limit}`).toEqual(places);
      }
    });

    it(`${name}: the snapshot of a long run in progress is its newest page, with no message twice`, async () => {
      const g = gate(7, 'block_end');
      const steps = [{ text: 'warm-up' }, ...Array.from({ length: 6 }, (_, r) => ({ text: `round ${r}`, toolCalls: [{ id: `t${r}`, name: 'Echo', input: {} }] })), { text: ['live ', 'tail'] }];
      const echo: Plugin = {
        name: 'tool-echo',
        apply: (ctx) =>
          void ctx.registerTool({ name: 'Echo', description: 'echo', parameters: { safeParse: (v: unknown) => ({ success: true, data: v }) }, jsonSchema: { type: 'object' }, execute: async () => ({ content: [{ type: 'text', text: 'ok' }] }) }),
      };
      const b = await boot({ steps, gates: [g], extra: [...extra, echo], settings: { gateway: { snapshotMessages: 5 }, runtime: { persistIntervalMs: 0 } } });
      const a = await TestClient.connect(b);
      const conversationId = await seed(a, 1);
      await a.ok(sendTo(conversationId, 'go'));
      await g.reached;
      const late = await TestClient.connect(b);
      await late.ok({ type: 'subscribe', conversationId });
      const snap = await late.waitFor<Snapshot>((m) => m.type === 'snapshot');
      expect(snap.running).toBe(true);
      expect(snap.partial?.content).toEqual([{ type: 'text', text: 'live tail' }]);
      expect(new Set(idsOf(snap.messages)).size).toBe(snap.messages.length);
      expect(snap.messages.length).toBeGreaterThanOrEqual(4);
      expect(snap.hasMore).toBe(true);
      const pages = await pageBack(late, conversationId, snap);
      const all = [...pages].reverse().flatMap((p) => p.messages).concat(snap.messages);
      expect(new Set(idsOf(all)).size).toBe(all.length);
      // warm-up turn (2), the user message, six rounds of call + result (12).
      expect(all.map((m) => m.role)).toEqual(['user', 'assistant', 'user', ...Array.from({ length: 6 }, () => ['assistant', 'tool']).flat()]);
      g.release();
      await late.terminal(conversationId, snap.lastSeq);
    });
  }
});
