/**
 * Responses storage: with `store: true` the API keeps each response, and the next round can send
 * `previous_response_id` plus only what is new since then (tool results, the next user message)
 * instead of the whole conversation. This remembers, per conversation, the last stored response
 * and the exact messages it answered; a history that no longer extends them (an edit and
 * resend, compaction, another model) falls back to the full input and starts a new chain.
 * In memory only: after a restart the first request sends the full input again.
 */
import type { Message } from '../../plugin-api.js';

interface Chain {
  /** Response ids belong to one endpoint: never chain across providers. */
  providerId: string;
  responseId: string;
  model: string;
  /** Ids of the messages sent with the request that produced `responseId`. */
  sentIds: string[];
}

export interface Continuation {
  previousResponseId: string;
  /** Messages after the stored response's own reply. */
  newMessages: Message[];
}

export class ResponseChains {
  private chains = new Map<string, Chain>();

  constructor(private readonly max = 1000) {}

  continuation(conversationId: string, providerId: string, model: string, messages: Message[]): Continuation | undefined {
    const c = this.chains.get(conversationId);
    if (!c || c.providerId !== providerId || c.model !== model) return undefined;
    const n = c.sentIds.length;
    // messages[n] must be the reply the stored response produced, and something must follow it.
    if (messages.length <= n + 1) return undefined;
    const reply = messages[n]!;
    if (reply.role !== 'assistant' || (reply.provider !== undefined && reply.provider !== providerId)) return undefined;
    for (let i = 0; i < n; i++) if (messages[i]!.id !== c.sentIds[i]) return undefined;
    return { previousResponseId: c.responseId, newMessages: messages.slice(n + 1) };
  }

  remember(conversationId: string, providerId: string, responseId: string, model: string, messages: Message[]): void {
    this.chains.delete(conversationId);
    this.chains.set(conversationId, { providerId, responseId, model, sentIds: messages.map((m) => m.id) });
    if (this.chains.size > this.max) this.chains.delete(this.chains.keys().next().value!);
  }

  forget(conversationId: string): void {
    this.chains.delete(conversationId);
  }

  /** The last stored response id of a conversation (diagnostics and tests). */
  last(conversationId: string): string | undefined {
    return this.chains.get(conversationId)?.responseId;
  }
}
