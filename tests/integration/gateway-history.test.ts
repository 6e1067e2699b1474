import { afterEach, describe, expect, it } from 'vitest';
import historySqlite from '../../plugins/history-sqlite/index.js';
import type { ServerMessage } from '../../lib/gateway-protocol/protocol.js';
import { TestClient, boot, cleanup, gate, sendTo, text } from './gateway-harness.js';

afterEach(cleanup);

type Snapshot = Extract<ServerMessage, { type: 'snapshot' }>;

describe('gateway with the SQLite history service', () => {
  it('lists, snapshots (with the live partial), renames and deletes through the history service', async () => {
    const g = gate(1, 'block_end');
    const b = await boot({ steps: [{ text: 'stored answer' }, { text: ['live ', 'partial'] }], gates: [g], extra: [historySqlite], settings: { gateway: { replayWindow: 1 }, runtime: { persistIntervalMs: 0 } } });
    const a = await TestClient.connect(b);
    const { conversationId } = await a.ok<{ conversationId: string }>(text('first question'));
    const d1 = await a.terminal(conversationId);
    await a.ok(sendTo(conversationId, 'second question'));
    await g.reached;

    const list = await a.ok<{ items: Array<{ id: string; running: boolean; messageCount: number }> }>({ type: 'conversations.list' });
    expect(list.items).toEqual([expect.objectContaining({ id: conversationId, running: true })]);

    const late = await TestClient.connect(b);
    await late.ok({ type: 'subscribe', conversationId, lastSeq: 1 });
    const snap = await late.waitFor<Snapshot>((m) => m.type === 'snapshot');
    expect(snap.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    expect(snap.messages[1]!.content).toEqual([{ type: 'text', text: 'stored answer' }]);
    expect(snap.partial?.content).toEqual([{ type: 'text', text: 'live partial' }]);
    expect(snap.running).toBe(true);
    expect(snap.lastSeq).toBeGreaterThan(d1.seq);

    g.release();
    await late.terminal(conversationId, snap.lastSeq);
    await a.ok({ type: 'conversations.rename', conversationId, title: 'From SQLite' });
    await a.ok({ type: 'conversations.load', conversationId });
    const stored = await a.waitFor<Snapshot>((m) => m.type === 'snapshot' && !m.running);
    expect(stored.conversation?.title).toBe('From SQLite');
    expect(stored.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
    expect(stored.messages.every((m) => !('status' in m) && !m.meta?.partial)).toBe(true);

    await a.ok({ type: 'conversations.delete', conversationId });
    const gone = await a.request({ type: 'conversations.load', conversationId });
    expect(!gone.ok && gone.error.code).toBe('not_found');
  });
});
