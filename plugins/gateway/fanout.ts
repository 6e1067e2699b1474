/**
 * The fan-out path. Each lifecycle event is serialized ONCE, kept in its conversation's replay
 * window, and appended to that conversation's batch for the current tick; every subscriber's
 * queue holds a reference to the same batch. On setImmediate each dirty client is flushed as one
 * frame, so N events to M clients cost one JSON.stringify per event, one Buffer per batch and one
 * socket write per client per tick. Nothing here awaits: runtime listeners must not block.
 */
import type { LifecycleEvent, Message } from '../../plugin-api.js';
import { Batch, GatewayClient, type ClientHost } from './client.js';
import { ConversationState } from './conversation-state.js';
import type { StoredConversation } from './history.js';
import { streamKindOf, type ServerMessage } from './protocol.js';
import type { GatewaySettings } from './settings.js';

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
  private readonly windowLimits = () => {
    const s = this.opts.settings();
    return { count: s.replayWindow, bytes: s.replayWindowBytes };
  };
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

  // ── Events ──────────────────────────────────────────────────────────────────────────────
  publish(e: LifecycleEvent): void {
    let conv = this.convs.get(e.conversationId);
    if (!conv) {
      conv = new ConversationState(e.conversationId, this.windowLimits);
      this.convs.set(e.conversationId, conv);
    }
    conv.observe(e);
    const { kind, phase } = streamKindOf(e);
    const serialized = JSON.stringify(
      phase ? { type: kind, conversationId: e.conversationId, seq: e.seq, phase, event: e } : { type: kind, conversationId: e.conversationId, seq: e.seq, event: e },
    );
    conv.window.push(e.seq, serialized);
    if (conv.subscribers.size > 0) {
      let batch = conv.openBatch;
      if (!batch) {
        batch = conv.openBatch = new Batch();
        this.open.push(conv);
        for (const c of conv.subscribers) c.enqueue(batch);
      }
      batch.parts.push(serialized);
    }
    if (e.type === 'agent_end') this.evictIdle();
  }

  /** Write every dirty client's queue (normally on setImmediate; synchronously at shutdown). */
  flushAll(): void {
    this.scheduled = false;
    for (const conv of this.open) conv.openBatch = undefined;
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
    for (const id of client.subscriptions) this.convs.get(id)?.subscribers.delete(client);
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
      conv = new ConversationState(conversationId, this.windowLimits);
      this.convs.set(conversationId, conv);
    }
    conv.subscribers.add(client);
    client.subscriptions.add(conversationId);
    // The open batch was handed out before this client joined: later events start a new one.
    conv.openBatch = undefined;
  }

  unsubscribe(client: GatewayClient, conversationId: string): void {
    this.convs.get(conversationId)?.subscribers.delete(client);
    client.subscriptions.delete(conversationId);
  }

  /** Forget a deleted conversation: its window, its run state and its subscriptions. */
  dropConversation(conversationId: string): void {
    const conv = this.convs.get(conversationId);
    if (!conv) return;
    for (const c of conv.subscribers) c.subscriptions.delete(conversationId);
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
    return conv.window.since(lastSeq, conv.lastSeq);
  }

  /**
   * A snapshot: stored history merged with what the active run produced since (its user
   * message and committed rounds, matched by id), the partial reply, and the run's pending events.
   */
  snapshot(conversationId: string, stored: StoredConversation | undefined, running: boolean): Snapshot | undefined {
    const conv = this.convs.get(conversationId);
    const run = conv?.run;
    if (!stored && !run) return undefined;
    const messages: Message[] = stored ? stored.messages.slice() : [];
    let partial: Message | undefined;
    if (run) {
      const ids = new Set(messages.map((m) => m.id));
      for (const m of [run.userMessage, ...run.committed]) {
        if (m && !ids.has(m.id)) {
          messages.push(m);
          ids.add(m.id);
        }
      }
      partial = run.partialMessage();
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
    for (const c of victims.slice(0, idle - max)) this.convs.delete(c.id);
  }
}
