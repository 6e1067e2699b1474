/**
 * Forwarding a chat_queue item to the process that owns its conversation, through PostgreSQL:
 * the sender inserts a `team_commands` row addressed to the owner and NOTIFYs the owner's
 * channel with its id; the owner marks it taken (so exactly one handling), handles it as a local
 * client's item, stores the reply and NOTIFYs the sender's channel. The database, not a
 * process's address, is what every process already shares: no port to publish between the
 * processes, no second token, and a command survives a lost notification (both sides poll).
 */
import type { Knex } from 'knex';
import type { Logger } from '../../plugin-api.js';

export interface StoredReply {
  ok: boolean;
  data?: unknown;
  error?: { code: string; message: string };
  /** The owner no longer holds the conversation: route again. */
  moved?: boolean;
}

export type ForwardOutcome =
  | { kind: 'reply'; reply: StoredReply }
  /** Never picked up, and the owner's lease lapsed meanwhile: withdrawn, safe to handle elsewhere. */
  | { kind: 'withdrawn' }
  /** Picked up, then no answer in time: it may have run. */
  | { kind: 'lost' };

export const commandChannel = (owner: string) => `liveagent_team_cmd_${owner}`;
export const replyChannel = (owner: string) => `liveagent_team_rep_${owner}`;

export interface CommandsOptions {
  knex: Knex;
  self: string;
  logger: Logger;
  /** Whether `owner` still holds a live lease of the conversation. */
  ownerAlive(owner: string, conversationId: string): Promise<boolean>;
  /** Handle a command addressed here. */
  serve(payload: unknown): Promise<StoredReply>;
  limits(): { forwardTimeoutMs: number; pollMs: number };
}

export class Commands {
  private readonly waiters = new Map<number, () => void>();
  private closed = false;

  constructor(private readonly o: CommandsOptions) {}

  async forward(owner: string, conversationId: string, payload: unknown, timeoutMs = this.o.limits().forwardTimeoutMs): Promise<ForwardOutcome> {
    const { knex } = this.o;
    const id = await knex.transaction(async (trx) => {
      const row = (await trx.raw('INSERT INTO team_commands (owner, sender, payload) VALUES (?, ?, ?) RETURNING id', [owner, this.o.self, JSON.stringify(payload)])).rows[0] as { id: number };
      await trx.raw('SELECT pg_notify(?, ?)', [commandChannel(owner), String(row.id)]);
      return Number(row.id);
    });
    const deadline = Date.now() + timeoutMs;
    try {
      for (;;) {
        const row = (await knex.raw('SELECT state, reply FROM team_commands WHERE id = ?', [id])).rows[0] as { state: string; reply: string | null } | undefined;
        if (row?.state === 'done' && row.reply) return { kind: 'reply', reply: JSON.parse(row.reply) as StoredReply };
        if (!row) return { kind: 'lost' };
        if (this.closed || Date.now() > deadline) {
          const withdrawn = await this.withdraw(id);
          return withdrawn ? { kind: 'withdrawn' } : { kind: 'lost' };
        }
        if (!(await this.o.ownerAlive(owner, conversationId))) {
          if (await this.withdraw(id)) return { kind: 'withdrawn' };
        }
        await new Promise<void>((resolve) => {
          const t = setTimeout(done, this.o.limits().pollMs);
          function done() {
            clearTimeout(t);
            resolve();
          }
          this.waiters.set(id, done);
        });
        this.waiters.delete(id);
      }
    } finally {
      await knex('team_commands').where('id', id).del().catch(() => undefined);
    }
  }

  private async withdraw(id: number): Promise<boolean> {
    const rows = (await this.o.knex.raw("UPDATE team_commands SET state = 'withdrawn' WHERE id = ? AND state = 'pending' RETURNING id", [id])).rows as unknown[];
    return rows.length > 0;
  }

  /** A reply doorbell: wake the forward waiting for it (it reads the row itself). */
  replied(payload: string | undefined): void {
    this.waiters.get(Number(payload))?.();
  }

  /** A command doorbell (or a scan after reconnecting: no id). */
  arrived(payload: string | undefined): void {
    if (this.closed) return;
    const id = Number(payload);
    const pick = Number.isInteger(id) && id > 0 ? [id] : undefined;
    void this.take(pick).catch((err) => this.o.logger.warn(`taking forwarded commands failed: ${(err as Error).message}`));
  }

  private async take(ids: number[] | undefined): Promise<void> {
    const { knex } = this.o;
    const rows = (ids
      ? await knex.raw("UPDATE team_commands SET state = 'taken' WHERE id = ANY(?::bigint[]) AND owner = ? AND state = 'pending' RETURNING id, sender, payload", [ids, this.o.self])
      : await knex.raw("UPDATE team_commands SET state = 'taken' WHERE owner = ? AND state = 'pending' RETURNING id, sender, payload", [this.o.self])
    ).rows as Array<{ id: number; sender: string; payload: string }>;
    // In id order: one sender's commands were sent in order.
    rows.sort((a, b) => Number(a.id) - Number(b.id));
    for (const r of rows) {
      let reply: StoredReply;
      try {
        reply = await this.o.serve(JSON.parse(r.payload) as unknown);
      } catch (err) {
        reply = { ok: false, error: { code: 'internal', message: (err as Error).message } };
      }
      await knex.transaction(async (trx) => {
        await trx.raw("UPDATE team_commands SET state = 'done', reply = ? WHERE id = ?", [JSON.stringify(reply), r.id]);
        await trx.raw('SELECT pg_notify(?, ?)', [replyChannel(r.sender), String(r.id)]);
      });
    }
  }

  /** Commands nobody collected (their sender died). */
  async prune(maxAgeMs: number): Promise<void> {
    await this.o.knex.raw("DELETE FROM team_commands WHERE created_at < now() - ? * interval '1 millisecond'", [maxAgeMs]);
  }

  close(): void {
    this.closed = true;
    for (const w of this.waiters.values()) w();
  }
}
