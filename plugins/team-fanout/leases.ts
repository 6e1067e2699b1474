/**
 * Run ownership: one lease row per conversation (owner process, expires_at on the database's
 * clock, so the processes' clocks never matter). A process takes the lease before it starts a
 * run and renews it while the run goes; an idle owner simply stops renewing and the lease lapses
 * `leaseMs` later (meanwhile sends from other processes are still forwarded to it, which keeps a
 * queued message from starting a second run elsewhere). A lapsed lease is taken over by the next
 * process that needs the conversation.
 */
import type { Knex } from 'knex';

export interface Claim {
  /** Who holds the lease now (this process when `mine`). */
  owner: string;
  mine: boolean;
  /** The process this claim took a lapsed lease over from. */
  tookOverFrom?: string;
}

export class Leases {
  constructor(private readonly knex: Knex, private readonly self: string, private readonly leaseMs: () => number) {}

  /** Take (or keep) the lease unless another process holds a live one. */
  async claim(conversationId: string): Promise<Claim> {
    const ms = this.leaseMs();
    return this.knex.transaction(async (trx) => {
      for (let attempt = 0; ; attempt++) {
        const row = (await trx.raw('SELECT owner, expires_at <= now() AS expired FROM team_leases WHERE conversation_id = ? FOR UPDATE', [conversationId])).rows[0] as { owner: string; expired: boolean } | undefined;
        if (!row) {
          const inserted = (await trx.raw(
            `INSERT INTO team_leases (conversation_id, owner, expires_at) VALUES (?, ?, now() + ? * interval '1 millisecond')
             ON CONFLICT (conversation_id) DO NOTHING RETURNING owner`,
            [conversationId, this.self, ms],
          )).rows as unknown[];
          if (inserted.length) return { owner: this.self, mine: true };
          if (attempt > 2) throw new Error(`cannot take the lease of conversation "${conversationId}"`);
          continue; // another process inserted it first: read it, locked
        }
        if (row.owner !== this.self && !row.expired) return { owner: row.owner, mine: false };
        await trx.raw("UPDATE team_leases SET owner = ?, expires_at = now() + ? * interval '1 millisecond' WHERE conversation_id = ?", [this.self, ms, conversationId]);
        return row.owner === this.self ? { owner: this.self, mine: true } : { owner: this.self, mine: true, tookOverFrom: row.owner };
      }
    });
  }

  /** The live owner, if any. */
  async owner(conversationId: string): Promise<string | undefined> {
    const row = (await this.knex.raw('SELECT owner FROM team_leases WHERE conversation_id = ? AND expires_at > now()', [conversationId])).rows[0] as { owner: string } | undefined;
    return row?.owner;
  }

  /** Those of these conversations some process holds a live lease of. */
  async live(conversationIds: string[]): Promise<Set<string>> {
    if (!conversationIds.length) return new Set();
    const rows = (await this.knex.raw('SELECT conversation_id FROM team_leases WHERE conversation_id = ANY(?::text[]) AND expires_at > now()', [conversationIds])).rows as Array<{ conversation_id: string }>;
    return new Set(rows.map((r) => r.conversation_id));
  }

  /** Extend the leases of these conversations; returns those this process no longer holds. */
  async renew(conversationIds: string[]): Promise<string[]> {
    if (!conversationIds.length) return [];
    const rows = (await this.knex.raw(
      "UPDATE team_leases SET expires_at = now() + ? * interval '1 millisecond' WHERE owner = ? AND conversation_id = ANY(?::text[]) RETURNING conversation_id",
      [this.leaseMs(), this.self, conversationIds],
    )).rows as Array<{ conversation_id: string }>;
    const kept = new Set(rows.map((r) => r.conversation_id));
    return conversationIds.filter((c) => !kept.has(c));
  }

  /** At shutdown: every lease this process holds, so the next send anywhere runs at once. */
  async releaseAll(): Promise<void> {
    await this.knex.raw('DELETE FROM team_leases WHERE owner = ?', [this.self]);
  }
}
