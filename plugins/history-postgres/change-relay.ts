/**
 * Conversation changes between the processes of one database (a team: several `serve`
 * processes, CLIs): a title, a pin or a delete made by one reaches the conversation lists the
 * others serve.
 * Sent with NOTIFY on `liveagent_history` from the pool; heard on one dedicated `pg` client
 * (LISTEN belongs to a session, so not a pooled connection), reconnected with backoff when it
 * drops. NOTIFY is a doorbell: a change missed while disconnected is seen at the next list.
 */
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import type { ConversationChange, Logger } from '../../plugin-api.js';
import { loadPg, type PgClient } from '../../lib/database/pg.js';
import type { ChangeRelay } from '../../lib/history-shared/queries.js';

const CHANNEL = 'liveagent_history';
/** NOTIFY payloads must stay under 8000 bytes; a title is cut well before that. */
const MAX_TITLE = 2000;

export interface RelayOptions {
  url: string;
  knex: Knex;
  logger: Logger;
  /** First wait before reconnecting the listener; doubles up to 30 s. */
  reconnectMs?: number;
}

export class PgChangeRelay implements ChangeRelay {
  private readonly origin = randomBytes(6).toString('hex');
  private readonly listeners = new Set<(change: ConversationChange) => void>();
  private client: PgClient | undefined;
  private closed = false;
  private starting = false;
  private retry: NodeJS.Timeout | undefined;
  private delay: number;

  constructor(private readonly o: RelayOptions) {
    this.delay = o.reconnectMs ?? 500;
  }

  send(change: ConversationChange): void {
    if (this.closed) return;
    const payload = JSON.stringify({ origin: this.origin, change: change.title === undefined ? change : { ...change, title: change.title.slice(0, MAX_TITLE) } });
    this.o.knex.raw('SELECT pg_notify(?, ?)', [CHANNEL, payload]).catch((err: Error) => this.o.logger.debug(`could not announce a conversation change: ${err.message}`));
  }

  /** The first listener starts the LISTEN connection. */
  onRemote(listener: (change: ConversationChange) => void): void {
    this.listeners.add(listener);
    void this.start();
  }

  /** Start listening (resolves once LISTEN is in place or the first attempt failed; never rejects). */
  async start(): Promise<void> {
    if (this.closed || this.client || this.starting) return;
    this.starting = true;
    try {
      const pg = await loadPg();
      const client = new pg.Client({ connectionString: this.o.url, connectionTimeoutMillis: 10_000 });
      client.on('error', (err) => this.lost(client, err.message));
      client.on('end', () => this.lost(client, 'connection ended'));
      client.on('notification', (n) => this.heard(n.channel, n.payload));
      await client.connect();
      await client.query(`LISTEN ${CHANNEL}`);
      if (this.closed) return void client.end().catch(() => {});
      this.client = client;
      this.delay = this.o.reconnectMs ?? 500;
    } catch (err) {
      this.o.logger.warn(`conversation changes from other processes are not heard: ${(err as Error).message}; retrying`);
      this.schedule();
    } finally {
      this.starting = false;
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retry);
    const c = this.client;
    this.client = undefined;
    await c?.end().catch(() => {});
  }

  private heard(channel: string, payload: string | undefined): void {
    if (channel !== CHANNEL || !payload) return;
    let msg: { origin?: unknown; change?: ConversationChange };
    try {
      msg = JSON.parse(payload) as typeof msg;
    } catch {
      return;
    }
    const c = msg.change;
    if (msg.origin === this.origin || !c || typeof c.conversationId !== 'string') return;
    let change: ConversationChange;
    if (c.kind === 'title' && typeof c.title === 'string') change = { conversationId: c.conversationId, kind: 'title', title: c.title, titleSource: c.titleSource === 'auto' ? 'auto' : 'user' };
    else if (c.kind === 'meta' || c.kind === 'deleted') change = { conversationId: c.conversationId, kind: c.kind };
    else return;
    for (const l of this.listeners) {
      try {
        l(change);
      } catch {
        /* listeners are notifications */
      }
    }
  }

  private lost(client: PgClient, why: string): void {
    if (this.client !== client) return;
    this.client = undefined;
    if (this.closed) return;
    this.o.logger.warn(`the history change listener lost its connection (${why}); reconnecting`);
    client.end().catch(() => {});
    this.schedule();
  }

  private schedule(): void {
    if (this.closed || this.retry) return;
    this.retry = setTimeout(() => {
      this.retry = undefined;
      void this.start();
    }, this.delay);
    this.retry.unref();
    this.delay = Math.min(30_000, this.delay * 2);
  }
}
