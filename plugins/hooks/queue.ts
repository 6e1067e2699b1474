/**
 * The observing hooks' queues: one per conversation, delivered in order by one worker each, so
 * the run never waits for a hook. `push` is all the `event` tap does (an array push, or a
 * merge into the waiting message_update), on the streaming hot path.
 *
 * Bounded: a conversation holds at most `maxQueue` waiting events. Coalescing keeps a streamed
 * reply to one waiting item; past the bound, new events are dropped and counted, and once the
 * queue has drained again the burst is reported once (with the count). Memory is bounded by
 * `maxQueue` items per conversation with hooks running, plus the text of the message being
 * streamed (which the run holds anyway).
 */
import type { LifecycleEvent } from '../../plugin-api.js';
import { MergedDeltas } from './payload.js';

export interface QueueItem<H> {
  event: LifecycleEvent;
  hooks: readonly H[];
  merged?: MergedDeltas;
}

interface ConversationQueue<H> {
  items: Array<QueueItem<H>>;
  running: boolean;
  /** Dropped since the queue was last empty (the current burst). */
  dropped: number;
}

export interface QueueStats {
  /** Items waiting, over all conversations. */
  queued: number;
  /** Conversations with a queue. */
  conversations: number;
  /** Events dropped because a queue was full, ever. */
  dropped: number;
  /** message_update events merged into a waiting one, ever. */
  coalesced: number;
  /** Items handed to the hooks, ever. */
  delivered: number;
  /** The most items one queue ever held. */
  maxDepth: number;
}

export interface QueueOptions<H> {
  maxQueue(): number;
  deliver(item: QueueItem<H>): Promise<void>;
  /** A burst of drops ended (the queue drained). */
  overflow(conversationId: string, dropped: number): void;
  onError(err: unknown): void;
}

export class ObserverQueues<H> {
  private readonly queues = new Map<string, ConversationQueue<H>>();
  private idleWaiters: Array<() => void> = [];
  private closed = false;
  readonly stats: QueueStats = { queued: 0, conversations: 0, dropped: 0, coalesced: 0, delivered: 0, maxDepth: 0 };

  constructor(private readonly o: QueueOptions<H>) {}

  push(event: LifecycleEvent, hooks: readonly H[]): void {
    if (this.closed) return;
    let q = this.queues.get(event.conversationId);
    if (!q) {
      q = { items: [], running: false, dropped: 0 };
      this.queues.set(event.conversationId, q);
    }
    const items = q.items;
    if (event.type === 'message_update') {
      const last = items[items.length - 1];
      if (last && last.merged && last.hooks === hooks && last.event.type === 'message_update' && last.event.messageId === event.messageId) {
        last.merged.add(event.delta);
        last.event = event;
        this.stats.coalesced++;
        return;
      }
    }
    if (items.length >= this.o.maxQueue()) {
      q.dropped++;
      this.stats.dropped++;
      return;
    }
    items.push(
      event.type === 'message_update'
        ? { event, hooks, merged: new MergedDeltas(event) }
        : // The args object is the one the tool runs with: a blocking hook's updatedInput changes it later.
          { event: event.type === 'tool_execution_start' ? { ...event, args: structuredClone(event.args) } : event, hooks },
    );
    if (items.length > this.stats.maxDepth) this.stats.maxDepth = items.length;
    if (!q.running) {
      q.running = true;
      setImmediate(() => void this.drain(event.conversationId, q!));
    }
  }

  private async drain(conversationId: string, q: ConversationQueue<H>): Promise<void> {
    for (let item = q.items.shift(); item; item = q.items.shift()) {
      try {
        this.stats.delivered++;
        await this.o.deliver(item);
      } catch (err) {
        this.o.onError(err);
      }
    }
    q.running = false;
    if (q.dropped) {
      const n = q.dropped;
      q.dropped = 0;
      this.o.overflow(conversationId, n);
    }
    if (this.queues.get(conversationId) === q && q.items.length === 0) this.queues.delete(conversationId);
    if (this.idle()) for (const w of this.idleWaiters.splice(0)) w();
  }

  private idle(): boolean {
    for (const q of this.queues.values()) if (q.running || q.items.length) return false;
    return true;
  }

  /** Current counts (queued and conversations are computed now). */
  snapshot(): QueueStats {
    let queued = 0;
    for (const q of this.queues.values()) queued += q.items.length;
    return { ...this.stats, queued, conversations: this.queues.size };
  }

  /** Resolves once every queue is empty and no hook runs, or after `ms`. */
  whenIdle(ms: number): Promise<boolean> {
    if (this.idle()) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), ms);
      this.idleWaiters.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  /** Accept nothing more and forget what waits (what runs is stopped by its abort signal). */
  close(): void {
    this.closed = true;
    for (const q of this.queues.values()) q.items.length = 0;
  }
}
