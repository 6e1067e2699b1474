/**
 * Tool approvals through the gateway: every subscriber sees the pending `tool_approval` event,
 * a reconnecting client gets it back in the snapshot, `chat_queue.tool_approval` with another
 * conversation's id is refused (and the approval stays pending) while the right one approves,
 * unknown and settled ids get clear replies, and a stop from any client settles it as denied.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { LifecycleEvent, Plugin, ProviderRequest } from '../../plugin-api.js';
import permissions from '../../plugins/permissions/index.js';
import { approvalEventOf } from '../../plugins/permissions/events.js';
import type { PermissionsService } from '../../plugins/permissions/service.js';
import type { ServerMessage } from '../../lib/gateway-protocol/protocol.js';
import { boot, cleanup, TestClient, text, type StreamMessage } from './gateway-harness.js';

afterEach(cleanup);

let ran = 0;
const echo: Plugin = {
  name: 'tool-echo',
  apply: (ctx) =>
    void ctx.registerTool({
      name: 'Echo',
      description: 'echo',
      parameters: { safeParse: (v: unknown) => ({ success: true, data: v }) },
      jsonSchema: { type: 'object' },
      execute: async () => (ran++, { content: [{ type: 'text', text: 'echoed' }] }),
    }),
};

const SETTINGS = { permissions: { rules: [{ tool: 'Echo', action: 'ask' as const }], approvalTimeoutMs: 60_000 } };
// Each run: one Echo call, then a text reply once its result is back.
const steps = (req: ProviderRequest) => (req.messages.at(-1)?.role === 'user' ? { toolCalls: [{ id: 'e1', name: 'Echo', input: { say: 'hi' } }] } : { text: 'done' });

const isApproval = (kind: 'asked' | 'settled') => (m: ServerMessage) => 'event' in m && approvalEventOf(m.event as LifecycleEvent)?.kind === kind;
const approval = (conversationId: string, decision: string, item_id = 'e1') => ({ type: 'chat_queue', item: { action: 'tool_approval', item_id, conversation_id: conversationId, decision } });

async function start() {
  const b = await boot({ steps, settings: SETTINGS, extra: [permissions, echo] });
  const a = await TestClient.connect(b);
  const other = await TestClient.connect(b);
  const { conversationId } = await a.ok<{ conversationId: string }>({ ...text('go'), item: { ...text('go').item, mode: 'tools' } });
  await other.ok({ type: 'subscribe', conversationId });
  // The second client joined late: it sees the approval in its snapshot's pending events, or live.
  await Promise.all([a.waitFor(isApproval('asked')), other.waitFor((m) => isApproval('asked')(m) || (m.type === 'snapshot' && !!m.pending?.some((e) => approvalEventOf(e)?.kind === 'asked')))]);
  return { b, a, other, conversationId, service: b.server.kernel.services.get<PermissionsService>('permissions')! };
}

describe('tool approvals over the gateway', () => {
  it('both clients see it; the wrong conversation id is refused, the right one approves and the tool runs', async () => {
    ran = 0;
    const { a, other, conversationId, service, b } = await start();
    const asked = approvalEventOf(a.stream(conversationId).find(isApproval('asked'))!.event)!;
    expect(asked.payload).toMatchObject({ toolCallId: 'e1', toolName: 'Echo', args: { say: 'hi' }, rule: { index: 0, tool: 'Echo' } });
    expect(ran).toBe(0);

    // A reloading client: the pending approval comes back in the snapshot's pending events.
    const late = await TestClient.connect(b);
    await late.ok({ type: 'conversations.load', conversationId });
    const snap = await late.waitFor<Extract<ServerMessage, { type: 'snapshot' }>>((m) => m.type === 'snapshot' && m.conversationId === conversationId);
    expect(snap.running).toBe(true);
    const inSnapshot = snap.pending?.map((e) => approvalEventOf(e)).filter((x) => x?.kind === 'asked');
    expect(inSnapshot?.map((x) => x!.payload)).toEqual([asked.payload]);

    const wrong = await other.request(approval('someone-elses', 'approve'));
    expect(wrong).toMatchObject({ ok: false, error: { code: 'forbidden', message: expect.stringContaining('does not belong to conversation "someone-elses"') } });
    expect(service.pending(conversationId)).toHaveLength(1);
    const unknown = await other.request(approval(conversationId, 'approve', 'nope'));
    expect(unknown).toMatchObject({ ok: false, error: { code: 'not_found', message: 'no pending approval with id "nope" in conversation "' + conversationId + '"' } });
    const bad = await other.request(approval(conversationId, 'maybe'));
    expect(bad).toMatchObject({ ok: false, error: { code: 'bad_request', message: expect.stringContaining('decision must be "approve", "deny" or "approve_session"') } });

    expect(await other.ok(approval(conversationId, 'approve'))).toEqual({ toolCallId: 'e1', conversationId, decision: 'approve', outcome: 'approved' });
    for (const c of [a, other]) {
      const settled = await c.waitFor<StreamMessage>(isApproval('settled'));
      expect(approvalEventOf(settled.event)!.payload).toMatchObject({ outcome: 'approved', approved: true });
      await c.terminal(conversationId);
    }
    expect(ran).toBe(1);
    const again = await a.request(approval(conversationId, 'deny'));
    expect(again).toMatchObject({ ok: false, error: { code: 'conflict', message: 'approval "e1" is already settled (approved); a later decision changes nothing' } });
  });

  it('deny from one client refuses the call for all; stop settles a pending one as denied', async () => {
    ran = 0;
    const first = await start();
    expect(await first.a.ok(approval(first.conversationId, 'deny'))).toMatchObject({ outcome: 'denied' });
    const end = await first.other.waitFor<StreamMessage>((m) => m.type === 'tool' && m.phase === 'end');
    expect(end.event.type === 'tool_execution_end' && end.event.result).toMatchObject({ isError: true, content: [{ text: expect.stringContaining('the user did not approve Echo') }] });
    await first.a.terminal(first.conversationId);
    expect(ran).toBe(0);

    // A new run in the same conversation asks again; a stop from the other client denies it.
    const after = first.a.stream(first.conversationId).at(-1)!.seq;
    await first.a.ok({ type: 'chat_queue', item: { action: 'send', conversationId: first.conversationId, text: 'again', mode: 'tools', clientRequestId: 'again-1' } });
    await first.other.waitFor((m) => isApproval('asked')(m) && 'seq' in m && m.seq > after);
    await first.other.ok({ type: 'chat_queue', item: { action: 'stop', conversationId: first.conversationId } });
    const settled = await first.a.waitFor<StreamMessage>((m) => isApproval('settled')(m) && 'seq' in m && m.seq > after);
    expect(approvalEventOf(settled.event)!.payload).toMatchObject({ outcome: 'cancelled', approved: false, reason: 'the run was stopped' });
    expect(first.service.pending()).toEqual([]);
    expect(ran).toBe(0);
  });
});
