/**
 * Per-conversation chat state fed by the gateway stream: history, the live reply, tool
 * runtimes, the queue and errors; plus the actions that start, stop and steer runs. This file
 * wires the parts in lib/chat-*: the composer's choices (chat-prefs), the outbox of messages
 * not answered yet (chat-outbox), subscriptions and paging (chat-sync), the run actions
 * (chat-actions) and the pure reducers they share (chat-reducers).
 */
import { defineStore } from 'pinia';
import { computed, reactive, ref } from 'vue';
import type { LifecycleEvent } from '../../../plugin-api.js';
import type { ServerMessage } from '../../../lib/gateway-protocol/protocol.js';
import { client, type ClientRequest } from '../api/client.js';
import type { ApprovalMap } from '../components/tool-approval/approval-model.js';
import { createRunActions } from '../lib/chat-actions.js';
import { DRAFT } from '../lib/chat-core.js';
import { createOutbox } from '../lib/chat-outbox.js';
import { createPrefsSync, loadPrefs, type ConversationSettings, type Prefs } from '../lib/chat-prefs.js';
import { foldApprovalEvents, ownerOfQueueItem, titleText, withoutStarted } from '../lib/chat-reducers.js';
import { createSync } from '../lib/chat-sync.js';
import { applyEvent, applyPage, applySnapshot, emptyState, type ConversationState } from '../lib/conversation-state.js';
import { useConversationsStore } from './conversations.js';

export { DRAFT } from '../lib/chat-core.js';
export type { ConversationSettings } from '../lib/chat-prefs.js';
export { attachmentsOf, type SendInput } from '../lib/chat-reducers.js';

const STREAM_TYPES = ['token', 'thinking', 'tool', 'done', 'error', 'event'] as const;

export const useChatStore = defineStore('chat', () => {
  const states = reactive<Record<string, ConversationState>>({});
  const prefs = reactive<Prefs>(loadPrefs());
  const sendError = ref<string | null>(null);
  /** A user message the composer asked to edit (Up in an empty box); the message component takes it. */
  const editRequest = ref<string | null>(null);
  const conversations = useConversationsStore();
  /** Tool approvals (the permissions plugin) by conversation, then toolCallId. */
  const approvals = reactive<Record<string, ApprovalMap>>({});
  const NO_APPROVALS: ApprovalMap = {};
  const approvalsOf = (id: string): ApprovalMap => approvals[id] ?? NO_APPROVALS;
  /** Bumped by every send, edit or regenerate: the transcript scrolls to what was sent. */
  const sentTick = ref(0);
  /** Per-conversation settings as the server stored them (instructions, composer choices). */
  const convSettings = reactive<Record<string, ConversationSettings>>({});
  const extRequest = <T>(msg: Record<string, unknown>) => client().request<T>(msg as unknown as ClientRequest);

  const currentKey = computed(() => conversations.currentId ?? DRAFT);
  const current = computed(() => state(currentKey.value));

  function state(id: string): ConversationState {
    // Read back through the reactive record: the object assigned is the raw one, not its proxy.
    if (!states[id]) states[id] = emptyState(id);
    return states[id]!;
  }

  const settings = createPrefsSync({ prefs, convSettings, conversations, request: extRequest });
  const { runFields } = settings;
  const outbox = createOutbox({
    states,
    state,
    currentKey: () => currentKey.value,
    runFields,
    draftInstructions: settings.draftInstructions,
    sendError,
    sentTick,
    adoptDraft,
  });
  const sync = createSync({ states, state, conversations, holdsOutbox: outbox.holds, forget });
  const actions = createRunActions({ state, conversations, runFields, sentTick });

  /** Fold approval events in; a snapshot (`reset`) rebuilds them from its pending events. */
  function foldApprovals(id: string, events: LifecycleEvent[], reset = false, running = true): void {
    if (reset || !approvals[id]) approvals[id] = {};
    foldApprovalEvents(approvals[id]!, events, running);
  }

  function onStream(m: Extract<ServerMessage, { event: LifecycleEvent }>): void {
    const s = state(m.conversationId);
    const ev = m.event;
    const wasRunning = s.running;
    const fresh = ev.seq > s.lastSeq;
    applyEvent(s, ev);
    // Deltas are most events and never approvals: skip them cheaply.
    if (fresh && ev.type !== 'message_update') foldApprovals(m.conversationId, [ev]);
    if (ev.type === 'agent_start') s.queue = withoutStarted(s.queue, ev.userMessage);
    if (ev.type === 'agent_start' && !wasRunning) {
      if (!conversations.items.some((c) => c.id === m.conversationId)) {
        conversations.upsert({ id: m.conversationId, title: null, createdAt: ev.ts, updatedAt: ev.ts, running: true });
      }
      conversations.setRunning(m.conversationId, true);
    } else if (ev.type === 'agent_end') {
      conversations.setRunning(m.conversationId, false);
      void refreshSpent(m.conversationId);
    }
  }

  /** The whole conversation's spending, from the server (older pages need not be loaded). */
  async function refreshSpent(id: string): Promise<void> {
    try {
      const r = await client().request({ type: 'conversations.usage', conversationId: id });
      state(id).spent = { rounds: r.rounds, unpricedRounds: r.unpricedRounds, ...(r.costUsd !== undefined ? { costUsd: r.costUsd } : {}) };
    } catch {
      // An older server, or the conversation is gone: the meter sums the loaded replies instead.
    }
  }

  function init(): void {
    const c = client();
    for (const t of STREAM_TYPES) c.on(t, (m) => onStream(m as Extract<ServerMessage, { event: LifecycleEvent }>));
    c.on('snapshot', (m) => {
      applySnapshot(state(m.conversationId), m);
      void refreshSpent(m.conversationId);
      foldApprovals(m.conversationId, m.pending ?? [], true, m.running);
      if (m.conversation) conversations.upsert(m.conversation);
      conversations.setRunning(m.conversationId, m.running);
    });
    // An older page, answering loadOlder (dropped when a snapshot replaced what it belongs to).
    c.on('page', (m) => void applyPage(state(m.conversationId), m));
    c.on('queue', (m) => (state(m.conversationId).queue = m.items));
    c.on('conversations', (m) => sync.onList(m.items));
    c.on('extension', (m) => settings.onBroadcast(m.name, m.data));
    settings.follow();
    // A queued message that failed to start is reported as a reply nobody asked for.
    c.onOrphanReply((r) => {
      if (r.ok || !r.id.startsWith('queue:')) return;
      const owner = ownerOfQueueItem(states, r.id.slice('queue:'.length)) ?? current.value;
      owner.error = { code: 'usage', message: `A queued message could not start: ${r.error.message}` };
    });
    c.onStatus((s) => {
      // A reply to a compact_now sent on a socket that went away never comes: free the button.
      if (s.state !== 'open') for (const st of Object.values(states)) st.compactRequested = false;
      if (s.state !== 'open') return outbox.requeueInFlight();
      sync.resubscribe();
      outbox.flush();
    });
  }

  /** The draft became a real conversation: move its optimistic state over and follow it. */
  function adoptDraft(newIdValue: string | undefined): void {
    if (!newIdValue) return;
    settings.adopt(newIdValue);
    const draft = state(DRAFT);
    const target = state(newIdValue);
    if (draft.pendingUser && !target.messages.some((m) => m.role === 'user')) target.pendingUser = draft.pendingUser;
    outbox.rekeyDraft(newIdValue);
    states[DRAFT] = emptyState(DRAFT);
    if (!conversations.items.some((c) => c.id === newIdValue)) {
      conversations.upsert({ id: newIdValue, title: null, createdAt: Date.now(), updatedAt: Date.now(), running: true });
    }
    if (conversations.currentId === null) conversations.open(newIdValue);
    // Events that arrived before the reply already count as loaded history.
    if (target.lastSeq > 0) target.loaded = true;
    sync.subscribe(newIdValue);
  }

  /** Forget a deleted conversation. */
  function forget(id: string): void {
    outbox.drop(id, new Error('the conversation was deleted'));
    sync.unfollow(id);
    delete states[id];
    delete approvals[id];
  }

  /** A title for display: the stored one, else the first thing the user said, else a placeholder. */
  function titleOf(id: string | null, stored: string | null | undefined): string {
    return titleText(id ? states[id] : undefined, stored);
  }

  return {
    states,
    prefs,
    convSettings,
    setInstructions: settings.setInstructions,
    sentTick,
    outboxOf: outbox.outboxOf,
    titleOf,
    editRequest,
    sendError,
    current,
    currentKey,
    state,
    init,
    subscribe: sync.subscribe,
    leave: sync.leave,
    forget,
    send: outbox.send,
    stop: actions.stop,
    answerQuestion: actions.answerQuestion,
    approvalsOf,
    decideApproval: actions.decideApproval,
    editResend: actions.editResend,
    regenerate: actions.regenerate,
    retry: actions.retry,
    compactNow: actions.compactNow,
    dismissCompactionNotice: actions.dismissCompactionNotice,
    queueAction: actions.queueAction,
    savePrefs: settings.savePrefs,
    loadOlder: sync.loadOlder,
  };
});
