/**
 * The replies the server sends for `subscribe` and `chat_queue` have the shape ReplyMap declares
 * (lib/gateway-protocol/protocol.ts). The server builds them through the typed ReplyMap (compile
 * time); here each reply a real server sends is parsed with a strict schema whose inferred type
 * is checked to equal the declared one, so the schema cannot drift from ReplyMap either.
 */
import { z } from 'zod';
import { afterEach, describe, expect, expectTypeOf, it } from 'vitest';
import type { ChatQueueReplies, ReplyMap, ServerMessage } from '../../lib/gateway-protocol/protocol.js';
import { TestClient, boot, cleanup, gate, sendTo, text } from '../integration/gateway-harness.js';

afterEach(cleanup);

const id = z.string().min(1);
const RunStarted = z.strictObject({ conversationId: id, runId: id.optional(), queued: z.literal(true).optional(), itemId: id.optional(), duplicate: z.literal(true).optional() });
const Schemas = {
  subscribe: z.union([
    z.strictObject({ conversationId: id, mode: z.enum(['live', 'snapshot']), lastSeq: z.number().int().min(0) }),
    z.strictObject({ conversationId: id, mode: z.literal('replay'), replayed: z.number().int().min(0), lastSeq: z.number().int().min(0) }),
  ]),
  send: RunStarted,
  edit_resend: RunStarted.extend({ removedCount: z.number().int().min(0).optional() }),
  regenerate: RunStarted.extend({ messageId: id.optional(), removedCount: z.number().int().min(0).optional() }),
  stop: z.strictObject({ conversationId: id, stopped: z.boolean() }),
  queue_remove: z.strictObject({ conversationId: id }),
  queue_reorder: z.strictObject({ conversationId: id }),
  queue_edit: z.strictObject({ conversationId: id }),
  queue_send_now: z.strictObject({ conversationId: id, interrupted: z.boolean() }),
};

type Parsed<K extends keyof typeof Schemas> = z.infer<(typeof Schemas)[K]>;

/** The reply's data, parsed with the schema of `kind` (a failure names the field). */
async function reply<K extends keyof typeof Schemas>(client: TestClient, kind: K, message: Record<string, unknown>): Promise<Parsed<K>> {
  const data = await client.ok<unknown>(message);
  const r = Schemas[kind].safeParse(data);
  if (!r.success) throw new Error(`${kind} reply ${JSON.stringify(data)}: ${r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  return r.data as Parsed<K>;
}

describe('gateway replies match ReplyMap', () => {
  it('the test schemas are the declared reply types (each assignable to the other)', () => {
    const both = <A, B>(check: [A] extends [B] ? ([B] extends [A] ? true : false) : false) => expect(check).toBe(true);
    both<Parsed<'subscribe'>, ReplyMap['subscribe']>(true);
    both<Parsed<'send'>, ChatQueueReplies['send']>(true);
    both<Parsed<'edit_resend'>, ChatQueueReplies['edit_resend']>(true);
    both<Parsed<'regenerate'>, ChatQueueReplies['regenerate']>(true);
    both<Parsed<'stop'>, ChatQueueReplies['stop']>(true);
    both<Parsed<'queue_remove'>, ChatQueueReplies['queue_remove']>(true);
    both<Parsed<'queue_reorder'>, ChatQueueReplies['queue_reorder']>(true);
    both<Parsed<'queue_edit'>, ChatQueueReplies['queue_edit']>(true);
    both<Parsed<'queue_send_now'>, ChatQueueReplies['queue_send_now']>(true);
    // @ts-expect-error a schema that drifts from ReplyMap fails to compile
    both<Parsed<'stop'>, ChatQueueReplies['queue_send_now']>(true);
    expectTypeOf<Parsed<'subscribe'>['mode']>().toEqualTypeOf<ReplyMap['subscribe']['mode']>();
  });

  it('subscribe answers snapshot, live and replay with their declared fields', async () => {
    const b = await boot({ steps: [{ text: 'one' }, { text: 'two' }] });
    const a = await TestClient.connect(b);
    const started = await reply(a, 'send', text('hello'));
    expect(started.runId).toBeTruthy();
    const { conversationId } = started;
    const done = await a.terminal(conversationId);

    const other = await TestClient.connect(b);
    expect(await reply(other, 'subscribe', { type: 'subscribe', conversationId })).toEqual({ conversationId, mode: 'snapshot', lastSeq: expect.any(Number) });
    expect(await reply(other, 'subscribe', { type: 'subscribe', conversationId })).toEqual({ conversationId, mode: 'live', lastSeq: done.seq });

    const third = await TestClient.connect(b);
    const replayed = await reply(third, 'subscribe', { type: 'subscribe', conversationId, lastSeq: 1 });
    expect(replayed).toMatchObject({ conversationId, mode: 'replay', lastSeq: done.seq });
    expect(replayed.mode === 'replay' && replayed.replayed).toBe(done.seq - 1);
  });

  it('chat_queue answers send, queued send, duplicate, queue edits, send-now, stop, edit-resend and regenerate with their declared fields', async () => {
    const g = gate(0);
    const b = await boot({ steps: [{ text: 'r1' }, { text: 'r2' }, { text: 'r3' }, { text: 'r4' }, { text: 'r5' }], gates: [g] });
    const a = await TestClient.connect(b);
    const first = text('m1');
    const { conversationId, runId } = await reply(a, 'send', first);
    await g.reached;
    expect(await reply(a, 'send', first)).toEqual({ conversationId, runId, duplicate: true });

    const q1 = await reply(a, 'send', sendTo(conversationId, 'm2'));
    const q2 = await reply(a, 'send', sendTo(conversationId, 'm3'));
    expect(q1).toEqual({ conversationId, queued: true, itemId: expect.any(String) });
    const item = (action: string, extra: Record<string, unknown>) => ({ type: 'chat_queue', item: { action, conversationId, ...extra } });
    expect(await reply(a, 'queue_edit', item('queue_edit', { itemId: q1.itemId, text: 'm2 edited' }))).toEqual({ conversationId });
    expect(await reply(a, 'queue_reorder', item('queue_reorder', { itemIds: [q2.itemId, q1.itemId] }))).toEqual({ conversationId });
    expect(await reply(a, 'queue_remove', item('queue_remove', { itemId: q2.itemId }))).toEqual({ conversationId });
    expect(await reply(a, 'queue_send_now', item('queue_send_now', { itemId: q1.itemId }))).toEqual({ conversationId, interrupted: true });
    // The interrupted run ends, then the queued item runs to its end.
    await a.waitFor((m) => m.type === 'done' && 'event' in m && m.conversationId === conversationId && m.event.runId !== runId);
    expect(await reply(a, 'stop', item('stop', {}))).toEqual({ conversationId, stopped: false });

    const regenerated = await reply(a, 'regenerate', item('regenerate', { clientRequestId: 'c-regen' }));
    expect(regenerated).toMatchObject({ conversationId, runId: expect.any(String), messageId: expect.any(String), removedCount: expect.any(Number) });
    await a.waitFor((m) => m.type === 'done' && 'event' in m && m.event.runId === regenerated.runId);
    const viewer = await TestClient.connect(b);
    await viewer.ok({ type: 'conversations.load', conversationId });
    const snap = (await viewer.waitFor((m) => m.type === 'snapshot')) as Extract<ServerMessage, { type: 'snapshot' }>;
    const lastUser = snap.messages.filter((m) => m.role === 'user').at(-1)!;
    const edited = await reply(a, 'edit_resend', item('edit_resend', { messageId: lastUser.id, text: 'again', clientRequestId: 'c-edit' }));
    expect(edited.removedCount ?? 0).toBeGreaterThanOrEqual(0);
    expect(edited).toMatchObject({ conversationId, runId: expect.any(String) });
    await a.waitFor((m) => m.type === 'done' && 'event' in m && m.event.runId === edited.runId);
  });
});
