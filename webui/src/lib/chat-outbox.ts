/**
 * Messages typed but not answered by the server yet, in the order typed. While the server is
 * away a message waits here, shown as pending, and goes out once on reconnect (never also from
 * the transport's own outbox: nothing is handed to a socket that is not open, and a resend keeps
 * its clientRequestId, which the server answers with the first outcome).
 */
import { reactive, type Ref } from 'vue';
import type { Message } from '../../../plugin-api.js';
import { client } from '../api/client.js';
import { DRAFT, type ChatStates } from './chat-core.js';
import type { RunFields } from './chat-prefs.js';
import { pendingMessage, wireAttachments, type SendInput, type WireAttachments } from './chat-reducers.js';
import { newId } from './format.js';

export interface OutboxItem {
  /** The conversation, or DRAFT until the first message created it. */
  key: string;
  clientRequestId: string;
  text: string;
  wire: WireAttachments;
  fields: RunFields;
  /** A new chat's instructions, set before its first message (sent with it). */
  instructions?: string;
  /** The pending bubble. */
  message: Message;
  /** Handed to an open socket, its reply not in yet. */
  inFlight: boolean;
  /** Which delivery's outcome counts (a dead socket's late timeout does not). */
  attempt: number;
}

export interface OutboxDeps extends ChatStates {
  /** The conversation a message typed now goes to (DRAFT for a new chat). */
  currentKey(): string;
  /** The composer's choices, as a message carries them. */
  runFields(): RunFields;
  /** A new chat's instructions, which its first message takes along. */
  draftInstructions(): string | undefined;
  sendError: Ref<string | null>;
  sentTick: Ref<number>;
  /** The server answered the draft's first message with the conversation it created. */
  adoptDraft(conversationId: string | undefined): void;
}

export function createOutbox(deps: OutboxDeps) {
  const { state, states, sendError, sentTick } = deps;
  const outbox = reactive<OutboxItem[]>([]);
  const settlers = new Map<string, { resolve: () => void; reject: (e: Error) => void }>();

  /**
   * Send a message (queued by the server when a run is active). Resolves once the server took it;
   * rejects when the server refuses.
   */
  function send(input: SendInput): Promise<void> {
    sendError.value = null;
    const key = deps.currentKey();
    state(key).error = null;
    const clientRequestId = newId('req');
    const message = pendingMessage(clientRequestId, input);
    sentTick.value++;
    return new Promise<void>((resolve, reject) => {
      settlers.set(clientRequestId, { resolve, reject });
      const instructions = key === DRAFT ? deps.draftInstructions() : undefined;
      outbox.push({ key, clientRequestId, text: input.text, wire: wireAttachments(input), fields: deps.runFields(), ...(instructions ? { instructions } : {}), message, inFlight: false, attempt: 0 });
      flush();
    });
  }

  /** Messages of a conversation still waiting for the server (not handed to it yet). */
  function outboxOf(key: string): Message[] {
    return outbox.filter((o) => o.key === key && !o.inFlight).map((o) => o.message);
  }

  /** Whether a message to this conversation is not answered yet. */
  function holds(key: string): boolean {
    return outbox.some((o) => o.key === key);
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
        if (!id) deps.adoptDraft(data?.conversationId);
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

  /** The draft's messages now go to the conversation it became. */
  function rekeyDraft(conversationId: string): void {
    for (const o of outbox) if (o.key === DRAFT) o.key = conversationId;
  }

  /** A deleted conversation's messages fail with `err`. */
  function drop(key: string, err: Error): void {
    for (const o of outbox.filter((x) => x.key === key)) settle(o, err);
  }

  return { send, outboxOf, holds, flush, requeueInFlight, rekeyDraft, drop };
}
