/**
 * Conversation history for the gateway: the `history` service (plugins/history-sqlite) when a
 * plugin provides it, else an in-memory store fed by the lifecycle events (tests, ephemeral
 * hosts). The service is looked up on every call, so load order does not matter.
 */
import type { LifecycleEvent, Message } from '../../plugin-api.js';
import type { HistoryService } from '../history-sqlite/service.js';
import type { ConversationSummary } from './protocol.js';

export interface StoredConversation {
  summary: ConversationSummary;
  messages: Message[];
  /** The last persisted sequence number, when the store knows it. */
  lastSeq?: number;
}

/** The subset of the history service the gateway uses (checked structurally, so a partial one still works). */
type HistoryLike = Pick<HistoryService, 'listConversations' | 'getConversation' | 'renameConversation' | 'deleteConversation' | 'conversationExists'>;

interface MemoryEntry {
  summary: ConversationSummary;
  messages: Message[];
}

export class GatewayHistory {
  private memory = new Map<string, MemoryEntry>();
  /** Runs started with edit-and-resend: their agent_start truncates the in-memory copy. */
  private truncations = new Map<string, string>();

  constructor(private readonly lookup: () => HistoryLike | undefined) {}

  private service(): HistoryLike | undefined {
    const s = this.lookup();
    return s && typeof s.getConversation === 'function' ? s : undefined;
  }

  /** Remember that run `runId` truncates at `messageId` (applied to memory at its agent_start). */
  noteTruncation(runId: string, messageId: string): void {
    this.truncations.set(runId, messageId);
  }

  /** The run never started (it emits no agent_start): drop its note. */
  forgetTruncation(runId: string): void {
    this.truncations.delete(runId);
  }

  /** Feed the in-memory store (only when no service persists history). */
  observe(e: LifecycleEvent): void {
    if (e.type !== 'agent_start' && e.type !== 'turn_end' && e.type !== 'agent_end') return;
    const cut = e.type === 'agent_start' ? this.truncations.get(e.runId) : undefined;
    if (cut) this.truncations.delete(e.runId);
    if (this.service()) return;
    let entry = this.memory.get(e.conversationId);
    if (!entry) {
      entry = { summary: { id: e.conversationId, title: null, createdAt: e.ts, updatedAt: e.ts, provider: null, model: null, messageCount: 0 }, messages: [] };
      this.memory.set(e.conversationId, entry);
    }
    const s = entry.summary;
    s.updatedAt = e.ts;
    if (e.type === 'agent_start') {
      if (cut) {
        const at = entry.messages.findIndex((m) => m.id === cut);
        if (at >= 0) entry.messages = entry.messages.slice(0, at);
      }
      s.provider = e.provider;
      s.model = e.model;
      if (e.userMessage) entry.messages.push(e.userMessage);
    } else if (e.type === 'turn_end') {
      entry.messages.push(e.message);
      if (e.toolResults) entry.messages.push(e.toolResults);
    }
    s.messageCount = entry.messages.length;
  }

  async list(search: string | undefined, limit: number): Promise<ConversationSummary[]> {
    const svc = this.service();
    if (svc) {
      const rows = await svc.listConversations({ ...(search ? { search } : {}), limit });
      return rows.map((r) => ({ id: r.id, title: r.title, createdAt: r.createdAt, updatedAt: r.updatedAt, provider: r.provider, model: r.model, messageCount: r.messageCount }));
    }
    const needle = search?.toLowerCase();
    return [...this.memory.values()]
      .filter((e) => !needle || (e.summary.title ?? '').toLowerCase().includes(needle) || e.messages.some((m) => textOf(m).toLowerCase().includes(needle)))
      .sort((a, b) => b.summary.updatedAt - a.summary.updatedAt)
      .slice(0, limit)
      .map((e) => ({ ...e.summary }));
  }

  async get(id: string): Promise<StoredConversation | undefined> {
    const svc = this.service();
    if (svc) {
      const c = await svc.getConversation(id);
      if (!c) return undefined;
      const messages = c.messages.map((m) => {
        // The store's bookkeeping fields stay server-side; a partial message is marked as the kernel marks it.
        const { status, segmentId: _s, ordinal: _o, updatedAt: _u, ...msg } = m;
        return status === 'partial' ? { ...msg, meta: { ...(msg.meta ?? {}), partial: true } } : msg;
      }) as Message[];
      return {
        summary: { id: c.id, title: c.title, createdAt: c.createdAt, updatedAt: c.updatedAt, provider: c.provider, model: c.model, messageCount: c.messageCount },
        messages,
        lastSeq: c.lastSeq,
      };
    }
    const e = this.memory.get(id);
    return e ? { summary: { ...e.summary }, messages: e.messages.slice() } : undefined;
  }

  async exists(id: string): Promise<boolean> {
    const svc = this.service();
    if (svc) return svc.conversationExists(id);
    return this.memory.has(id);
  }

  async rename(id: string, title: string): Promise<boolean> {
    const svc = this.service();
    if (svc) return svc.renameConversation(id, title);
    const e = this.memory.get(id);
    if (!e) return false;
    e.summary.title = title.trim();
    e.summary.updatedAt = Date.now();
    return true;
  }

  async delete(id: string): Promise<boolean> {
    const svc = this.service();
    if (svc) return svc.deleteConversation(id);
    return this.memory.delete(id);
  }
}

function textOf(m: Message): string {
  return m.content.map((b) => (b.type === 'text' ? b.text : '')).join(' ');
}
