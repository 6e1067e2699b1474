/**
 * Which conversations this page follows and how their history arrives: subscriptions (sent
 * again with each one's last seq after every reconnect, so the server replays what was missed
 * or sends a snapshot), snapshot loads, older pages, and the checks that notice history changed
 * or a conversation was deleted behind our back (no event says either).
 */
import type { ConversationSummary } from '../../../lib/gateway-protocol/protocol.js';
import { client } from '../api/client.js';
import type { ChatConversations, ChatStates } from './chat-core.js';

export interface SyncDeps extends ChatStates {
  conversations: ChatConversations;
  /** Whether a message to this conversation is still waiting for the server. */
  holdsOutbox(id: string): boolean;
  /** Forget a deleted conversation (everything the chat store holds of it). */
  forget(id: string): void;
}

export function createSync({ states, state, conversations, holdsOutbox, forget }: SyncDeps) {
  const subscribed = new Set<string>();
  /** Ids of the last conversation list broadcast, to see the open conversation leave it. */
  let listed = new Set<string>();

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

  /** The socket is open again: follow everything we followed. */
  function resubscribe(): void {
    for (const id of subscribed) sendSubscribe(id);
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
    if (!subscribed.has(id) || s?.running || s?.pendingUser || holdsOutbox(id)) return;
    subscribed.delete(id);
    if (client().status.state === 'open') client().send({ type: 'unsubscribe', conversationId: id });
  }

  /** Stop following a deleted conversation (nothing to tell the server: it is gone there). */
  function unfollow(id: string): void {
    subscribed.delete(id);
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

  /** A conversation list arrived (a `conversations` broadcast). */
  function onList(items: ConversationSummary[]): void {
    reconcile(items);
    noticeDeleted(items);
  }

  return { subscribe, resubscribe, leave, unfollow, loadOlder, onList };
}
