import { afterEach, describe, expect, it } from 'vitest';
import type { ServerMessage } from '../../lib/gateway-protocol/protocol.js';
import { TestClient, coveredSeqs, boot, cleanup, gate, sendTo, sleep, text } from './gateway-harness.js';

afterEach(cleanup);

type QueueMsg = Extract<ServerMessage, { type: 'queue' }>;

const lastUserText = (req: { messages: Array<{ role: string; content: Array<{ type: string; text?: string }> }> }) =>
  req.messages.filter((m) => m.role === 'user').at(-1)!.content[0]!.text;

describe('gateway queue', () => {
  it('messages sent during a run wait; remove, reorder, edit; send-now interrupts; the next runs after', async () => {
    const g = gate(0);
    const b = await boot({ steps: [{ text: 'r1' }, { text: 'r2' }, { text: 'r3' }], gates: [g] });
    const a = await TestClient.connect(b);
    const watcher = await TestClient.connect(b);
    const { conversationId } = await a.ok<{ conversationId: string }>(text('m1'));
    await g.reached;
    await watcher.ok({ type: 'subscribe', conversationId });

    const ids: string[] = [];
    for (const t of ['m2', 'm3', 'm4']) {
      const r = await a.ok<{ queued: boolean; itemId: string }>(sendTo(conversationId, t));
      expect(r.queued).toBe(true);
      ids.push(r.itemId);
    }
    const [m2, m3, m4] = ids as [string, string, string];
    const latestQueue = async (cl: TestClient, n: number) => {
      await cl.waitFor((m) => m.type === 'queue' && cl.messages.filter((x) => x.type === 'queue').length >= n);
      return (cl.messages.filter((x) => x.type === 'queue').at(-1) as QueueMsg).items.map((i) => i.text);
    };
    // Its subscribe got the (empty) queue first, then one message per change.
    expect(await latestQueue(watcher, 4)).toEqual(['m2', 'm3', 'm4']);
    expect(b.provider.requests).toHaveLength(1);

    await a.ok({ type: 'chat_queue', item: { action: 'queue_remove', conversationId, itemId: m3 } });
    expect(await latestQueue(watcher, 5)).toEqual(['m2', 'm4']);
    await a.ok({ type: 'chat_queue', item: { action: 'queue_reorder', conversationId, itemIds: [m4, m2] } });
    expect(await latestQueue(watcher, 6)).toEqual(['m4', 'm2']);
    await a.ok({ type: 'chat_queue', item: { action: 'queue_edit', conversationId, itemId: m2, text: 'm2 edited' } });
    expect(await latestQueue(watcher, 7)).toEqual(['m4', 'm2 edited']);
    const missing = await a.request({ type: 'chat_queue', item: { action: 'queue_remove', conversationId, itemId: m3 } });
    expect(missing.ok === false && missing.error.code).toBe('not_found');

    // Send now: the running turn is stopped (one aborted done) and m2 runs next, then m4.
    const now = await a.ok<{ interrupted: boolean }>({ type: 'chat_queue', item: { action: 'queue_send_now', conversationId, itemId: m2 } });
    expect(now.interrupted).toBe(true);
    const first = await a.terminal(conversationId);
    expect(first.event.type === 'agent_end' && first.event.status).toBe('aborted');
    const second = await a.terminal(conversationId, first.seq);
    expect(second.event.type === 'agent_end' && second.event.status).toBe('completed');
    const third = await a.terminal(conversationId, second.seq);
    expect(third.event.type === 'agent_end' && third.event.status).toBe('completed');
    expect(b.provider.requests.map(lastUserText)).toEqual(['m1', 'm2 edited', 'm4']);
    await watcher.terminal(conversationId, second.seq);
    expect((watcher.messages.filter((x) => x.type === 'queue').at(-1) as QueueMsg).items).toEqual([]);
    // Each run ended with exactly one terminal message, and seq never went back.
    const stream = watcher.stream(conversationId);
    expect(stream.filter((m) => m.type === 'done' || m.type === 'error')).toHaveLength(3);
    expect(coveredSeqs(stream)).toEqual([...coveredSeqs(stream)].sort((x, y) => x - y));
  });

  it('a client that subscribes while messages wait is sent the queue at once', async () => {
    const g = gate(0);
    const b = await boot({ steps: [{ text: 'r1' }, { text: 'r2' }], gates: [g] });
    const a = await TestClient.connect(b);
    const { conversationId } = await a.ok<{ conversationId: string }>(text('m1'));
    await g.reached;
    await a.ok(sendTo(conversationId, 'waiting'));
    const late = await TestClient.connect(b);
    await late.ok({ type: 'subscribe', conversationId });
    const q = (await late.waitFor((m) => m.type === 'queue')) as QueueMsg;
    expect(q.items.map((i) => i.text)).toEqual(['waiting']);
    g.release();
    await a.terminal(conversationId);
  });

  it('a message queued behind a run starts by itself when the run ends, with its clientRequestId deduplicated', async () => {
    const g = gate(0);
    const b = await boot({ steps: [{ text: 'r1' }, { text: 'r2' }], gates: [g] });
    const a = await TestClient.connect(b);
    const { conversationId } = await a.ok<{ conversationId: string }>(text('m1'));
    await g.reached;
    const q = await a.ok<{ itemId: string }>(sendTo(conversationId, 'later', 'req-later'));
    const dup = await a.ok<{ itemId: string; duplicate: boolean }>(sendTo(conversationId, 'later', 'req-later'));
    expect(dup).toMatchObject({ itemId: q.itemId, duplicate: true });
    g.release();
    const d1 = await a.terminal(conversationId);
    const d2 = await a.terminal(conversationId, d1.seq);
    expect(d2.event.type === 'agent_end' && d2.event.status).toBe('completed');
    expect(b.provider.requests.map(lastUserText)).toEqual(['m1', 'later']);
    // Once started, the same request id reports the run, not the queue.
    const after = await a.ok<{ runId: string; duplicate: boolean }>(sendTo(conversationId, 'later', 'req-later'));
    expect(after.runId).toBe(d2.event.runId);
    await sleep(20);
    expect(b.provider.requests).toHaveLength(2);
  });

  it('stop ends the run; edit-and-resend is refused while a run is active and truncates after', async () => {
    const g = gate(0);
    const b = await boot({ steps: [{ text: 'first' }, { text: 'resent' }], gates: [g] });
    const a = await TestClient.connect(b);
    const { conversationId } = await a.ok<{ conversationId: string }>(text('original'));
    await g.reached;
    const start = a.stream(conversationId).find((m) => m.event.type === 'agent_start')!;
    const userId = start.event.type === 'agent_start' ? start.event.userMessage!.id : '';
    const busy = await a.request({ type: 'chat_queue', item: { action: 'edit_resend', conversationId, messageId: userId, text: 'x', clientRequestId: 'e1' } });
    expect(busy.ok === false && busy.error.code).toBe('conflict');
    await a.ok({ type: 'chat_queue', item: { action: 'stop', conversationId } });
    const d1 = await a.terminal(conversationId);
    await a.ok({ type: 'chat_queue', item: { action: 'edit_resend', conversationId, messageId: userId, text: 'rewritten', clientRequestId: 'e2' } });
    await a.terminal(conversationId, d1.seq);
    const req = b.provider.requests[1]!;
    expect(req.messages.map((m) => m.role)).toEqual(['user']);
    expect(lastUserText(req)).toBe('rewritten');
    const bad = await a.request({ type: 'chat_queue', item: { action: 'edit_resend', conversationId, messageId: 'm_nope', text: 'x', clientRequestId: 'e3' } });
    expect(bad.ok === false && bad.error.message).toContain('m_nope');
  });
});
