/**
 * One process of a team server: the GatewayRemote (plugin-api.d.ts) the gateway routes through
 * (GatewayService.setRemote). It logs this process's events (event-log.ts), folds in the other
 * processes' ones, takes a conversation's lease before starting a run there (leases.ts), forwards an item for a
 * conversation another live process owns (commands.ts), and when it takes over from a process
 * that died mid-run, closes that run for every client with one `agent_end` (status `error`).
 *
 * Non-owners show the owner's truth: a conversation is `running` here while another process's
 * run of it is open in the log, and its queue is the owner's (queue notices ride the event log;
 * a subscribe here asks the owner when it has not heard one). A run whose owner's lease lapsed
 * (the owner died, and nobody sent to the conversation since) is closed by whichever process
 * notices first, so it does not show as running forever.
 */
import type { Knex } from 'knex';
import type { GatewayRemote, GatewayService, LifecycleEvent, Logger, RuntimeApi } from '../../plugin-api.js';
import type { ChatQueueItem, QueuedItem, ServerMessage } from '../../lib/gateway-protocol/protocol.js';
import { Commands, commandChannel, replyChannel, type StoredReply } from './commands.js';
import type { PgClient } from './database.js';
import { EVENTS_CHANNEL, EventLog, NOTICES_CHANNEL } from './event-log.js';
import { Leases } from './leases.js';

export interface TeamLimits {
  leaseMs: number;
  batchDelayMs: number;
  batchMaxRows: number;
  maxBufferedEvents: number;
  replayMaxEvents: number;
  /** A replay from a seq the log has not reached yet waits this long for its writer's batch. */
  replayWaitMs: number;
  forwardTimeoutMs: number;
  pollMs: number;
  retentionMs: number;
  retentionEvents: number;
  pruneIntervalMs: number;
  /** Conversations whose cursor (and queue) this process keeps at most; the least recently active go first. */
  maxTrackedConversations: number;
}

export interface TeamOptions {
  knex: Knex;
  /** Opens a fresh LISTEN connection (reconnects call it again). */
  listen(): Promise<PgClient>;
  self: string;
  logger: Logger;
  runtime: RuntimeApi;
  gateway: GatewayService;
  limits(): TeamLimits;
}

/** Items that start (or may start) a run: they take the lease; the others only follow it. */
const STARTS = new Set<ChatQueueItem['action']>(['send', 'edit_resend', 'regenerate', 'compact_now', 'queue_send_now']);

function conversationOf(item: ChatQueueItem): string | undefined {
  if ('conversationId' in item) return item.conversationId;
  if ('conversation_id' in item) return item.conversation_id;
  return undefined;
}

class RoutedError extends Error {
  constructor(readonly code: string, message: string) {
    super(message);
  }
}

export class Team implements GatewayRemote {
  readonly log: EventLog;
  private readonly leases: Leases;
  private readonly commands: Commands;
  /** Conversations whose lease this process took: renewed while their run goes. */
  private readonly held = new Set<string>();
  /**
   * Queues by conversation: this process's own non-empty ones (to answer other processes), and
   * the last one heard from another owner (bounded like the cursors).
   */
  private readonly queues = new Map<string, { owner: string; items: QueuedItem[] }>();
  /** Open remote runs whose lease was found lapsed by the last poll (closed if still so at the next). */
  private lapsed = new Set<string>();
  private listener: PgClient | undefined;
  private timers: NodeJS.Timeout[] = [];
  private closed = false;
  private reconnecting = false;

  constructor(private readonly o: TeamOptions) {
    this.leases = new Leases(o.knex, o.self, () => o.limits().leaseMs);
    this.log = new EventLog({
      knex: o.knex,
      self: o.self,
      logger: o.logger,
      publish: (e) => o.gateway.publishRemote(e),
      noticed: (c, origin, m) => this.noticed(c, origin, m),
      limits: () => o.limits(),
    });
    this.commands = new Commands({
      knex: o.knex,
      self: o.self,
      logger: o.logger,
      ownerAlive: async (owner, c) => (await this.leases.owner(c)) === owner,
      serve: (payload) => this.serve(payload),
      limits: () => ({ forwardTimeoutMs: o.limits().forwardTimeoutMs, pollMs: Math.max(50, Math.floor(o.limits().leaseMs / 4)) }),
    });
  }

  async start(): Promise<void> {
    await this.connect();
    // A tick while the previous one is still at work is skipped: two reaps at once would both
    // find the same run lapsed (a slow database makes ticks overlap).
    const every = (ms: number, fn: () => Promise<unknown>) => {
      let busy = false;
      const t = setInterval(() => {
        if (busy) return;
        busy = true;
        void fn()
          .catch((err) => this.o.logger.warn(`team: ${(err as Error).message}`))
          .finally(() => (busy = false));
      }, ms);
      t.unref();
      this.timers.push(t);
    };
    const l = this.o.limits();
    every(Math.max(50, Math.floor(l.leaseMs / 3)), () => this.renew());
    every(l.pollMs, async () => {
      await this.log.poll();
      await this.reap();
    });
    every(l.pruneIntervalMs, async () => {
      await this.log.prune(this.o.limits().retentionMs, this.o.limits().retentionEvents);
      await this.commands.prune(Math.max(this.o.limits().forwardTimeoutMs * 2, 3_600_000));
    });
  }

  /** Every lifecycle event of this process's runtime. */
  observe(e: LifecycleEvent): void {
    this.log.append(e);
    if (e.type === 'agent_start' && !this.held.has(e.conversationId)) {
      // A run that did not come through the gateway (a scheduled task): it owns the conversation from now on.
      this.leases.claim(e.conversationId).then(
        (c) => {
          if (c.mine) this.held.add(e.conversationId);
          else this.o.logger.warn(`conversation ${e.conversationId} runs here while process ${c.owner} holds its lease`);
        },
        (err) => this.o.logger.warn(`taking the lease of conversation ${e.conversationId} failed: ${(err as Error).message}`),
      );
    }
  }

  // ── GatewayRemote ───────────────────────────────────────────────────────────────────────
  async route(item: ChatQueueItem): Promise<{ data: unknown } | undefined> {
    const c = conversationOf(item);
    if (!c || this.closed) return undefined;
    const starts = STARTS.has(item.action);
    for (let attempt = 0; attempt < 5; attempt++) {
      let owner: string | undefined;
      if (starts) {
        const claim = await this.leases.claim(c);
        if (claim.mine) {
          this.held.add(c);
          if (claim.tookOverFrom) await this.closeOrphanRun(c, claim.tookOverFrom);
          return undefined;
        }
        owner = claim.owner;
      } else owner = await this.leases.owner(c);
      if (!owner || owner === this.o.self) return undefined;
      const out = await this.commands.forward(owner, c, { item });
      if (out.kind === 'withdrawn') continue; // its lease lapsed unanswered: take it over
      if (out.kind === 'lost') throw new RoutedError('unavailable', `process ${owner} owns conversation "${c}" and did not answer in time: the message may or may not have been taken; look at the conversation before sending again`);
      if (out.reply.moved) continue;
      if (out.reply.ok) return { data: out.reply.data };
      throw new RoutedError(out.reply.error?.code ?? 'internal', out.reply.error?.message ?? 'the owning process failed');
    }
    throw new RoutedError('unavailable', `conversation "${c}" keeps changing owner: try again`);
  }

  catchUp(conversationId: string): Promise<void> {
    return this.log.catchUp(conversationId);
  }

  replay(conversationId: string, lastSeq: number, deliver: (events: LifecycleEvent[]) => void): Promise<boolean> {
    return this.log.replay(conversationId, lastSeq, deliver);
  }

  running(conversationId: string): boolean {
    return this.log.openRemote.has(conversationId);
  }

  async queue(conversationId: string): Promise<QueuedItem[] | undefined> {
    if (this.closed) return undefined;
    const owner = await this.leases.owner(conversationId);
    if (!owner || owner === this.o.self) return undefined;
    const known = this.queues.get(conversationId);
    if (known?.owner === owner) return known.items;
    return this.askQueue(owner, conversationId);
  }

  notified(conversationId: string, message: ServerMessage): void {
    if (this.closed) return;
    if (message.type === 'queue') {
      if (message.items.length) this.remember(conversationId, this.o.self, message.items);
      else this.queues.delete(conversationId);
    }
    this.log.notice(conversationId, message as unknown as Record<string, unknown>);
  }

  // ── Queues ──────────────────────────────────────────────────────────────────────────────
  private remember(conversationId: string, owner: string, items: QueuedItem[]): void {
    this.queues.delete(conversationId);
    this.queues.set(conversationId, { owner, items });
    const max = this.o.limits().maxTrackedConversations;
    if (this.queues.size <= max) return;
    for (const [c, q] of this.queues) {
      if (this.queues.size <= max) break;
      if (q.owner !== this.o.self) this.queues.delete(c); // an own queue is what other processes ask for
    }
  }

  /** The owner's queue, asked through the commands (a subscribe waits for it at most replayWaitMs). */
  private async askQueue(owner: string, conversationId: string): Promise<QueuedItem[] | undefined> {
    const out = await this.commands.forward(owner, conversationId, { queueOf: conversationId }, Math.max(100, this.o.limits().replayWaitMs));
    if (out.kind !== 'reply' || !out.reply.ok || !Array.isArray(out.reply.data)) return undefined;
    const items = out.reply.data as QueuedItem[];
    this.remember(conversationId, owner, items);
    return items;
  }

  /** A notice another process logged: its queue (remembered), passed on to the subscribers here. */
  private async noticed(conversationId: string, origin: string, m: Record<string, unknown> | undefined): Promise<void> {
    let message = m as ServerMessage | undefined;
    if (!message) {
      const items = await this.askQueue(origin, conversationId);
      if (!items) return;
      message = { type: 'queue', conversationId, items };
    }
    if (message.type === 'queue') {
      if (!Array.isArray(message.items)) return;
      this.remember(conversationId, origin, message.items);
    }
    this.o.gateway.notifyRemote(conversationId, message);
  }

  // ── Forwarded items ─────────────────────────────────────────────────────────────────────
  private async serve(payload: unknown): Promise<StoredReply> {
    const queueOf = (payload as { queueOf?: unknown }).queueOf;
    if (typeof queueOf === 'string') {
      const q = this.queues.get(queueOf);
      return { ok: true, data: q?.owner === this.o.self ? q.items : [] };
    }
    const item = (payload as { item?: ChatQueueItem }).item;
    if (!item || typeof item !== 'object') return { ok: false, error: { code: 'bad_request', message: 'a forwarded command without an item' } };
    const c = conversationOf(item);
    if (c && STARTS.has(item.action)) {
      // Renewed before it runs, so the lease cannot lapse between the sender's look and the run's start.
      const claim = await this.leases.claim(c);
      if (!claim.mine) return { ok: false, moved: true };
      this.held.add(c);
    }
    try {
      return { ok: true, data: await this.o.gateway.handleForwarded(item) };
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      return { ok: false, error: { code: typeof code === 'string' ? code : 'internal', message: (err as Error).message ?? String(err) } };
    }
  }

  /**
   * The process we took the conversation over from died (or stalled) mid-run: its run never
   * logged its agent_end. One is logged for it (status `error`), numbered under the history's
   * row lock past every seq that process reserved, so no later run can reuse the number.
   */
  private async closeOrphanRun(conversationId: string, from: string): Promise<void> {
    await this.log.catchUp(conversationId);
    const runId = this.log.openRemote.get(conversationId);
    if (!runId) return;
    // Taken at once, before the next await: a send taking the conversation over and the reaper
    // may both get here for the same run, and only one of them may close it.
    this.log.openRemote.delete(conversationId);
    let seq: number;
    try {
      seq = await this.o.knex.transaction(async (trx) => {
        const conv = (await trx.raw('SELECT last_seq, seq_reserved FROM conversations WHERE id = ? FOR UPDATE', [conversationId])).rows[0] as { last_seq: number; seq_reserved: number } | undefined;
        const top = (await trx.raw('SELECT MAX(seq) AS seq FROM team_events WHERE conversation_id = ?', [conversationId])).rows[0] as { seq: number | null };
        const next = Math.max(Number(conv?.last_seq ?? 0), Number(conv?.seq_reserved ?? 0), Number(top.seq ?? 0)) + 1;
        if (conv) await trx.raw('UPDATE conversations SET seq_reserved = GREATEST(seq_reserved, ?::bigint) WHERE id = ?', [next, conversationId]);
        return next;
      });
    } catch (err) {
      // Still open: the reaper tries again at its next poll.
      if (!this.log.openRemote.has(conversationId)) this.log.openRemote.set(conversationId, runId);
      throw err;
    }
    const end: LifecycleEvent = {
      type: 'agent_end',
      conversationId,
      runId,
      seq,
      ts: Date.now(),
      status: 'error',
      usage: { inputTokens: 0, outputTokens: 0 },
      error: { code: 'internal', message: `the process running this conversation (${from}) stopped; its partial reply is kept`, details: { ownerLost: true } },
    };
    this.log.append(end);
    this.o.gateway.publishRemote(end);
    this.o.logger.warn(`took conversation ${conversationId} over from process ${from}, which stopped mid-run`);
  }

  /**
   * Open remote runs whose owner holds no live lease on two polls in a row: the owner died (or
   * shut down) mid-run and nobody sent to the conversation since. The lease is taken (so one
   * process closes it) and the run closed as a take-over would.
   */
  private async reap(): Promise<void> {
    if (this.closed) return;
    const open = [...this.log.openRemote.keys()].filter((c) => !this.o.runtime.activeRun(c));
    const live = await this.leases.live(open);
    const next = new Set<string>();
    for (const c of open) {
      if (live.has(c)) continue;
      if (!this.lapsed.has(c)) {
        next.add(c);
        continue;
      }
      const claim = await this.leases.claim(c);
      if (!claim.mine) continue;
      this.held.add(c);
      await this.closeOrphanRun(c, claim.tookOverFrom ?? 'a process that shut down');
    }
    this.lapsed = next;
  }

  private async renew(): Promise<void> {
    if (this.closed) return;
    const busy = [...this.held].filter((c) => this.o.runtime.activeRun(c));
    // Idle ones lapse on their own, leaseMs after the last renewal.
    for (const c of this.held) if (!busy.includes(c)) this.held.delete(c);
    const lost = await this.leases.renew(busy);
    for (const c of lost) {
      this.held.delete(c);
      this.o.logger.error(`lost the lease of conversation ${c} (this process stalled past it): stopping its run here`);
      this.o.runtime.activeRun(c)?.abort('another process took this conversation over');
    }
  }

  // ── LISTEN ──────────────────────────────────────────────────────────────────────────────
  private async connect(): Promise<void> {
    const client = await this.o.listen();
    const cmd = commandChannel(this.o.self);
    const rep = replyChannel(this.o.self);
    client.on('notification', (n) => {
      if (n.channel === EVENTS_CHANNEL) this.log.ring(n.payload);
      else if (n.channel === NOTICES_CHANNEL) this.log.ringNotice(n.payload);
      else if (n.channel === cmd) this.commands.arrived(n.payload);
      else if (n.channel === rep) this.commands.replied(n.payload);
    });
    const lost = (err?: Error) => {
      if (this.listener !== client || this.closed) return;
      this.listener = undefined;
      this.o.logger.warn(`the team LISTEN connection was lost${err ? `: ${err.message}` : ''}; reconnecting`);
      void this.reconnect();
    };
    client.on('error', lost);
    client.on('end', () => lost());
    await client.query(`LISTEN ${EVENTS_CHANNEL}`);
    await client.query(`LISTEN ${NOTICES_CHANNEL}`);
    await client.query(`LISTEN ${cmd}`);
    await client.query(`LISTEN ${rep}`);
    this.listener = client;
  }

  private async reconnect(): Promise<void> {
    if (this.reconnecting) return;
    this.reconnecting = true;
    try {
      for (let delay = 100; !this.closed; delay = Math.min(delay * 2, 5000)) {
        await new Promise((r) => setTimeout(r, delay).unref());
        try {
          await this.connect();
          // What rang while nobody listened: read it from the tables (queues: asked again).
          for (const [c, q] of this.queues) if (q.owner !== this.o.self) this.queues.delete(c);
          this.log.catchUpAll();
          this.commands.arrived(undefined);
          return;
        } catch (err) {
          this.o.logger.debug(`team LISTEN reconnect failed: ${(err as Error).message}`);
        }
      }
    } finally {
      this.reconnecting = false;
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const t of this.timers) clearInterval(t);
    this.commands.close();
    await this.log.close();
    await this.leases.releaseAll().catch((err) => this.o.logger.warn(`releasing the leases failed: ${(err as Error).message}`));
    const l = this.listener;
    this.listener = undefined;
    await l?.end().catch(() => undefined);
  }
}
