/**
 * The fan-out path. An event of a conversation somebody follows is written ONCE into that
 * conversation's batch for the current tick (wire.ts); every subscriber's queue holds a
 * reference to the same batch. On setImmediate each dirty client is flushed as one frame, so N
 * events to M clients cost one serialization per event, one Buffer per batch and one socket
 * write per client per tick. The replay window keeps deltas unserialized (rebuilt and serialized
 * only if replayed) and other events as their JSON, and records only runs somebody followed, so
 * an event of a conversation nobody follows is neither serialized nor kept; the run's fold (ActiveRun) keeps what a snapshot needs. Nothing here
 * awaits: runtime listeners must not block.
 *
 * Memory is bounded three ways: each window by count and bytes, every window together by
 * `replayTotalBytes` (least recently active first), and the bytes outstanding for every client
 * together by `maxTotalBufferBytes` (the furthest behind are dropped).
 */
import type { LifecycleEvent, Message } from '../../plugin-api.js';
import { GatewayClient, type ClientHost } from './client.js';
import { ConversationState, type ReplayBudget } from './conversation-state.js';
import type { StoredConversation } from './history.js';
import type { ServerMessage } from '../../lib/gateway-protocol/protocol.js';
import type { GatewaySettings } from './settings.js';
import { Batch, deltaPayload, estimateDelta, serializeEvent, type DeltaEvent } from './wire.js';

type Snapshot = Extract<ServerMessage, { type: 'snapshot' }>;

export interface FanoutOptions {
  settings(): GatewaySettings;
  /** Close and forget a client (over its cap). */
  onDrop(client: GatewayClient, reason: string): void;
}

export class Fanout implements ClientHost {
  readonly clients = new Set<GatewayClient>();
  private convs = new Map<string, ConversationState>();
  private dirty = new Set<GatewayClient>();
  private scheduled = false;
  private open: ConversationState[] = [];
  /** Bytes of every replay window together. */
  private readonly replay: ReplayBudget = { bytes: 0 };
  /** Bytes handed to every client's socket and not yet written out. */
  private held = 0;
  private readonly windowLimits = () => this.opts.settings();
  private readonly flushAllBound = () => this.flushAll();

  constructor(private readonly opts: FanoutOptions) {}

  // ── ClientHost ──────────────────────────────────────────────────────────────────────────
  schedule(client: GatewayClient): void {
    this.dirty.add(client);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.flushAllBound);
    }
  }

  drop(client: GatewayClient, reason: string): void {
    this.opts.onDrop(client, reason);
  }

  maxBufferBytes(): number {
    return this.opts.settings().maxClientBufferBytes;
  }

  /** A client's outstanding bytes changed (the total is checked by roomFor, before each write). */
  heldChanged(delta: number): void {
    this.held += delta;
  }

  /** Before a client writes: make room under the global cap. False when that dropped the writer itself. */
  roomFor(writer: GatewayClient): boolean {
    const cap = this.opts.settings().maxTotalBufferBytes;
    while (this.held > cap) {
      let worst: GatewayClient | undefined;
      for (const c of this.clients) if (!c.closed && (!worst || c.heldBytes > worst.heldBytes)) worst = c;
      if (!worst || worst.heldBytes === 0) break;
      this.drop(worst, `all clients together over ${cap} bytes outstanding, this one the furthest behind (${worst.heldBytes} bytes)`);
      if (worst === writer) return false;
    }
    return true;
  }

  // ── Events ──────────────────────────────────────────────────────────────────────────────
  publish(e: LifecycleEvent): void {
    let conv = this.convs.get(e.conversationId);
    if (!conv) {
      conv = new ConversationState(e.conversationId, this.windowLimits, this.replay);
      this.convs.set(e.conversationId, conv);
    }
    conv.observe(e);
    // A delta goes into the window unserialized (replay-window.ts) and, for subscribers, straight
    // into the batch's bytes; other events are rare and serialized once for both.
    // A conversation nobody follows does no per-event work here beyond the fold above.
    let serialized: string | undefined;
    if (conv.recording) {
      const payload = deltaPayload(e);
      if (payload !== undefined) conv.window.pushDelta(e as DeltaEvent, payload, estimateDelta(e as DeltaEvent, payload));
      else {
        serialized = serializeEvent(e);
        conv.window.pushSerialized(e.seq, serialized);
      }
    }
    if (conv.subscribers.size > 0) {
      let batch = conv.openBatch;
      if (!batch) {
        batch = conv.openBatch = new Batch(conv.batchHint);
        this.open.push(conv);
        for (const c of conv.subscribers) c.enqueue(batch);
      }
      if (serialized !== undefined || !batch.appendDelta(conv.template, e)) batch.appendString(serialized ?? serializeEvent(e));
    }
    if (this.replay.bytes > this.opts.settings().replayTotalBytes) this.shedReplay();
    if (e.type === 'agent_end') this.evictIdle();
  }

  /** Bytes every replay window holds together (observability, tests). */
  replayBytes(): number {
    return this.replay.bytes;
  }

  /** Bytes outstanding for every client together. */
  heldBytes(): number {
    return this.held;
  }

  /**
   * Over the global replay budget: the least recently active windows lose their oldest events
   * first, down to 7/8 of the budget so that a full budget is not re-sorted on every event.
   */
  private shedReplay(): void {
    const target = Math.floor((this.opts.settings().replayTotalBytes * 7) / 8);
    const order = [...this.convs.values()].sort((a, b) => a.touched - b.touched);
    for (const c of order) {
      c.window.shed(target);
      if (this.replay.bytes <= target) return;
    }
  }

  /** Write every dirty client's queue (normally on setImmediate; synchronously at shutdown). */
  flushAll(): void {
    this.scheduled = false;
    for (const conv of this.open) {
      // Room for a larger next tick, so a stream rarely copies its batch to grow it; the hint
      // shrinks slowly, as one small tick between big ones says little (a batch lives until written).
      if (conv.openBatch) conv.batchHint = Math.max(conv.openBatch.size * 2, Math.floor(conv.batchHint * 0.75), 4096);
      conv.openBatch = undefined;
    }
    this.open = [];
    const list = [...this.dirty];
    this.dirty.clear();
    for (const c of list) c.flush();
  }

  // ── Clients and subscriptions ───────────────────────────────────────────────────────────
  addClient(client: GatewayClient): void {
    this.clients.add(client);
  }

  removeClient(client: GatewayClient): void {
    this.clients.delete(client);
    this.dirty.delete(client);
    for (const id of client.subscriptions) this.left(id, client);
    client.subscriptions.clear();
    client.close();
  }

  peek(conversationId: string): ConversationState | undefined {
    return this.convs.get(conversationId);
  }

  /** True when this process saw events of the conversation. */
  seen(conversationId: string): boolean {
    return !!this.convs.get(conversationId)?.seqKnown;
  }

  /** Changes when stored history may have changed: a snapshot taken across such a change is retaken. */
  version(conversationId: string): string {
    const c = this.convs.get(conversationId);
    return c ? `${c.commitVersion}` : '-';
  }

  bumpVersion(conversationId: string): void {
    const c = this.convs.get(conversationId);
    if (c) c.commitVersion++;
  }

  /** Follow live events from now on. The caller has already queued what came before. */
  subscribe(client: GatewayClient, conversationId: string): void {
    let conv = this.convs.get(conversationId);
    if (!conv) {
      conv = new ConversationState(conversationId, this.windowLimits, this.replay);
      this.convs.set(conversationId, conv);
    }
    conv.subscribers.add(client);
    conv.record(true);
    client.subscriptions.add(conversationId);
    // The open batch was handed out before this client joined: later events start a new one.
    conv.openBatch = undefined;
  }

  unsubscribe(client: GatewayClient, conversationId: string): void {
    this.left(conversationId, client);
    client.subscriptions.delete(conversationId);
  }

  private left(conversationId: string, client: GatewayClient): void {
    const conv = this.convs.get(conversationId);
    if (conv?.subscribers.delete(client)) conv.lastLeftAt = Date.now();
  }

  /** Forget a deleted conversation: its window, its run state and its subscriptions. */
  dropConversation(conversationId: string): void {
    const conv = this.convs.get(conversationId);
    if (!conv) return;
    for (const c of conv.subscribers) c.subscriptions.delete(conversationId);
    conv.window.clear();
    this.convs.delete(conversationId);
  }

  /** To every subscriber of a conversation, in order with its events. */
  notify(conversationId: string, message: ServerMessage): void {
    const conv = this.convs.get(conversationId);
    if (!conv || conv.subscribers.size === 0) return;
    conv.openBatch = undefined; // events after this message must come after it
    const buf = Buffer.from(`[${JSON.stringify(message)}]`);
    for (const c of conv.subscribers) c.enqueue(buf);
  }

  /** To every client (but one). */
  broadcast(message: ServerMessage, except?: GatewayClient): void {
    if (this.clients.size === 0) return;
    const buf = Buffer.from(`[${JSON.stringify(message)}]`);
    for (const c of this.clients) if (c !== except) c.enqueue(buf);
  }

  /** Replayable events after `lastSeq`, or undefined when the window no longer covers them. */
  missedSince(conversationId: string, lastSeq: number): string[] | undefined {
    const conv = this.convs.get(conversationId);
    if (!conv?.seqKnown) return undefined;
    return conv.window.since(lastSeq, conv.lastSeq, serializeEvent);
  }

  /**
   * A snapshot: the newest page of stored history merged with what the active run produced since
   * (its user message and committed rounds, matched by id), the partial reply, and the run's
   * pending events.
   */
  snapshot(conversationId: string, stored: StoredConversation | undefined, running: boolean): Snapshot | undefined {
    const conv = this.convs.get(conversationId);
    const run = conv?.run;
    if (!stored && !run) return undefined;
    const messages: Message[] = stored ? stored.messages.slice() : [];
    let partial: Message | undefined;
    if (run) {
      const ids = new Set(messages.map((m) => m.id));
      const produced = [run.userMessage, ...run.committed].filter((m): m is Message => !!m);
      // History stores a run's messages in order, so the stored ones are a prefix of them and
      // the newest stored one is in the newest page: only those after it are missing (a long
      // run's first rounds may sit in an older page, and must not be appended again).
      partial = run.partialMessage();
      // A stored progress copy of the current round is newer than every round before it.
      let storedUpTo = partial && ids.has(partial.id) ? produced.length - 1 : -1;
      produced.forEach((m, i) => {
        if (ids.has(m.id)) storedUpTo = Math.max(storedUpTo, i);
      });
      for (const m of produced.slice(storedUpTo + 1)) {
        messages.push(m);
        ids.add(m.id);
      }
      if (partial && ids.has(partial.id)) {
        const at = messages.findIndex((m) => m.id === partial!.id);
        // A stored progress copy is older than the live one; a committed round is final.
        if (messages[at]!.meta?.partial) messages.splice(at, 1);
        else partial = undefined;
      }
    }
    const lastSeq = conv?.seqKnown ? conv.lastSeq : Math.max(conv?.lastSeq ?? 0, stored?.lastSeq ?? 0);
    const now = run?.start.ts ?? Date.now();
    const conversation = stored ? { ...stored.summary, running } : { id: conversationId, title: null, createdAt: now, updatedAt: now, provider: run?.start.provider ?? null, model: run?.start.model ?? null, running };
    return {
      type: 'snapshot',
      conversationId,
      lastSeq,
      conversation,
      messages,
      running: running || !!run,
      ...(partial ? { partial } : {}),
      ...(run ? { pending: run.pendingEvents() } : {}),
      checkpoints: stored?.checkpoints ?? [],
      hasMore: stored?.hasMore ?? false,
      ...(stored?.firstOrdinal ? { firstOrdinal: stored.firstOrdinal } : {}),
      olderCount: stored?.olderCount ?? 0,
      ...(conv?.compacting ? { compacting: conv.compacting } : {}),
      ...(conv?.context ? { context: { ...conv.context } } : {}),
    };
  }

  /** Keep replay state only for so many idle conversations (least recently active go first). */
  private evictIdle(): void {
    const max = this.opts.settings().maxIdleConversations;
    let idle = 0;
    for (const c of this.convs.values()) if (c.subscribers.size === 0 && !c.run) idle++;
    if (idle <= max) return;
    const victims = [...this.convs.values()].filter((c) => c.subscribers.size === 0 && !c.run).sort((a, b) => a.lastActive - b.lastActive);
    for (const c of victims.slice(0, idle - max)) {
      c.window.clear();
      this.convs.delete(c.id);
    }
  }
}
