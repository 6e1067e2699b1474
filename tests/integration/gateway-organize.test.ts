/**
 * Issue 18 items 9 and 11 at the protocol: `conversations.pin` (stored, listed first, sent to
 * every client) and `conversations.export` (every stored message, paged back, nothing else sent),
 * with the SQLite history service and with the gateway's in-memory fallback.
 */
import { afterEach, describe, expect, it } from 'vitest';
import historySqlite from '../../plugins/history-sqlite/index.js';
import type { ServerMessage } from '../../lib/gateway-protocol/protocol.js';
import { TestClient, boot, cleanup, sendTo, text } from './gateway-harness.js';

afterEach(cleanup);

type Conversations = Extract<ServerMessage, { type: 'conversations' }>;

for (const store of ['sqlite', 'memory'] as const) {
  describe(`gateway pin and export (${store})`, () => {
    it('pins for every client and exports every page', async () => {
      const b = await boot({ steps: (_req, i) => ({ text: `answer ${i}` }), extra: store === 'sqlite' ? [historySqlite] : [], settings: { gateway: { listBroadcastDelayMs: 0 }, runtime: { persistIntervalMs: 0 } } });
      const a = await TestClient.connect(b);
      const other = await TestClient.connect(b);
      const { conversationId: first } = await a.ok<{ conversationId: string }>(text('question 0'));
      await a.terminal(first);
      for (let i = 1; i < 4; i++) {
        await a.ok(sendTo(first, `question ${i}`));
        await a.terminal(first);
      }
      const { conversationId: second } = await a.ok<{ conversationId: string }>(text('another'));
      await a.terminal(second);

      expect(await a.ok({ type: 'conversations.pin', conversationId: first, pinned: true })).toEqual({ conversationId: first, pinned: true });
      const heard = await other.waitFor<Conversations>((m) => m.type === 'conversations' && m.items.some((c) => c.pinned));
      expect(heard.items.map((c) => [c.id, !!c.pinned])).toEqual([
        [first, true],
        [second, false],
      ]);
      await expect(a.ok({ type: 'conversations.pin', conversationId: 'c_nope', pinned: true })).rejects.toThrow(/unknown conversation/);

      // Pages of three, newest first, back to the start.
      const pages: Array<{ messages: Array<{ ordinal: number; role: string }>; hasMore: boolean; firstOrdinal?: number }> = [];
      let before: number | undefined;
      for (;;) {
        const p = await a.ok<(typeof pages)[number]>({ type: 'conversations.export', conversationId: first, limit: 3, ...(before ? { before } : {}) });
        pages.unshift(p);
        if (!p.hasMore) break;
        before = p.firstOrdinal;
      }
      const all = pages.flatMap((p) => p.messages);
      expect(all.map((m) => m.ordinal)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
      expect(all.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant', 'user', 'assistant', 'user', 'assistant']);
      if (store === 'sqlite') expect(all.every((m) => 'status' in m)).toBe(true);
      await expect(a.ok({ type: 'conversations.export', conversationId: 'c_nope' })).rejects.toThrow(/unknown conversation/);

      await a.ok({ type: 'conversations.pin', conversationId: first, pinned: false });
      await other.waitFor<Conversations>((m) => m.type === 'conversations' && m.items.every((c) => !c.pinned));
    });
  });
}

describe('gateway conversation spending', () => {
  it('conversations.usage sums every stored round with the cost priced when it ran', async () => {
    // The fake provider's model gets prices from settings (a custom provider entry of the same id).
    const prices = { customProviders: [{ id: 'fake', format: 'openai-chat' as const, baseUrl: 'http://127.0.0.1:1/v1', models: [{ id: 'fake-1', price: { input: 3, output: 15 } }] }] };
    const b = await boot({ steps: (_req, i) => ({ text: `answer ${i}` }), extra: [historySqlite], settings: { ...prices, runtime: { persistIntervalMs: 0 } } });
    const a = await TestClient.connect(b);
    const { conversationId } = await a.ok<{ conversationId: string }>(text('question 0'));
    await a.terminal(conversationId);
    await a.ok(sendTo(conversationId, 'question 1'));
    await a.terminal(conversationId);
    const spent = await a.ok<{ rounds: number; inputTokens: number; outputTokens: number; costUsd?: number; unpricedRounds: number }>({ type: 'conversations.usage', conversationId });
    // Each fake round reports 10 input and 5 output tokens: 10×3 + 5×15 = 105 USD per million.
    expect(spent).toMatchObject({ conversationId, rounds: 2, inputTokens: 20, outputTokens: 10, unpricedRounds: 0 });
    expect(spent.costUsd).toBeCloseTo(2 * 105e-6, 12);
    await expect(a.ok({ type: 'conversations.usage', conversationId: 'c_nope' })).rejects.toThrow(/unknown conversation/);
  });
});
