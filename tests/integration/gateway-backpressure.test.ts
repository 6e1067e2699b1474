import type { Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { FakeStep } from '../helpers/fake-provider.js';
import { TestClient, coveredSeqs, okTool as echoTool, boot, cleanup, contiguous, sleep, text } from './gateway-harness.js';

afterEach(cleanup);

describe('gateway backpressure and liveness', () => {
  it('a client that stops reading is dropped past its cap; the others still get everything', async () => {
    // ~20 MB of events over 25 rounds: far more than the kernel's socket buffers plus the 2 MB
    // cap, while each single message (a round's reply) stays well under the cap.
    const chunk = 'x'.repeat(2 * 1024);
    const rounds = 25;
    const steps: FakeStep[] = [{ text: 'warm-up' }];
    for (let r = 0; r < rounds; r++) {
      steps.push({ text: Array.from({ length: 100 }, (_, i) => `${r}.${i}:${chunk}`), toolCalls: [{ id: `t${r}`, name: 'Echo', input: {} }] });
    }
    steps.push({ text: 'end' });
    const b = await boot({ steps, extra: [echoTool], settings: { gateway: { maxClientBufferBytes: 2 * 1024 * 1024 } } });
    const healthy = await TestClient.connect(b);
    const stalled = await TestClient.connect(b);
    const { conversationId } = await healthy.ok<{ conversationId: string }>(text('one'));
    const d1 = await healthy.terminal(conversationId);
    await stalled.ok({ type: 'subscribe', conversationId, lastSeq: d1.seq });
    (stalled.ws as unknown as { _socket: Socket })._socket.pause();

    await healthy.ok({ type: 'chat_queue', item: { action: 'send', conversationId, text: 'two', clientRequestId: 'big' } });
    const done = await healthy.terminal(conversationId, d1.seq, 25_000);
    expect(done.type).toBe('done');
    const stream = healthy.stream(conversationId);
    expect(contiguous(coveredSeqs(stream))).toBe(true);
    const texts = stream.flatMap((m) => (m.seq > d1.seq && m.event.type === 'message_update' && m.event.delta.kind === 'text' ? [m.event.delta.text] : []));
    expect(texts).toHaveLength(rounds * 100 + 1);

    const stats = b.gateway.stats();
    expect(stats.dropped).toBe(1);
    expect(stats.clients).toHaveLength(1);
  });

  it('the heartbeat drops a socket that stops answering pings', async () => {
    const b = await boot({ settings: { gateway: { heartbeatIntervalMs: 50 } } });
    const c = await TestClient.connect(b);
    const alive = await TestClient.connect(b);
    (c.ws as unknown as { _socket: Socket })._socket.pause(); // pongs are never read nor sent
    for (let i = 0; i < 40 && b.gateway.stats().dropped === 0; i++) await sleep(25);
    expect(b.gateway.stats().dropped).toBe(1);
    expect(b.gateway.stats().clients).toHaveLength(1);
    expect((await alive.request({ type: 'settings.get' })).ok).toBe(true);
  });

  it('a frame over maxPayload closes that socket only', async () => {
    const b = await boot({ settings: { gateway: { maxPayloadBytes: 4096 } } });
    const big = await TestClient.connect(b);
    const other = await TestClient.connect(b);
    big.send({ type: 'conversations.list', search: 'x'.repeat(10_000) });
    await big.closed;
    expect((await other.request({ type: 'providers.list' })).ok).toBe(true);
  });
});
