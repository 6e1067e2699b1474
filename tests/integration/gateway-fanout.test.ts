/**
 * The fan-out's fast paths and global bounds: a conversation nobody follows streams without
 * serialization or a replay window, yet a client that subscribes mid-run gets the partial reply
 * and every event after it, and a replay from then on is exact; the replay windows of many
 * conversations stay under the global byte budget (least recently active first); past the global
 * cap on outstanding bytes the client furthest behind is dropped and the others go on.
 */
import type { Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { LifecycleEvent } from '../../plugin-api.js';
import { streamKindOf, type ServerMessage } from '../../lib/gateway-protocol/protocol.js';
import type { FakeStep } from '../helpers/fake-provider.js';
import { TestClient, coveredSeqs, expectedEvent, okTool as echoTool, boot, cleanup, contiguous, gate, sendTo, text, type Booted } from './gateway-harness.js';

afterEach(cleanup);

type Snapshot = Extract<ServerMessage, { type: 'snapshot' }>;

/** Every lifecycle event of the runtime, by seq, per conversation. */
function capture(b: Booted): Map<string, LifecycleEvent[]> {
  const all = new Map<string, LifecycleEvent[]>();
  b.server.kernel.runtime.onEvent((e) => {
    const list = all.get(e.conversationId) ?? [];
    list.push(structuredClone(e));
    all.set(e.conversationId, list);
  });
  return all;
}

describe('gateway fan-out fast paths and global bounds', () => {
  it('nobody follows a run: a client that subscribes mid-run gets the partial reply, then every event; only the watched part is kept for replay, and it replays exactly', async () => {
    const g = gate(0, 'block_end');
    const steps: FakeStep[] = [{ text: ['alpha ', 'beta ', 'gamma'], toolCalls: [{ id: 't1', name: 'Echo', input: { say: 'hé "quoted"\n' } }] }, { thinking: 'pondering', text: 'done ✓' }];
    const b = await boot({ steps, gates: [g], extra: [echoTool] });
    const events = capture(b);
    const handle = b.server.kernel.runtime.startRun({ input: [{ type: 'text', text: 'go' }], keepEvents: false });
    const conversationId = handle.conversationId;
    await g.reached;

    const late = await TestClient.connect(b);
    expect(await late.ok({ type: 'subscribe', conversationId })).toMatchObject({ mode: 'snapshot' });
    const snap = await late.waitFor<Snapshot>((m) => m.type === 'snapshot');
    expect(snap.running).toBe(true);
    expect(snap.partial?.content).toEqual([{ type: 'text', text: 'alpha beta gamma' }]);
    expect(snap.pending?.map((e) => e.type)).toEqual(['agent_start', 'message_start']);
    expect(snap.messages.map((m) => m.role)).toEqual(['user']);
    expect(snap.lastSeq).toBe(events.get(conversationId)!.at(-1)!.seq);

    g.release();
    const done = await late.terminal(conversationId, snap.lastSeq);
    expect(done.type).toBe('done');
    const seen = late.stream(conversationId);
    expect(seen[0]!.seq).toBe(snap.lastSeq + 1);
    expect(contiguous(coveredSeqs(seen))).toBe(true);
    const bySeq = new Map(events.get(conversationId)!.map((e) => [e.seq, e]));
    // What went out once somebody followed (text, tool-input and thinking deltas included) is the event as it was.
    for (const m of seen) {
      expect(m.event).toEqual(expectedEvent(m, bySeq));
      expect({ type: m.type, ...(m.phase ? { phase: m.phase } : {}) }).toEqual({ type: streamKindOf(m.event).kind, ...(streamKindOf(m.event).phase ? { phase: streamKindOf(m.event).phase } : {}) });
    }
    const kinds = new Set(seen.flatMap((m) => (m.event.type === 'message_update' ? [m.event.delta.kind] : [])));
    expect(['text', 'tool_input', 'thinking'].every((k) => kinds.has(k as never))).toBe(true);

    // What nobody watched was not kept: a replay from seq 0 is a snapshot. From the moment somebody
    // followed, the window holds every event (deltas unserialized) and a replay is exact.
    const replayer = await TestClient.connect(b);
    expect(await replayer.ok({ type: 'subscribe', conversationId, lastSeq: 0 })).toMatchObject({ mode: 'snapshot' });
    const again = await TestClient.connect(b);
    expect(await again.ok({ type: 'subscribe', conversationId, lastSeq: snap.lastSeq })).toMatchObject({ mode: 'replay' });
    const replayed = again.stream(conversationId);
    const watched = events.get(conversationId)!.filter((e) => e.seq > snap.lastSeq);
    expect(replayed.map((m) => m.event)).toEqual(watched);
    expect(replayed.map((m) => m.type)).toEqual(watched.map((e) => streamKindOf(e).kind));
    expect([late.invalid, replayer.invalid, again.invalid]).toEqual([[], [], []]);
    expect((await handle.result).status).toBe('completed');
  });

  it('the replay windows of many conversations stay under the global budget; the least recently active lose theirs first', async () => {
    const budget = 40_000;
    const piece = 'y'.repeat(100);
    const b = await boot({ steps: () => ({ text: Array.from({ length: 20 }, (_, i) => `${i}${piece}`) }), settings: { gateway: { replayTotalBytes: budget, replayWindowBytes: 1_000_000 } } });
    const a = await TestClient.connect(b);
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) {
      if (i % 2 === 0) {
        // Followed: its events are serialized as they go out.
        const { conversationId } = await a.ok<{ conversationId: string }>(text(`conversation ${i}`));
        await a.terminal(conversationId);
        ids.push(conversationId);
      } else {
        // Followed by nobody: nothing is kept for it.
        const before = b.gateway.stats().replayBytes;
        const h = b.server.kernel.runtime.startRun({ input: [{ type: 'text', text: `conversation ${i}` }], keepEvents: false });
        await h.result;
        expect(b.gateway.stats().replayBytes).toBeLessThanOrEqual(before);
        ids.push(h.conversationId);
      }
      expect(b.gateway.stats().replayBytes).toBeLessThanOrEqual(budget);
    }
    expect(b.gateway.stats().replayBytes).toBeGreaterThan(budget / 4);
    const c = await TestClient.connect(b);
    // The newest two followed ones still replay from their first event; the oldest fell out of the
    // budget; the unfollowed ones never had a window.
    const followed = ids.filter((_, i) => i % 2 === 0);
    for (const id of followed.slice(-2)) expect(await c.ok({ type: 'subscribe', conversationId: id, lastSeq: 0 })).toMatchObject({ mode: 'replay' });
    for (const id of [...followed.slice(0, 2), ids[11]!]) expect(await c.ok({ type: 'subscribe', conversationId: id, lastSeq: 0 })).toMatchObject({ mode: 'snapshot' });
    // A conversation that goes on after losing its window streams and replays as before.
    const before = Math.max(...coveredSeqs(a.stream(ids[0]!)));
    await a.ok(sendTo(ids[0]!, 'again'));
    const d = await a.terminal(ids[0]!, before);
    const tail = await TestClient.connect(b);
    expect(await tail.ok({ type: 'subscribe', conversationId: ids[0]!, lastSeq: d.seq - 3 })).toMatchObject({ mode: 'replay', replayed: 3 });
    expect(b.gateway.stats().replayBytes).toBeLessThanOrEqual(budget);
  });

  it('past the cap on bytes outstanding for all clients together, the client furthest behind is dropped and the others go on', async () => {
    const chunk = 'x'.repeat(2 * 1024);
    const rounds = 25;
    const steps: FakeStep[] = [{ text: 'warm-up' }];
    for (let r = 0; r < rounds; r++) steps.push({ text: Array.from({ length: 100 }, (_, i) => `${r}.${i}:${chunk}`), toolCalls: [{ id: `t${r}`, name: 'Echo', input: {} }] });
    steps.push({ text: 'end' });
    // Each client alone may be far behind; together they may not.
    const b = await boot({ steps, extra: [echoTool], settings: { gateway: { maxClientBufferBytes: 256 * 1024 * 1024, maxTotalBufferBytes: 6 * 1024 * 1024 } } });
    const healthy = await TestClient.connect(b);
    const other = await TestClient.connect(b);
    const stalled = await TestClient.connect(b);
    const { conversationId } = await healthy.ok<{ conversationId: string }>(text('one'));
    const d1 = await healthy.terminal(conversationId);
    for (const c of [other, stalled]) await c.ok({ type: 'subscribe', conversationId, lastSeq: d1.seq });
    (stalled.ws as unknown as { _socket: Socket })._socket.pause();
    let stalledClosed = false;
    void stalled.closed.then(() => (stalledClosed = true));

    await healthy.ok(sendTo(conversationId, 'two', 'big'));
    for (const c of [healthy, other]) {
      const done = await c.terminal(conversationId, d1.seq, 25_000);
      expect(done.type).toBe('done');
      const stream = c.stream(conversationId).filter((m) => m.seq > d1.seq);
      expect(contiguous(coveredSeqs(stream))).toBe(true);
      const texts = stream.flatMap((m) => (m.event.type === 'message_update' && m.event.delta.kind === 'text' ? [m.event.delta.text] : []));
      expect(texts).toHaveLength(rounds * 100 + 1);
    }
    const stats = b.gateway.stats();
    expect(stats.dropped).toBe(1);
    expect(stats.clients).toHaveLength(2);
    expect(stats.totalHeldBytes).toBeLessThanOrEqual(6 * 1024 * 1024);
    (stalled.ws as unknown as { _socket: Socket })._socket.resume();
    await stalled.closed;
    expect(stalledClosed).toBe(true);
  });
});
