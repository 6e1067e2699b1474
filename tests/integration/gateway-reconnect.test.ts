import { afterEach, describe, expect, it } from 'vitest';
import type { ServerMessage } from '../../lib/gateway-protocol/protocol.js';
import { TestClient, coveredSeqs, boot, cleanup, contiguous, gate, sendTo, text } from './gateway-harness.js';

afterEach(cleanup);

type Snapshot = Extract<ServerMessage, { type: 'snapshot' }>;

describe('gateway reconnect, replay and fan-out', () => {
  it('reconnecting with a lastSeq inside the window gets exactly the missed events', async () => {
    const g = gate(0, 'done');
    const b = await boot({ steps: [{ text: ['a', 'b', 'c', 'd'] }], gates: [g] });
    const c = await TestClient.connect(b);
    const { conversationId } = await c.ok<{ conversationId: string }>(text('go'));
    await g.reached;
    // Everything up to the gate has arrived (the final block of the text is the last event before it).
    await c.waitFor((m) => m.type === 'token' && 'event' in m && m.event.type === 'message_update' && m.event.delta.kind === 'block');
    const seen = c.stream(conversationId);
    const lastSeq = seen.at(-1)!.seq;
    await c.close();

    g.release();
    await b.server.kernel.runtime.activeRun(conversationId)?.result;
    const c2 = await TestClient.connect(b);
    const sub = await c2.ok<{ mode: string; replayed: number }>({ type: 'subscribe', conversationId, lastSeq });
    expect(sub.mode).toBe('replay');
    await c2.terminal(conversationId);
    const missed = c2.stream(conversationId);
    expect(missed[0]!.seq).toBe(lastSeq + 1);
    expect(contiguous(coveredSeqs(missed))).toBe(true);
    expect(missed.map((m) => m.event.type)).toEqual(['message_end', 'turn_end', 'agent_end']);
    expect(sub.replayed).toBe(3);
    expect(coveredSeqs([...seen, ...missed])).toEqual(coveredSeqs([...seen, ...missed]).map((_, i) => i + 1));
    expect(c2.messages.some((m) => m.type === 'snapshot')).toBe(false);
  });

  it('a client away while the next run started still replays both runs (replayGraceMs); past the grace it gets a snapshot', async () => {
    for (const graceMs of [120_000, 0]) {
      const b = await boot({ steps: [{ text: ['a', 'b'] }, { text: ['c', 'd'] }], settings: { gateway: { replayGraceMs: graceMs } } });
      const c = await TestClient.connect(b);
      const { conversationId } = await c.ok<{ conversationId: string }>(text('go'));
      const done = await c.terminal(conversationId);
      await c.close();
      // The next run starts and ends with nobody subscribed.
      const run = b.server.kernel.runtime.startRun({ conversationId, input: [{ type: 'text', text: 'again' }], keepEvents: false });
      await run.result;
      const c2 = await TestClient.connect(b);
      const sub = await c2.ok<{ mode: string }>({ type: 'subscribe', conversationId, lastSeq: done.seq });
      if (graceMs > 0) {
        expect(sub.mode).toBe('replay');
        const missed = c2.stream(conversationId);
        expect(missed[0]!.seq).toBe(done.seq + 1);
        expect(contiguous(coveredSeqs(missed))).toBe(true);
        expect(missed.at(-1)!.type).toBe('done');
      } else expect(sub.mode).toBe('snapshot');
      // Either way the (now empty) queue is sent, so a stale queued item cannot linger.
      await c2.waitFor((m) => m.type === 'queue' && m.conversationId === conversationId);
      await c2.close();
    }
  });

  it('replays the missed part of a run still streaming, then continues live with no gap', async () => {
    const g = gate(0, 'block_end');
    const b = await boot({ steps: [{ text: ['one ', 'two ', 'three'] }], gates: [g] });
    const c = await TestClient.connect(b);
    const { conversationId } = await c.ok<{ conversationId: string }>(text('go'));
    const first = await c.waitFor((m) => m.type === 'token');
    await c.close();
    await g.reached;
    const c2 = await TestClient.connect(b);
    await c2.ok({ type: 'subscribe', conversationId, lastSeq: first.type === 'token' ? first.seq : 0 });
    g.release();
    await c2.terminal(conversationId);
    const seqs = coveredSeqs(c2.stream(conversationId));
    expect(seqs[0]).toBe((first as { seq: number }).seq + 1);
    expect(contiguous(seqs)).toBe(true);
  });

  it('past the window (or with no lastSeq) a subscriber gets a snapshot with the in-progress partial reply', async () => {
    const g = gate(1, 'block_end');
    const b = await boot({ steps: [{ text: 'first answer' }, { text: ['Hello', ', ', 'world'] }], gates: [g], settings: { gateway: { replayWindow: 2 } } });
    const c = await TestClient.connect(b);
    const { conversationId } = await c.ok<{ conversationId: string }>(text('one'));
    const done1 = await c.terminal(conversationId);
    await c.ok(sendTo(conversationId, 'two'));
    await c.waitFor((m) => m.type === 'token' && m.seq > done1.seq);
    // The client saw the end of run 1; run 2 has emitted more events than the window keeps.
    const lastSeq = done1.seq;
    await c.close();
    await g.reached;

    const c2 = await TestClient.connect(b);
    const sub = await c2.ok<{ mode: string; lastSeq: number }>({ type: 'subscribe', conversationId, lastSeq });
    expect(sub.mode).toBe('snapshot');
    const snap = await c2.waitFor<Snapshot>((m) => m.type === 'snapshot');
    expect(snap.running).toBe(true);
    expect(snap.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    expect(snap.messages[2]!.content).toEqual([{ type: 'text', text: 'two' }]);
    expect(snap.partial?.content).toEqual([{ type: 'text', text: 'Hello, world' }]);
    expect(snap.partial?.meta).toEqual({ partial: true });
    expect(snap.pending?.map((e) => e.type)).toEqual(['agent_start', 'message_start']);

    // A fresh subscribe (no lastSeq) gets the same kind of snapshot.
    const c3 = await TestClient.connect(b);
    await c3.ok({ type: 'subscribe', conversationId });
    const snap3 = await c3.waitFor<Snapshot>((m) => m.type === 'snapshot');
    expect(snap3.lastSeq).toBe(snap.lastSeq);

    g.release();
    for (const cl of [c2, c3]) {
      await cl.terminal(conversationId);
      const live = cl.stream(conversationId);
      expect(live[0]!.seq).toBe(snap.lastSeq + 1);
      expect(contiguous(coveredSeqs(live))).toBe(true);
    }
  });

  it('a run keeps going when its client disconnects, and its reply is in the next snapshot', async () => {
    const b = await boot({ steps: [{ text: Array.from({ length: 50 }, (_, i) => `w${i} `) }] });
    const c = await TestClient.connect(b);
    const { conversationId } = await c.ok<{ conversationId: string }>(text('go'));
    await c.waitFor((m) => m.type === 'token');
    c.terminate();
    const run = b.server.kernel.runtime.activeRun(conversationId);
    expect(run).toBeDefined();
    expect((await run!.result).status).toBe('completed');

    const c2 = await TestClient.connect(b);
    await c2.ok({ type: 'conversations.load', conversationId });
    const snap = await c2.waitFor<Snapshot>((m) => m.type === 'snapshot');
    expect(snap.running).toBe(false);
    const reply = snap.messages.at(-1)!;
    expect(reply.role).toBe('assistant');
    expect(reply.content[0]).toEqual({ type: 'text', text: Array.from({ length: 50 }, (_, i) => `w${i} `).join('') });
  });

  it('two clients on one conversation receive the same events in the same order', async () => {
    const b = await boot({ steps: [{ text: 'setup' }, { text: Array.from({ length: 30 }, (_, i) => `t${i}`) }] });
    const a = await TestClient.connect(b);
    const { conversationId } = await a.ok<{ conversationId: string }>(text('one'));
    const done1 = await a.terminal(conversationId);
    const other = await TestClient.connect(b);
    await other.ok({ type: 'subscribe', conversationId, lastSeq: done1.seq });
    await a.ok(sendTo(conversationId, 'two'));
    await a.terminal(conversationId, done1.seq);
    await other.terminal(conversationId, done1.seq);
    const pick = (cl: TestClient) => cl.stream(conversationId).filter((m) => m.seq > done1.seq).map((m) => JSON.stringify(m));
    expect(pick(other)).toEqual(pick(a));
    expect(pick(a).length).toBeGreaterThan(30);
  });
});
