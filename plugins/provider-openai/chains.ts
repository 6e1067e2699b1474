/**
 * Responses storage: with `store: true` the API keeps each response, and the next round can send
 * `previous_response_id` plus only what is new since then (tool results, the next user message)
 * instead of the whole conversation. This remembers, per conversation, the last stored response
 * and which messages it answered (their count, the last id and a digest of all ids); a history
 * that no longer extends them (an edit and resend, compaction, another model) falls back to the
 * full input and starts a new chain.
 *
 * Kept in memory (an LRU) and, when a history service is there, in the conversation's meta
 * (`openaiChain`), so the first round after a restart chains too. A server that has forgotten the
 * id answers `previous_response_not_found` and the provider resends the full input once.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { JsonObject, Logger, Message } from '../../plugin-api.js';

const ChainSchema = z.object({
  /** Response ids belong to one endpoint: never chain across providers. */
  providerId: z.string().min(1),
  responseId: z.string().min(1).max(500),
  model: z.string().min(1),
  /** How many messages were sent with the request that produced `responseId`. */
  count: z.number().int().positive(),
  lastId: z.string(),
  /** Digest of the ids of those messages, in order. */
  idsDigest: z.string().min(1),
});
type Chain = z.infer<typeof ChainSchema>;

export const CHAIN_META_KEY = 'openaiChain';

/** The subset of the history service used here (history-sqlite provides it). */
export interface ChainMetaStore {
  getConversation(id: string, page?: { limit?: number }): Promise<{ meta?: JsonObject } | undefined>;
  setConversationMeta(id: string, patch: JsonObject): Promise<JsonObject | undefined>;
}

export interface Continuation {
  previousResponseId: string;
  /** Messages after the stored response's own reply. */
  newMessages: Message[];
}

function digest(messages: Message[], n: number): string {
  const h = createHash('sha256');
  for (let i = 0; i < n; i++) h.update(messages[i]!.id).update('\n');
  return h.digest('base64url').slice(0, 22);
}

export class ResponseChains {
  /** `null`: known to have no chain (read from the store already). */
  private chains = new Map<string, Chain | null>();
  private pending = new Set<Promise<unknown>>();

  constructor(
    private readonly max = 1000,
    private readonly store?: () => ChainMetaStore | undefined,
    private readonly logger?: Logger,
  ) {}

  /** The continuation for this request, reading the conversation's meta on the first ask. */
  async continuation(conversationId: string, providerId: string, model: string, messages: Message[]): Promise<Continuation | undefined> {
    const c = this.chains.has(conversationId) ? this.chains.get(conversationId) : await this.read(conversationId);
    if (!c || c.providerId !== providerId || c.model !== model) return undefined;
    const n = c.count;
    // messages[n] must be the reply the stored response produced, and something must follow it.
    if (messages.length <= n + 1) return undefined;
    const reply = messages[n]!;
    if (reply.role !== 'assistant' || (reply.provider !== undefined && reply.provider !== providerId)) return undefined;
    if (messages[n - 1]!.id !== c.lastId || digest(messages, n) !== c.idsDigest) return undefined;
    return { previousResponseId: c.responseId, newMessages: messages.slice(n + 1) };
  }

  remember(conversationId: string, providerId: string, responseId: string, model: string, messages: Message[]): void {
    if (!messages.length) return this.forget(conversationId);
    const chain: Chain = { providerId, responseId, model, count: messages.length, lastId: messages.at(-1)!.id, idsDigest: digest(messages, messages.length) };
    this.set(conversationId, chain);
    this.write(conversationId, chain as unknown as JsonObject);
  }

  forget(conversationId: string): void {
    const had = this.chains.get(conversationId);
    this.set(conversationId, null);
    // Unknown (never read) or a chain: clear the stored one; known empty: nothing to write.
    if (had !== null) this.write(conversationId, null);
  }

  /** The last stored response id of a conversation in this process (diagnostics and tests). */
  last(conversationId: string): string | undefined {
    return this.chains.get(conversationId)?.responseId;
  }

  /** Settles when pending meta writes are done (tests, shutdown). */
  async flush(): Promise<void> {
    await Promise.all([...this.pending]);
  }

  private set(conversationId: string, chain: Chain | null): void {
    this.chains.delete(conversationId);
    this.chains.set(conversationId, chain);
    if (this.chains.size > this.max) this.chains.delete(this.chains.keys().next().value!);
  }

  private async read(conversationId: string): Promise<Chain | undefined> {
    const store = this.store?.();
    if (!store) return undefined;
    let raw: unknown;
    try {
      raw = (await store.getConversation(conversationId, { limit: 1 }))?.meta?.[CHAIN_META_KEY];
    } catch (err) {
      this.logger?.warn(`cannot read the Responses chain of conversation ${conversationId}: ${(err as Error)?.message ?? String(err)}`);
      return undefined;
    }
    // A round of this process may have landed while reading: it wins.
    if (this.chains.has(conversationId)) return this.chains.get(conversationId) ?? undefined;
    const r = raw === undefined ? undefined : ChainSchema.safeParse(raw);
    const chain = r?.success ? r.data : null;
    this.set(conversationId, chain);
    return chain ?? undefined;
  }

  private write(conversationId: string, value: JsonObject | null): void {
    const store = this.store?.();
    if (!store) return;
    const p = store
      .setConversationMeta(conversationId, { [CHAIN_META_KEY]: value })
      .catch((err: unknown) => this.logger?.warn(`cannot store the Responses chain of conversation ${conversationId}: ${(err as Error)?.message ?? String(err)}`))
      .finally(() => this.pending.delete(p));
    this.pending.add(p);
  }
}
