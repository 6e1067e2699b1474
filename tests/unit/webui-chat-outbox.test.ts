/**
 * The chat store's parts that talk to the gateway, driven through a real GatewayClient over a
 * scripted transport: the outbox (a message typed offline waits and goes once on reconnect, the
 * draft's first message creates the conversation before the next one goes, a refusal rolls
 * back), the run actions (edit-and-resend and regenerate put everything back when refused), and
 * subscriptions (re-sent with the last seq; leaving keeps a running conversation).
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { reactive, ref } from 'vue';
import type { ClientMessage, ConversationSummary, ServerMessage } from '../../lib/gateway-protocol/protocol.js';
import { GatewayClient, setClient } from '../../webui/src/api/client.js';
import { createRunActions } from '../../webui/src/lib/chat-actions.js';
import { DRAFT, type ChatConversations } from '../../webui/src/lib/chat-core.js';
import { createOutbox } from '../../webui/src/lib/chat-outbox.js';
import { createSync } from '../../webui/src/lib/chat-sync.js';
import { emptyState, type ConversationState } from '../../webui/src/lib/conversation-state.js';
import type { Transport, TransportState, TransportStatus } from '../../webui/src/transport/types.js';
import type { Message } from '../../plugin-api.js';

type Sent = ClientMessage & { id?: string; item?: Record<string, unknown> };

/** A transport the test drives: it records what is sent and delivers what the test says the server answered. */
class ScriptedTransport implements Transport {
  sent: Sent[] = [];
  private messageFns = new Set<(m: ServerMessage) => void>();
  private statusFns = new Set<(s: TransportStatus) => void>();
  connect(): void {}
  reconnectNow(): void {}
  close(): void {}
  send(msg: ClientMessage): void {
    this.sent.push(msg as Sent);
  }
  onMessage(fn: (m: ServerMessage) => void) {
    this.messageFns.add(fn);
    return () => void this.messageFns.delete(fn);
  }
  onStatus(fn: (s: TransportStatus) => void) {
    this.statusFns.add(fn);
    return () => void this.statusFns.delete(fn);
  }
  status(state: TransportState): void {
    for (const fn of this.statusFns) fn({ state, attempt: 0, wasOpen: true });
  }
  reply(req: Sent, data?: unknown): void {
    for (const fn of this.messageFns) fn({ type: 'reply', id: req.id!, ok: true, data });
  }
  refuse(req: Sent, code: string, message: string): void {
    for (const fn of this.messageFns) fn({ type: 'reply', id: req.id!, ok: false, error: { code, message } });
  }
  /** What was sent of one chat_queue action. */
  actions(action: string): Sent[] {
    return this.sent.filter((m) => m.type === 'chat_queue' && m.item?.action === action);
  }
}

const tick = () => new Promise((r) => setTimeout(r, 0));
const user = (id: string, text: string): Message => ({ id, role: 'user', content: [{ type: 'text', text }], createdAt: 1 });
const reply = (id: string): Message => ({ id, role: 'assistant', content: [{ type: 'text', text: 'ok' }], createdAt: 2 });

function harness() {
  const transport = new ScriptedTransport();
  const gateway = new GatewayClient(transport, 5_000);
  setClient(gateway);
  const states = reactive<Record<string, ConversationState>>({});
  const state = (id: string) => {
    if (!states[id]) states[id] = emptyState(id);
    return states[id]!;
  };
  const conversations: ChatConversations & { currentId: string | null } = reactive({
    currentId: null as string | null,
    items: [] as ConversationSummary[],
    notice: null as string | null,
    upsert: () => undefined,
    setRunning: () => undefined,
    open: (id: string | null) => {
      conversations.currentId = id;
    },
  });
  const sendError = ref<string | null>(null);
  const sentTick = ref(0);
  const adopted: Array<string | undefined> = [];
  const forgotten: string[] = [];
  const outbox = createOutbox({
    states,
    state,
    currentKey: () => conversations.currentId ?? DRAFT,
    runFields: () => ({ mode: 'agent-dev' as const }),
    draftInstructions: () => 'be brief',
    sendError,
    sentTick,
    adoptDraft: (id) => {
      adopted.push(id);
      if (!id) return;
      outbox.rekeyDraft(id);
      conversations.open(id);
    },
  });
  const sync = createSync({ states, state, conversations, holdsOutbox: outbox.holds, forget: (id) => void forgotten.push(id) });
  const actions = createRunActions({ state, conversations, runFields: () => ({}), sentTick });
  return { transport, gateway, states, state, conversations, sendError, sentTick, adopted, forgotten, outbox, sync, actions };
}

let h: ReturnType<typeof harness>;
beforeEach(() => {
  h = harness();
});

describe('WebUI chat: the outbox', () => {
  it('a message typed offline waits, shown as pending, and goes once when the socket opens', async () => {
    const sent = h.outbox.send({ text: 'hello' });
    expect(h.transport.sent).toEqual([]);
    expect(h.outbox.outboxOf(DRAFT).map((m) => m.id)).toEqual([expect.stringMatching(/^pending-/)]);
    expect(h.sentTick.value).toBe(1);
    h.transport.status('open');
    h.outbox.flush();
    h.outbox.flush();
    const [req] = h.transport.actions('send');
    expect(h.transport.actions('send')).toHaveLength(1);
    expect(req!.item).toMatchObject({ text: 'hello', mode: 'agent-dev', instructions: 'be brief' });
    expect(req!.item).not.toHaveProperty('conversationId');
    // Handed over: it is the draft's pending bubble, no longer a waiting one.
    expect(h.outbox.outboxOf(DRAFT)).toEqual([]);
    expect(h.state(DRAFT).pendingUser?.id).toMatch(/^pending-/);
    h.transport.reply(req!, { conversationId: 'c1' });
    await sent;
    expect(h.adopted).toEqual(['c1']);
    expect(h.outbox.holds('c1')).toBe(false);
  });

  it("the draft's second message waits for the first to create the conversation, then goes to it", async () => {
    h.transport.status('open');
    const first = h.outbox.send({ text: 'one' });
    const second = h.outbox.send({ text: 'two' });
    expect(h.transport.actions('send').map((m) => m.item!.text)).toEqual(['one']);
    h.transport.reply(h.transport.actions('send')[0]!, { conversationId: 'c1' });
    await first;
    const next = h.transport.actions('send')[1]!;
    expect(next.item).toMatchObject({ text: 'two', conversationId: 'c1' });
    expect(next.item).not.toHaveProperty('instructions');
    h.transport.reply(next);
    await second;
  });

  it('a socket lost mid-send sends it again on reconnect with the same clientRequestId; a late timeout of the old one does not count', async () => {
    h.conversations.open('c1');
    h.transport.status('open');
    const sent = h.outbox.send({ text: 'hi' });
    const firstTry = h.transport.actions('send')[0]!;
    h.transport.status('reconnecting');
    h.outbox.requeueInFlight();
    expect(h.state('c1').pendingUser).toBeNull();
    expect(h.outbox.outboxOf('c1')).toHaveLength(1);
    h.transport.status('open');
    h.outbox.flush();
    const secondTry = h.transport.actions('send')[1]!;
    expect(secondTry.item!.clientRequestId).toBe(firstTry.item!.clientRequestId);
    // The dead socket's request times out while the second try is out: nothing changes.
    h.transport.refuse(firstTry, 'timeout', 'no reply');
    await tick();
    expect(h.sendError.value).toBeNull();
    expect(h.outbox.holds('c1')).toBe(true);
    h.transport.reply(secondTry);
    await sent;
  });

  it('a refusal takes the pending bubble away, says why and rejects', async () => {
    h.conversations.open('c1');
    h.transport.status('open');
    const sent = h.outbox.send({ text: 'hi' });
    h.transport.refuse(h.transport.actions('send')[0]!, 'usage', 'unknown provider');
    await expect(sent).rejects.toThrow('unknown provider');
    expect(h.sendError.value).toBe('unknown provider');
    expect(h.state('c1').pendingUser).toBeNull();
  });

  it("a deleted conversation's waiting messages fail", async () => {
    h.conversations.open('c1');
    const sent = h.outbox.send({ text: 'hi' });
    h.outbox.drop('c1', new Error('the conversation was deleted'));
    await expect(sent).rejects.toThrow('deleted');
    expect(h.outbox.holds('c1')).toBe(false);
  });
});

describe('WebUI chat: run actions', () => {
  beforeEach(() => {
    h.transport.status('open');
    h.conversations.open('c1');
    h.state('c1').messages = [user('u1', 'one'), reply('a1'), user('u2', 'two'), reply('a2')];
  });

  it('edit and resend truncates at the message and shows the new text pending; a refusal puts history back', async () => {
    const s = h.state('c1');
    const p = h.actions.editResend('c1', 'u2', { text: 'two, better' });
    expect(s.messages.map((m) => m.id)).toEqual(['u1', 'a1']);
    expect(s.pendingUser?.content).toEqual([{ type: 'text', text: 'two, better' }]);
    h.transport.refuse(h.transport.actions('edit_resend')[0]!, 'usage', 'busy');
    await expect(p).rejects.toThrow('busy');
    expect(s.messages.map((m) => m.id)).toEqual(['u1', 'a1', 'u2', 'a2']);
    expect(s.pendingUser).toBeNull();
    expect(s.error).toEqual({ code: 'usage', message: 'busy' });
  });

  it('retry resends the last user message as it was', async () => {
    const p = h.actions.retry('c1');
    const req = h.transport.actions('edit_resend')[0]!;
    expect(req.item).toMatchObject({ messageId: 'u2', text: 'two', conversationId: 'c1' });
    h.transport.reply(req);
    await p;
  });

  it('regenerate shows the last user message pending; a server that kept the stored one gets it back in place', async () => {
    const s = h.state('c1');
    const p = h.actions.regenerate('c1');
    expect(s.messages.map((m) => m.id)).toEqual(['u1', 'a1']);
    expect(s.pendingUser?.meta?.pending).toBe(true);
    h.transport.reply(h.transport.actions('regenerate')[0]!);
    await p;
    expect(s.pendingUser).toBeNull();
    expect(s.messages.map((m) => m.id)).toEqual(['u1', 'a1', 'u2']);
  });

  it('a refused regenerate leaves everything as it was', async () => {
    const s = h.state('c1');
    s.error = { code: 'provider', message: 'overloaded' };
    const p = h.actions.regenerate('c1');
    expect(s.error).toBeNull();
    h.transport.refuse(h.transport.actions('regenerate')[0]!, 'usage', 'running');
    await expect(p).rejects.toThrow('running');
    expect(s.messages.map((m) => m.id)).toEqual(['u1', 'a1', 'u2', 'a2']);
    expect(s.error).toEqual({ code: 'provider', message: 'overloaded' });
  });

  it('compact now says when there was nothing to compact, and frees the button whatever happened', async () => {
    const s = h.state('c1');
    const p = h.actions.compactNow('c1');
    expect(s.compactRequested).toBe(true);
    void h.actions.compactNow('c1');
    expect(h.transport.actions('compact_now')).toHaveLength(1);
    h.transport.reply(h.transport.actions('compact_now')[0]!, { status: 'skipped', conversationId: 'c1', reason: 'too short' });
    await p;
    expect(s.compactRequested).toBe(false);
    expect(s.compactionNotice).toEqual({ kind: 'info', text: 'Nothing to compact: too short.' });
  });

  it('queue changes show at once and go to the open conversation', () => {
    const s = h.state('c1');
    s.queue = [{ itemId: 'i1', text: 'a', clientRequestId: 'r1', createdAt: 1 }, { itemId: 'i2', text: 'b', clientRequestId: 'r2', createdAt: 2 }];
    void h.actions.queueAction({ action: 'queue_remove', itemId: 'i1' });
    expect(s.queue.map((q) => q.itemId)).toEqual(['i2']);
    expect(h.transport.actions('queue_remove')[0]!.item).toEqual({ action: 'queue_remove', itemId: 'i1', conversationId: 'c1' });
  });
});

describe('WebUI chat: subscriptions and paging', () => {
  it('a loaded conversation is subscribed again with its last seq after a reconnect', async () => {
    h.transport.status('open');
    const s = h.state('c1');
    s.loaded = true;
    s.lastSeq = 7;
    h.sync.subscribe('c1');
    h.sync.subscribe('c1');
    expect(h.transport.sent.filter((m) => m.type === 'subscribe')).toEqual([expect.objectContaining({ conversationId: 'c1', lastSeq: 7 })]);
    h.sync.resubscribe();
    expect(h.transport.sent.filter((m) => m.type === 'subscribe')).toHaveLength(2);
  });

  it('leaving keeps following a running conversation and stops following an idle one', () => {
    h.transport.status('open');
    h.sync.subscribe('c1');
    h.state('c1').running = true;
    h.sync.leave('c1');
    expect(h.transport.sent.some((m) => m.type === 'unsubscribe')).toBe(false);
    h.state('c1').running = false;
    h.sync.leave('c1');
    expect(h.transport.sent.filter((m) => m.type === 'unsubscribe')).toEqual([{ type: 'unsubscribe', conversationId: 'c1' }]);
  });

  it('older messages are asked for before the oldest held; a failure is kept to show', async () => {
    h.transport.status('open');
    const s = h.state('c1');
    expect(await h.sync.loadOlder('c1')).toBe(false);
    s.hasMore = true;
    s.firstOrdinal = 21;
    const p = h.sync.loadOlder('c1');
    expect(s.loadingOlder).toBe(true);
    const req = h.transport.sent.find((m) => m.type === 'conversations.load')!;
    expect(req).toMatchObject({ conversationId: 'c1', before: 21 });
    h.transport.refuse(req, 'internal', 'disk');
    expect(await p).toBe(false);
    expect(s).toMatchObject({ loadingOlder: false, olderError: 'disk' });
  });

  it('the open conversation leaving the list and the server not knowing it: it is forgotten and closed', async () => {
    h.transport.status('open');
    h.conversations.open('c1');
    const summary = { id: 'c1', title: null, createdAt: 1, updatedAt: 1 };
    h.sync.onList([summary]);
    h.sync.onList([]);
    h.transport.refuse(h.transport.sent.find((m) => m.type === 'conversations.load')!, 'not_found', 'no such conversation');
    await tick();
    expect(h.forgotten).toEqual(['c1']);
    expect(h.conversations.currentId).toBeNull();
    expect(h.conversations.notice).toBe('This conversation was deleted in another window.');
  });
});
