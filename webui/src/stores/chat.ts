/**
 * Per-conversation chat state fed by the gateway stream: history, the live reply, tool
 * runtimes, the queue and errors; plus the actions that start, stop and steer runs. Open
 * conversations are re-subscribed with their last seq after every reconnect, so the server
 * replays what was missed (or sends a snapshot).
 */
import { defineStore } from 'pinia';
import { computed, reactive, ref, watch } from 'vue';
import type { CompactionOutcome, ContentBlock, ExecutionMode, LifecycleEvent, Message } from '../../../plugin-api.js';
import type { ConversationSummary, ServerMessage } from '../../../lib/gateway-protocol/protocol.js';
import { client, type ClientRequest } from '../api/client.js';
import type { AskAnswer } from '../components/ask-user-question/card-model.js';
import { applyApprovalEvent, settleLeftovers, type ApprovalDecision, type ApprovalMap } from '../components/tool-approval/approval-model.js';
import { applyEvent, applyPage, applySnapshot, emptyState, type ConversationState } from '../lib/conversation-state.js';
import { newId } from '../lib/format.js';
import { attachmentBlock, isAttachmentBlock } from '../lib/media.js';
import { isSynthetic, userText } from '../lib/transcript.js';
import type { UploadResult } from '../lib/uploads.js';
import { useConversationsStore } from './conversations.js';

/** Key of the state shown before the first message creates a conversation. */
export const DRAFT = '__draft__';
const STREAM_TYPES = ['token', 'thinking', 'tool', 'done', 'error', 'event'] as const;
const PREFS_KEY = 'liveagent.composer';
/** A compaction waits for a summary from the model: give it as long as a slow reply. */
const COMPACT_TIMEOUT_MS = 10 * 60_000;

export interface SendInput {
  text: string;
  /** Files staged with `POST /api/uploads`; the message names them by uploadId. */
  attachments?: UploadResult[];
}

interface Prefs {
  mode: ExecutionMode | null;
  provider: string | null;
  model: string | null;
  workdir: string;
}

/** What a conversation remembers (the conversation-settings plugin): its instructions and composer choices. */
export interface ConversationSettings {
  instructions?: string;
  provider?: string;
  model?: string;
  mode?: ExecutionMode;
  workdir?: string;
}

const DEFAULT_PREFS: Prefs = { mode: null, provider: null, model: null, workdir: '' };

/** The composer choices a conversation's settings restore (what it does not name is the default). */
function prefsOf(c: ConversationSettings): Prefs {
  return { mode: c.mode ?? null, provider: c.provider ?? null, model: c.provider ? (c.model ?? null) : null, workdir: c.workdir ?? '' };
}

function loadPrefs(): Prefs {
  try {
    const p = JSON.parse(localStorage.getItem(PREFS_KEY) ?? '{}') as Partial<Prefs>;
    return { mode: p.mode ?? null, provider: p.provider ?? null, model: p.model ?? null, workdir: p.workdir ?? '' };
  } catch {
    return { mode: null, provider: null, model: null, workdir: '' };
  }
}

/** The content blocks a message will have, for the optimistic bubble. */
function blocksOf(input: SendInput): ContentBlock[] {
  const blocks: ContentBlock[] = [];
  if (input.text.trim()) blocks.push({ type: 'text', text: input.text });
  for (const a of input.attachments ?? []) blocks.push(attachmentBlock(a));
  return blocks;
}

/** The staged files a stored user message carries, to resend it with them. */
export function attachmentsOf(m: Message): UploadResult[] {
  return (m.content as unknown[]).flatMap((b): UploadResult[] =>
    isAttachmentBlock(b) ? [{ uploadId: b.uploadId, name: b.name, path: b.path, mediaType: b.mediaType, size: b.size }] : [],
  );
}

/** The wire form of a message's files: `{ uploadId }` each (the server knows the rest). */
function wireAttachments(input: SendInput): { attachments?: Array<{ uploadId: string }> } {
  return input.attachments?.length ? { attachments: input.attachments.map((a) => ({ uploadId: a.uploadId })) } : {};
}

interface OutboxItem {
  /** The conversation, or DRAFT until the first message created it. */
  key: string;
  clientRequestId: string;
  text: string;
  wire: { attachments?: Array<{ uploadId: string }> };
  fields: { mode?: ExecutionMode; provider?: string; model?: string; workdir?: string };
  /** A new chat's instructions, set before its first message (sent with it). */
  instructions?: string;
  /** The pending bubble. */
  message: Message;
  /** Handed to an open socket, its reply not in yet. */
  inFlight: boolean;
  /** Which delivery's outcome counts (a dead socket's late timeout does not). */
  attempt: number;
}

export const useChatStore = defineStore('chat', () => {
  const states = reactive<Record<string, ConversationState>>({});
  const subscribed = new Set<string>();
  const prefs = reactive<Prefs>(loadPrefs());
  const sendError = ref<string | null>(null);
  /** A user message the composer asked to edit (Up in an empty box); the message component takes it. */
  const editRequest = ref<string | null>(null);
  const conversations = useConversationsStore();
  /** Tool approvals (the permissions plugin) by conversation, then toolCallId. */
  const approvals = reactive<Record<string, ApprovalMap>>({});
  const NO_APPROVALS: ApprovalMap = {};
  const approvalsOf = (id: string): ApprovalMap => approvals[id] ?? NO_APPROVALS;
  /** Sends not answered yet, in the order typed (see send). */
  const outbox = reactive<OutboxItem[]>([]);
  const settlers = new Map<string, { resolve: () => void; reject: (e: Error) => void }>();
  /** Bumped by every send, edit or regenerate: the transcript scrolls to what was sent. */
  const sentTick = ref(0);
  /** Per-conversation settings as the server stored them (instructions, composer choices). */
  const convSettings = reactive<Record<string, ConversationSettings>>({});
  const extRequest = <T>(msg: Record<string, unknown>) => client().request<T>(msg as unknown as ClientRequest);

  /** Fold approval events in; a snapshot (`reset`) rebuilds them from its pending events. */
  function foldApprovals(id: string, events: LifecycleEvent[], reset = false, running = true): void {
    if (reset || !approvals[id]) approvals[id] = {};
    const map = approvals[id]!;
    for (const ev of events) {
      applyApprovalEvent(map, ev);
      if (ev.type === 'agent_end') settleLeftovers(map);
    }
    if (!running) settleLeftovers(map);
  }

  const currentKey = computed(() => conversations.currentId ?? DRAFT);
  const current = computed(() => state(currentKey.value));

  function state(id: string): ConversationState {
    // Read back through the reactive record: the object assigned is the raw one, not its proxy.
    if (!states[id]) states[id] = emptyState(id);
    return states[id]!;
  }

  /**
   * Keep the composer's choices: in an open conversation they are stored with it (so it restores
   * them later, in any tab); a new chat's are kept in this browser until it becomes one.
   */
  function savePrefs(): void {
    const id = conversations.currentId;
    if (id) return void storePrefs(id);
    try {
      localStorage.setItem(PREFS_KEY, JSON.stringify(prefs));
    } catch {
      // storage unavailable: selections last for this page only
    }
  }

  function storePrefs(id: string): void {
    const wire = { provider: prefs.provider, model: prefs.provider ? prefs.model : null, mode: prefs.mode, workdir: prefs.workdir.trim() || null };
    convSettings[id] = { ...(convSettings[id]?.instructions ? { instructions: convSettings[id]!.instructions } : {}), ...Object.fromEntries(Object.entries(wire).filter(([, v]) => v)) };
    extRequest<{ settings: ConversationSettings }>({ type: 'conversation.settings.set', conversationId: id, settings: wire }).then(
      (r) => (convSettings[id] = r.settings),
      () => undefined, // a server without the plugin: the choice lasts for this page
    );
  }

  function applyPrefs(next: Prefs): void {
    Object.assign(prefs, next);
  }

  /** The composer follows the conversation shown: its stored choices, or the defaults for a new chat. */
  function showConversation(id: string | null): void {
    if (!id) {
      applyPrefs(DEFAULT_PREFS);
      try {
        localStorage.setItem(PREFS_KEY, JSON.stringify(prefs));
      } catch {
        // as in savePrefs
      }
      return;
    }
    if (convSettings[id]) applyPrefs(prefsOf(convSettings[id]!));
    extRequest<{ settings: ConversationSettings }>({ type: 'conversation.settings.get', conversationId: id }).then(
      (r) => {
        convSettings[id] = r.settings;
        if (conversations.currentId === id) applyPrefs(prefsOf(r.settings));
      },
      () => undefined,
    );
  }

  /** Set (or, with empty text, clear) the instructions of a conversation. Rejects with the server's reason. */
  async function setInstructions(id: string, instructions: string): Promise<void> {
    if (id === DRAFT) {
      // Nothing is stored yet: they go with the first message (send's `instructions`).
      convSettings[DRAFT] = instructions.trim() ? { instructions } : {};
      return;
    }
    const r = await extRequest<{ settings: ConversationSettings }>({ type: 'conversation.settings.set', conversationId: id, settings: { instructions: instructions.trim() ? instructions : null } });
    convSettings[id] = r.settings;
  }

  function onStream(m: Extract<ServerMessage, { event: LifecycleEvent }>): void {
    const s = state(m.conversationId);
    const ev = m.event;
    const wasRunning = s.running;
    const fresh = ev.seq > s.lastSeq;
    applyEvent(s, ev);
    // Deltas are most events and never approvals: skip them cheaply.
    if (fresh && ev.type !== 'message_update') foldApprovals(m.conversationId, [ev]);
    if (ev.type === 'agent_start' && ev.userMessage && s.queue.length) {
      // A queued item that started leaves the queue. The server's `queue` message says so too,
      // but that message is not replayed after a reconnect, so infer it from the run itself.
      const text = userText(ev.userMessage);
      const at = s.queue.findIndex((q) => q.text === text);
      if (at >= 0) s.queue = s.queue.filter((_, i) => i !== at);
    }
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
    c.on('conversations', (m) => {
      reconcile(m.items);
      noticeDeleted(m.items);
    });
    // Another tab changed a conversation's settings.
    c.on('extension', (m) => {
      if (m.name !== 'conversation.settings') return;
      const d = m.data as { conversationId?: unknown; settings?: unknown } | undefined;
      if (typeof d?.conversationId !== 'string' || !d.settings || typeof d.settings !== 'object') return;
      convSettings[d.conversationId] = d.settings as ConversationSettings;
      if (conversations.currentId === d.conversationId) applyPrefs(prefsOf(d.settings as ConversationSettings));
    });
    watch(() => conversations.currentId, (id, was) => {
      // The draft becoming its conversation keeps what the composer holds (adoptDraft stored it).
      if (id && was === null && adopted === id) return;
      showConversation(id);
    }, { immediate: !!conversations.currentId });
    // A queued message that failed to start is reported as a reply nobody asked for.
    c.onOrphanReply((r) => {
      if (r.ok || !r.id.startsWith('queue:')) return;
      const itemId = r.id.slice('queue:'.length);
      const owner = Object.values(states).find((x) => x.queue.some((q) => q.itemId === itemId)) ?? current.value;
      owner.error = { code: 'usage', message: `A queued message could not start: ${r.error.message}` };
    });
    c.onStatus((s) => {
      // A reply to a compact_now sent on a socket that went away never comes: free the button.
      if (s.state !== 'open') for (const st of Object.values(states)) st.compactRequested = false;
      if (s.state !== 'open') return requeueInFlight();
      for (const id of subscribed) sendSubscribe(id);
      flush();
    });
  }

  function sendSubscribe(id: string): void {
    const s = state(id);
    client()
      .request({ type: 'subscribe', conversationId: id, ...(s.loaded ? { lastSeq: s.lastSeq } : {}) })
      .then(() => {
        if (!s.loaded) return load(id);
        // A replay carries events, not truncations: check the stored count once more.
        const summary = conversations.items.find((c) => c.id === id);
        if (summary) reconcile([summary]);
      })
      .catch((err: Error) => {
        s.error = { code: 'usage', message: err.message };
      });
  }

  /** Follow a conversation (idempotent). */
  function subscribe(id: string): void {
    if (subscribed.has(id)) return;
    subscribed.add(id);
    if (client().status.state === 'open') sendSubscribe(id);
  }

  /**
   * Stop following a conversation we left, unless it is running (its reply keeps streaming in
   * the background). Its state stays: coming back subscribes with its last seq.
   */
  function leave(id: string): void {
    const s = states[id];
    if (!subscribed.has(id) || s?.running || s?.pendingUser || outbox.some((o) => o.key === id)) return;
    subscribed.delete(id);
    if (client().status.state === 'open') client().send({ type: 'unsubscribe', conversationId: id });
  }

  /** Forget a deleted conversation. */
  function forget(id: string): void {
    for (const o of outbox.filter((x) => x.key === id)) settle(o, new Error('the conversation was deleted'));
    subscribed.delete(id);
    delete states[id];
    delete approvals[id];
  }

  /** Ask for a snapshot (the gateway answers conversations.load with a `snapshot` message). */
  async function load(id: string): Promise<void> {
    await client().request({ type: 'conversations.load', conversationId: id });
  }

  /**
   * Load the page of messages before the oldest one held (the `page` message arrives before the
   * reply, so it is in place when this resolves). False when there was nothing to load or it failed.
   */
  async function loadOlder(id: string): Promise<boolean> {
    const s = state(id);
    if (!s.hasMore || s.loadingOlder || s.firstOrdinal === null || client().status.state !== 'open') return false;
    s.loadingOlder = true;
    s.olderError = null;
    try {
      await client().request({ type: 'conversations.load', conversationId: id, before: s.firstOrdinal });
      return true;
    } catch (err) {
      s.olderError = (err as Error).message;
      return false;
    } finally {
      s.loadingOlder = false;
    }
  }

  /**
   * Another client may have changed history behind our back (edit and resend truncates it, and
   * no event says so). The list carries each conversation's stored message count: when an idle
   * conversation we follow disagrees, reload it.
   */
  function reconcile(items: ConversationSummary[]): void {
    for (const c of items) {
      const s = states[c.id];
      if (!s || !subscribed.has(c.id) || !s.loaded || s.running || c.running || typeof c.messageCount !== 'number') continue;
      if (c.messageCount !== s.messages.length + s.olderCount) void load(c.id).catch(() => undefined);
    }
  }

  /** Ids of the last conversation list broadcast, to see the open conversation leave it. */
  let listed = new Set<string>();

  /**
   * No event says a conversation was deleted elsewhere: it leaves the list. A conversation can
   * also leave the first page for being old, so ask the server before closing it.
   */
  function noticeDeleted(items: ConversationSummary[]): void {
    const was = listed;
    listed = new Set(items.map((c) => c.id));
    const id = conversations.currentId;
    if (!id || !was.has(id) || listed.has(id)) return;
    load(id).catch((err: { code?: string }) => {
      if (err.code !== 'not_found' || conversations.currentId !== id) return;
      forget(id);
      conversations.open(null);
      conversations.notice = 'This conversation was deleted in another window.';
    });
  }

  function runFields() {
    return {
      ...(prefs.mode ? { mode: prefs.mode } : {}),
      ...(prefs.provider ? { provider: prefs.provider } : {}),
      ...(prefs.provider && prefs.model ? { model: prefs.model } : {}),
      ...(prefs.workdir.trim() ? { workdir: prefs.workdir.trim() } : {}),
    };
  }

  /**
   * Send a message (queued by the server when a run is active). Resolves once the server took it;
   * rejects when the server refuses. While the server is away the message waits here, shown as
   * pending, and goes out once on reconnect (never also from the transport's own outbox: nothing
   * is handed to a socket that is not open, and a resend keeps its clientRequestId, which the
   * server answers with the first outcome).
   */
  function send(input: SendInput): Promise<void> {
    sendError.value = null;
    const key = conversations.currentId ?? DRAFT;
    state(key).error = null;
    const clientRequestId = newId('req');
    const message: Message = { id: `pending-${clientRequestId}`, role: 'user', content: blocksOf(input), createdAt: Date.now(), meta: { pending: true } };
    sentTick.value++;
    return new Promise<void>((resolve, reject) => {
      settlers.set(clientRequestId, { resolve, reject });
      const instructions = key === DRAFT ? convSettings[DRAFT]?.instructions?.trim() : undefined;
      outbox.push({ key, clientRequestId, text: input.text, wire: wireAttachments(input), fields: runFields(), ...(instructions ? { instructions } : {}), message, inFlight: false, attempt: 0 });
      flush();
    });
  }

  /** Messages of a conversation still waiting for the server (not handed to it yet). */
  function outboxOf(key: string): Message[] {
    return outbox.filter((o) => o.key === key && !o.inFlight).map((o) => o.message);
  }

  function flush(): void {
    if (client().status.state !== 'open') return;
    for (const item of outbox) {
      if (item.inFlight) continue;
      // The draft's first message creates the conversation; the next ones wait to be sent to it.
      if (item.key === DRAFT && outbox.some((o) => o.key === DRAFT && o.inFlight)) continue;
      deliver(item);
    }
  }

  function settle(item: OutboxItem, err?: Error): void {
    const at = outbox.indexOf(item);
    if (at >= 0) outbox.splice(at, 1);
    const fns = settlers.get(item.clientRequestId);
    settlers.delete(item.clientRequestId);
    if (err) fns?.reject(err);
    else fns?.resolve();
  }

  function deliver(item: OutboxItem): void {
    const s = state(item.key);
    const id = item.key === DRAFT ? undefined : item.key;
    const attempt = ++item.attempt;
    item.inFlight = true;
    if (!s.running) s.pendingUser = item.message;
    client()
      .request<{ conversationId?: string } | undefined>({
        type: 'chat_queue',
        item: { action: 'send', clientRequestId: item.clientRequestId, text: item.text, ...item.wire, ...item.fields, ...(id ? { conversationId: id } : item.instructions ? { instructions: item.instructions } : {}) },
      })
      .then((data) => {
        if (!outbox.includes(item)) return;
        settle(item);
        if (!id) adoptDraft(data?.conversationId);
        flush();
      })
      .catch((err: Error) => {
        if (!outbox.includes(item) || item.attempt !== attempt) return;
        if ((err as { code?: string }).code === 'timeout' && client().status.state !== 'open') {
          // Its socket went away: it goes again on reconnect (the status handler freed it already).
          item.inFlight = false;
          return;
        }
        const st = state(item.key);
        if (st.pendingUser?.id === item.message.id) st.pendingUser = null;
        sendError.value = err.message;
        settle(item, err);
        flush();
      });
  }

  /** The socket went away: what was in flight goes again, as waiting, once it is back. */
  function requeueInFlight(): void {
    for (const item of outbox) {
      if (!item.inFlight) continue;
      item.inFlight = false;
      item.attempt++;
      const st = states[item.key];
      if (st?.pendingUser?.id === item.message.id) st.pendingUser = null;
    }
  }

  /** The conversation the draft just became (its composer choices were stored with it). */
  let adopted: string | null = null;

  /** The draft became a real conversation: move its optimistic state over and follow it. */
  function adoptDraft(newIdValue: string | undefined): void {
    if (!newIdValue) return;
    adopted = newIdValue;
    storePrefs(newIdValue);
    const draft = state(DRAFT);
    const target = state(newIdValue);
    if (draft.pendingUser && !target.messages.some((m) => m.role === 'user')) target.pendingUser = draft.pendingUser;
    for (const o of outbox) if (o.key === DRAFT) o.key = newIdValue;
    states[DRAFT] = emptyState(DRAFT);
    // The draft's instructions went with its first message: they are the conversation's now.
    const given = convSettings[DRAFT]?.instructions;
    if (given) convSettings[newIdValue] = { ...convSettings[newIdValue], instructions: given };
    delete convSettings[DRAFT];
    if (!conversations.items.some((c) => c.id === newIdValue)) {
      conversations.upsert({ id: newIdValue, title: null, createdAt: Date.now(), updatedAt: Date.now(), running: true });
    }
    if (conversations.currentId === null) conversations.open(newIdValue);
    // Events that arrived before the reply already count as loaded history.
    if (target.lastSeq > 0) target.loaded = true;
    subscribe(newIdValue);
  }

  function stop(id = conversations.currentId): void {
    if (!id) return;
    client().send({ type: 'chat_queue', item: { action: 'stop', conversationId: id } });
  }

  /**
   * Answer a pending AskUserQuestion (`chat_queue.tool_answer`). Rejects with the server's
   * reason when the answer is refused; the question then stays pending.
   */
  async function answerQuestion(conversationId: string, toolCallId: string, answers: AskAnswer[]): Promise<void> {
    await client().request({
      type: 'chat_queue',
      item: { action: 'tool_answer', item_id: toolCallId, request_json: JSON.stringify(answers), conversation_id: conversationId },
    });
  }

  /**
   * Decide a pending tool approval (`chat_queue.tool_approval`). Rejects with the server's reason
   * when the decision is refused; the approval then stays pending.
   */
  async function decideApproval(conversationId: string, toolCallId: string, decision: ApprovalDecision): Promise<void> {
    await client().request({ type: 'chat_queue', item: { action: 'tool_approval', item_id: toolCallId, conversation_id: conversationId, decision } });
  }

  /** Truncate at a user message and send `input` in its place. */
  async function editResend(id: string, messageId: string, input: SendInput): Promise<void> {
    const s = state(id);
    const at = s.messages.findIndex((m) => m.id === messageId);
    const clientRequestId = newId('req');
    const before = s.messages;
    sentTick.value++;
    if (at >= 0) s.messages = s.messages.slice(0, at);
    s.pendingUser = { id: `pending-${clientRequestId}`, role: 'user', content: blocksOf(input), createdAt: Date.now(), meta: { pending: true } };
    s.error = null;
    s.editedFiles = null;
    try {
      await client().request({
        type: 'chat_queue',
        item: { action: 'edit_resend', conversationId: id, messageId, clientRequestId, text: input.text, ...wireAttachments(input), ...runFields() },
      });
    } catch (err) {
      s.messages = before;
      s.pendingUser = null;
      s.error = { code: 'usage', message: (err as Error).message };
      throw err;
    }
  }

  /** Run the last user message again (after an error). */
  async function retry(id: string): Promise<void> {
    const s = state(id);
    const last = [...s.messages].reverse().find((m) => m.role === 'user' && !isSynthetic(m));
    if (!last) return;
    await editResend(id, last.id, { text: userText(last), attachments: attachmentsOf(last) });
  }

  /**
   * Run the last user message again for a new reply (`chat_queue.regenerate`): the server drops
   * the replies after it and resends it. Until the run echoes the message, it shows as pending.
   */
  async function regenerate(id: string): Promise<void> {
    const s = state(id);
    const at = s.messages.findLastIndex((m) => m.role === 'user' && !isSynthetic(m));
    if (at < 0 || s.running) return;
    const last = s.messages[at]!;
    const clientRequestId = newId('req');
    const before = s.messages;
    const pendingId = `pending-${clientRequestId}`;
    sentTick.value++;
    s.messages = s.messages.slice(0, at);
    s.pendingUser = { ...last, id: pendingId, meta: { ...last.meta, pending: true } };
    const { error, editedFiles } = s;
    s.error = null;
    s.editedFiles = null;
    try {
      await client().request({ type: 'chat_queue', item: { action: 'regenerate', conversationId: id, clientRequestId, ...runFields() } });
      // The run started; a server that did not echo the message (it kept the stored one) leaves it pending: put it back.
      if (s.pendingUser?.id === pendingId) {
        s.pendingUser = null;
        if (!s.messages.some((m) => m.id === last.id)) s.messages.splice(at, 0, last);
      }
    } catch (err) {
      // Nothing happened: everything as it was (the caller says why it was refused).
      s.messages = before;
      if (s.pendingUser?.id === pendingId) s.pendingUser = null;
      s.error = error;
      s.editedFiles = editedFiles;
      throw err;
    }
  }

  /**
   * Compact the conversation's context now. Its `compaction` events bring the card and the
   * progress line; a skipped or failed outcome is said in a notice.
   */
  async function compactNow(id: string): Promise<void> {
    const s = state(id);
    if (id === DRAFT || s.running || s.compacting || s.compactRequested) return;
    s.compactRequested = true;
    s.compactionNotice = null;
    try {
      const out = await client().request({ type: 'chat_queue', item: { action: 'compact_now', conversationId: id } }, COMPACT_TIMEOUT_MS);
      if (out?.status === 'skipped') s.compactionNotice = { kind: 'info', text: `Nothing to compact${out.reason ? `: ${out.reason}` : ''}.` };
      else if (out?.status === 'failed') s.compactionNotice = { kind: 'error', text: `Compacting the context failed${out.reason ? `: ${out.reason}` : ''}.` };
    } catch (err) {
      // Its socket went away (the request was freed then): the outcome, if any, shows on the next snapshot.
      const lost = (err as { code?: string }).code === 'timeout' && !s.compactRequested;
      if (!lost) s.compactionNotice = { kind: 'error', text: `Could not compact: ${(err as Error).message}` };
    } finally {
      s.compactRequested = false;
      // Whatever happened, it is over (a missed end event must not leave the spinner on).
      s.compacting = null;
    }
  }

  function dismissCompactionNotice(id: string): void {
    state(id).compactionNotice = null;
  }

  function queueAction(item: { action: 'queue_remove' | 'queue_send_now'; itemId: string } | { action: 'queue_edit'; itemId: string; text: string } | { action: 'queue_reorder'; itemIds: string[] }): Promise<unknown> {
    const id = conversations.currentId;
    if (!id) return Promise.resolve();
    const s = state(id);
    // Show the change at once; the server's `queue` broadcast is the truth and overwrites it.
    if (item.action === 'queue_remove') s.queue = s.queue.filter((q) => q.itemId !== item.itemId);
    if (item.action === 'queue_edit') s.queue = s.queue.map((q) => (q.itemId === item.itemId ? { ...q, text: item.text } : q));
    if (item.action === 'queue_reorder') s.queue = item.itemIds.map((x) => s.queue.find((q) => q.itemId === x)!).filter(Boolean);
    return client().request({ type: 'chat_queue', item: { ...item, conversationId: id } as never });
  }

  /** A title for display: the stored one, else the first thing the user said, else a placeholder. */
  function titleOf(id: string | null, stored: string | null | undefined): string {
    if (stored) return stored;
    const s = id ? states[id] : undefined;
    // With older pages not loaded, the first user message held is not the conversation's first.
    const first = s?.hasMore ? undefined : (s?.messages.find((m) => m.role === 'user' && !isSynthetic(m)) ?? s?.pendingUser);
    const text = first ? userText(first).trim().split('\n')[0] : '';
    return text ? (text.length > 60 ? `${text.slice(0, 57)}…` : text) : 'New conversation';
  }

  return { states, prefs, convSettings, setInstructions, sentTick, outboxOf, titleOf, editRequest, sendError, current, currentKey, state, init, subscribe, leave, forget, send, stop, answerQuestion, approvalsOf, decideApproval, editResend, regenerate, retry, compactNow, dismissCompactionNotice, queueAction, savePrefs, loadOlder };
});
