/**
 * How a client comes to follow a conversation: a replay of what it missed when a replay window
 * (this process's, or the owning process's through the remote router) still covers its last seq,
 * otherwise a snapshot from history delivered together with the subscription. Also the reads
 * that never subscribe: `conversations.load` (a snapshot or an older page) for the requester only.
 */
import type { GatewayRemote } from '../../plugin-api.js';
import type { QueuedItem, ReplyMap, ServerMessage } from '../../lib/gateway-protocol/protocol.js';
import { ReplyError, type ChatRuns } from './chat-runs.js';
import type { GatewayClient } from './client.js';
import type { Fanout } from './fanout.js';
import type { GatewayHistory } from './history.js';
import { serializeEvent } from './wire.js';

type Snapshot = Extract<ServerMessage, { type: 'snapshot' }>;

export interface SubscriptionDeps {
  fanout: Fanout;
  history: GatewayHistory;
  chat: ChatRuns;
  remote(): GatewayRemote | undefined;
  /** Whether a run of the conversation is active here or in another process. */
  running(conversationId: string): boolean;
}

export class Subscriptions {
  constructor(private readonly d: SubscriptionDeps) {}

  /** Replay from the window when it still covers `lastSeq`; otherwise a snapshot from history. */
  async subscribe(client: GatewayClient, conversationId: string, lastSeq: number | undefined, limit: number): Promise<ReplyMap['subscribe']> {
    const result = await this.stream(client, conversationId, lastSeq, limit);
    // A (re)subscribing client learns the messages waiting behind the active run at once, not
    // only at the queue's next change; an empty queue too, as what it holds may have run while
    // it was away (a snapshot does not replay the agent_start that took an item off).
    // The owner's gateway listed them (its chat.queueView), so they are QueuedItems as sent.
    const items = ((await this.d.remote()?.queue?.(conversationId)) as QueuedItem[] | undefined) ?? this.d.chat.queueView(conversationId);
    if (!client.closed) client.send({ type: 'queue', conversationId, items });
    return result;
  }

  private async stream(client: GatewayClient, conversationId: string, lastSeq: number | undefined, limit: number): Promise<ReplyMap['subscribe']> {
    const { fanout } = this.d;
    if (client.subscriptions.has(conversationId)) return { conversationId, mode: 'live', lastSeq: fanout.peek(conversationId)?.lastSeq ?? 0 };
    if (lastSeq !== undefined) {
      const missed = fanout.missedSince(conversationId, lastSeq);
      if (missed) {
        client.sendSerialized(missed);
        fanout.subscribe(client, conversationId);
        return { conversationId, mode: 'replay', replayed: missed.length, lastSeq: fanout.peek(conversationId)!.lastSeq };
      }
      const remote = this.d.remote();
      if (remote) {
        let replayed: { count: number; lastSeq: number } | undefined;
        const ok = await remote.replay(conversationId, lastSeq, (events) => {
          if (client.closed || client.subscriptions.has(conversationId)) return;
          client.sendSerialized(events.map(serializeEvent));
          fanout.subscribe(client, conversationId);
          replayed = { count: events.length, lastSeq: events.length ? events[events.length - 1]!.seq : lastSeq };
        });
        if (ok && replayed) return { conversationId, mode: 'replay', replayed: replayed.count, lastSeq: replayed.lastSeq };
      }
    }
    await this.d.remote()?.catchUp(conversationId);
    const snap = await this.takeSnapshot(conversationId, limit, (s) => {
      if (client.closed) return;
      client.send(s);
      fanout.subscribe(client, conversationId);
    });
    return { conversationId, mode: 'snapshot', lastSeq: snap.lastSeq };
  }

  /**
   * Read history, then build and deliver the snapshot synchronously with the live state, so no
   * event falls between the snapshot and the subscription. A read that raced a committed round
   * is retaken.
   */
  async takeSnapshot(conversationId: string, limit: number, deliver: (s: Snapshot) => void): Promise<Snapshot> {
    const { fanout, history } = this.d;
    for (let attempt = 0; ; attempt++) {
      const version = fanout.version(conversationId);
      const stored = await history.get(conversationId, limit);
      if (fanout.version(conversationId) !== version && attempt < 3) continue;
      const snap = fanout.snapshot(conversationId, stored, this.d.running(conversationId));
      if (!snap) throw new ReplyError('not_found', `unknown conversation "${conversationId}"`);
      deliver(snap);
      return snap;
    }
  }

  /**
   * Older messages for a client scrolling back: a `page` to the requester only. Live state,
   * subscriptions and the replay window are untouched; a page read across a change is still
   * consistent by ordinal (the client drops it when it no longer matches what it shows).
   */
  async loadPage(client: GatewayClient, conversationId: string, before: number, limit: number): Promise<ReplyMap['conversations.load']> {
    const page = await this.d.history.page(conversationId, before, limit);
    if (!page) throw new ReplyError('not_found', `unknown conversation "${conversationId}"`);
    if (!client.closed) client.send({ type: 'page', conversationId, before, ...page });
    return { conversationId, count: page.messages.length, hasMore: page.hasMore, ...(page.firstOrdinal ? { firstOrdinal: page.firstOrdinal } : {}) };
  }
}
