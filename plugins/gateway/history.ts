/**
 * Conversation history for the gateway: the `history` service (plugins/history-sqlite) when a
 * plugin provides it, else an in-memory store fed by the lifecycle events (tests, ephemeral
 * hosts). The service is looked up on every call, so load order does not matter.
 */
import type { Checkpoint, ConversationChange, Disposable, HistoryMessage, HistoryService, LifecycleEvent, Message, SegmentInfo, SessionHookTaps } from '../../plugin-api.js';
import { checkpointOfEndPayload, type CheckpointView, type ConversationSummary, type ConversationUsage, type ReplyMap } from '../../lib/gateway-protocol/protocol.js';

export type { ConversationUsage } from '../../lib/gateway-protocol/protocol.js';

export interface StoredConversation {
  summary: ConversationSummary;
  /** The newest page of messages, oldest first. */
  messages: Message[];
  /** Context checkpoints, oldest first (every one; those placed before `messages` marked inOlderPage). */
  checkpoints: CheckpointView[];
  /** The last persisted sequence number, when the store knows it. */
  lastSeq?: number;
  /** Older messages exist than `messages` holds. */
  hasMore: boolean;
  /** Ordinal of messages[0]. */
  firstOrdinal?: number;
  /** Stored messages older than messages[0]. */
  olderCount: number;
}

/** Older messages of a conversation, as `conversations.load { before }` answers. */
export interface StoredPage {
  messages: Message[];
  firstOrdinal?: number;
  hasMore: boolean;
  /** Only the checkpoints placed before a message of this page. */
  checkpoints: CheckpointView[];
}

/** The subset of the history service the gateway uses (checked structurally, so a partial one still works). */
type HistoryLike = Pick<HistoryService, 'listConversations' | 'getConversation' | 'conversationExists'> & Partial<Pick<HistoryService, 'watchConversations' | 'setConversationMeta' | 'getUsage'>>;

interface MemoryEntry {
  summary: ConversationSummary;
  messages: Message[];
  checkpoints: CheckpointView[];
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
    const endOfCompaction = e.type === 'compaction' && e.payload.phase === 'end';
    if (e.type !== 'agent_start' && e.type !== 'turn_end' && e.type !== 'agent_end' && !endOfCompaction) return;
    const cut = e.type === 'agent_start' ? this.truncations.get(e.runId) : undefined;
    if (cut) this.truncations.delete(e.runId);
    if (this.service()) return;
    let entry = this.memory.get(e.conversationId);
    if (!entry) {
      entry = { summary: { id: e.conversationId, title: null, createdAt: e.ts, updatedAt: e.ts, provider: null, model: null, messageCount: 0 }, messages: [], checkpoints: [] };
      this.memory.set(e.conversationId, entry);
    }
    const s = entry.summary;
    s.updatedAt = e.ts;
    const push = (m: Message) => {
      // A checkpoint that kept nothing sits before whatever comes next, as a new segment's first message would.
      for (const c of entry.checkpoints) if (!c.beforeMessageId) c.beforeMessageId = m.id;
      entry.messages.push(m);
    };
    if (e.type === 'agent_start') {
      if (cut) {
        const at = entry.messages.findIndex((m) => m.id === cut);
        if (at >= 0) entry.messages = entry.messages.slice(0, at);
        const ids = new Set(entry.messages.map((m) => m.id));
        for (const c of entry.checkpoints) if (c.beforeMessageId && !ids.has(c.beforeMessageId)) delete c.beforeMessageId;
      }
      s.provider = e.provider;
      s.model = e.model;
      if (e.userMessage) push(e.userMessage);
    } else if (e.type === 'turn_end') {
      push(e.message);
      if (e.toolResults) push(e.toolResults);
    } else if (e.type === 'compaction') {
      const view = checkpointOfEndPayload(e.payload, `mem-${e.seq}`);
      if (view) {
        if (view.beforeMessageId && !entry.messages.some((m) => m.id === view.beforeMessageId)) delete view.beforeMessageId;
        entry.checkpoints.push(view);
      }
    }
    s.messageCount = entry.messages.length;
  }

  async list(search: string | undefined, limit: number): Promise<ConversationSummary[]> {
    const svc = this.service();
    if (svc) {
      const rows = await svc.listConversations({ ...(search ? { search } : {}), limit });
      return rows.map((r) => ({ id: r.id, title: r.title, createdAt: r.createdAt, updatedAt: r.updatedAt, provider: r.provider, model: r.model, messageCount: r.messageCount, ...(r.pinned ? { pinned: true } : {}), ...(r.snippet ? { snippet: r.snippet } : {}) }));
    }
    const needle = search?.toLowerCase();
    return [...this.memory.values()]
      .filter((e) => !needle || (e.summary.title ?? '').toLowerCase().includes(needle) || e.messages.some((m) => textOf(m).toLowerCase().includes(needle)))
      .sort((a, b) => Number(!!b.summary.pinned) - Number(!!a.summary.pinned) || b.summary.updatedAt - a.summary.updatedAt)
      .slice(0, limit)
      .map((e) => ({ ...e.summary }));
  }

  /** The newest `limit` messages, with every checkpoint. */
  async get(id: string, limit: number): Promise<StoredConversation | undefined> {
    const r = await this.read(id, limit, undefined);
    if (!r) return undefined;
    const checkpoints = r.placed.map(({ view, place }) => {
      if (place === 'older') return { ...withoutPlace(view), inOlderPage: true as const };
      return place === 'page' ? view : withoutPlace(view);
    });
    return { summary: r.summary, messages: r.messages, checkpoints, ...(r.lastSeq !== undefined ? { lastSeq: r.lastSeq } : {}), hasMore: r.hasMore, ...(r.firstOrdinal ? { firstOrdinal: r.firstOrdinal } : {}), olderCount: r.olderCount ?? 0 };
  }

  /** The `limit` messages before ordinal `before`, with the checkpoints placed among them. */
  async page(id: string, before: number, limit: number): Promise<StoredPage | undefined> {
    const r = await this.read(id, limit, before);
    if (!r) return undefined;
    const checkpoints = r.placed.filter((p) => p.place === 'page').map((p) => p.view);
    return { messages: r.messages, ...(r.firstOrdinal ? { firstOrdinal: r.firstOrdinal } : {}), hasMore: r.hasMore, checkpoints };
  }

  private async read(id: string, limit: number, before: number | undefined) {
    const svc = this.service();
    if (svc) {
      // One message more than asked, looked behind: whether the page's oldest message opens its
      // segment (and so where a checkpoint card goes) is known only from the one before it.
      const c = await svc.getConversation(id, { limit: limit + 1, ...(before !== undefined ? { before } : {}) });
      if (!c) return undefined;
      const behind = c.messages.length > limit ? c.messages[0] : undefined;
      const rows = behind ? c.messages.slice(1) : c.messages;
      const messages = rows.map((m) => {
        // The store's bookkeeping fields stay server-side; a partial message is marked as the kernel marks it.
        const { status, segmentId: _s, ordinal: _o, updatedAt: _u, ...msg } = m;
        return status === 'partial' ? { ...msg, meta: { ...(msg.meta ?? {}), partial: true } } : msg;
      }) as Message[];
      return {
        summary: { id: c.id, title: c.title, createdAt: c.createdAt, updatedAt: c.updatedAt, provider: c.provider, model: c.model, messageCount: c.messageCount },
        messages,
        placed: placeCheckpoints(c.segments ?? [], rows, behind),
        lastSeq: c.lastSeq as number | undefined,
        hasMore: !!behind,
        firstOrdinal: rows[0]?.ordinal,
        // Known for the newest page only (the store counts every message, not those after `before`).
        olderCount: before === undefined ? Math.max(0, c.messageCount - rows.length) : undefined,
      };
    }
    const e = this.memory.get(id);
    if (!e) return undefined;
    // In memory a message's ordinal is its position: history is only ever cut at its end.
    const end = before === undefined ? e.messages.length : Math.max(0, Math.min(before - 1, e.messages.length));
    const start = Math.max(0, end - limit);
    const index = new Map(e.messages.map((m, i) => [m.id, i]));
    const placed = e.checkpoints.map((c): Placed => {
      const at = c.beforeMessageId === undefined ? undefined : index.get(c.beforeMessageId);
      const place = at === undefined || at >= end ? 'after' : at < start ? 'older' : 'page';
      return { view: { ...c }, place };
    });
    return {
      summary: { ...e.summary },
      messages: e.messages.slice(start, end),
      placed,
      lastSeq: undefined,
      hasMore: start > 0,
      firstOrdinal: end > start ? start + 1 : undefined,
      olderCount: start,
    };
  }

  async exists(id: string): Promise<boolean> {
    const svc = this.service();
    if (svc) return svc.conversationExists(id);
    return this.memory.has(id);
  }

  /**
   * Answer the runtime's delete and rename for the in-memory store (only when no service
   * persists history: then the store's own taps answer).
   */
  answer(hooks: Pick<SessionHookTaps, 'deleteConversation' | 'renameConversation'>): Disposable[] {
    // Taps are the plugin's subscriptions: disposed when the gateway unloads.
    return [
      hooks.deleteConversation.tap(({ conversationId }) => (this.service() ? undefined : this.memory.delete(conversationId))),
      hooks.renameConversation.tap(({ conversationId, title }) => {
        if (this.service()) return undefined;
        const e = this.memory.get(conversationId);
        if (!e) return false;
        e.summary.title = title.trim();
        e.summary.updatedAt = Date.now();
        return true;
      }),
    ];
  }

  /** A deleted conversation: drop what memory holds of it (a store answered the delete itself). */
  forget(id: string): void {
    this.memory.delete(id);
  }

  /** Titles, meta and deletes the history service reports (here or, on a shared backend, elsewhere); undefined when there is no service to watch. */
  async watch(listener: (conversationId: string, kind: ConversationChange['kind']) => void): Promise<Disposable | undefined> {
    const svc = this.service();
    if (typeof svc?.watchConversations !== 'function') return undefined;
    return svc.watchConversations((change) => listener(change.conversationId, change.kind));
  }

  /** Pin or unpin (`meta.pinned`); false when the conversation is unknown. */
  async pin(id: string, pinned: boolean): Promise<boolean> {
    const svc = this.service();
    if (svc) {
      if (typeof svc.setConversationMeta !== 'function') return false;
      return (await svc.setConversationMeta(id, { pinned: pinned ? true : null })) !== undefined;
    }
    const e = this.memory.get(id);
    if (!e) return false;
    if (pinned) e.summary.pinned = true;
    else delete e.summary.pinned;
    return true;
  }

  /**
   * What a conversation has spent: tokens of every stored round (truncated ones and compaction
   * summaries included) and the cost of those priced when they ran. Undefined for an unknown
   * conversation; zeros without a store that keeps usage.
   */
  async usage(id: string): Promise<ConversationUsage | undefined> {
    const svc = this.service();
    if (svc && !(await svc.conversationExists(id))) return undefined;
    if (!svc && !this.memory.has(id)) return undefined;
    const total: ConversationUsage = { rounds: 0, inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, unpricedRounds: 0 };
    for (const u of (await svc?.getUsage?.(id)) ?? []) {
      total.rounds++;
      total.inputTokens += u.inputTokens;
      total.outputTokens += u.outputTokens;
      total.cacheReadTokens += u.cacheReadTokens;
      total.cacheWriteTokens += u.cacheWriteTokens;
      if (u.costUsd === undefined) total.unpricedRounds++;
      else total.costUsd = Math.round(((total.costUsd ?? 0) + u.costUsd) * 1e8) / 1e8;
    }
    return total;
  }

  /** Stored messages as they are (lossless), newest `limit` or those before `before`, for an export. */
  async exportPage(id: string, before: number | undefined, limit: number): Promise<Omit<ReplyMap['conversations.export'], 'conversationId'> | undefined> {
    const svc = this.service();
    if (svc) {
      const c = await svc.getConversation(id, { limit, ...(before !== undefined ? { before } : {}) });
      if (!c) return undefined;
      const { messages, hasMore, ...conversation } = c;
      return { conversation, messages, hasMore, ...(messages[0] ? { firstOrdinal: messages[0].ordinal } : {}) };
    }
    const e = this.memory.get(id);
    if (!e) return undefined;
    const end = before === undefined ? e.messages.length : Math.max(0, Math.min(before - 1, e.messages.length));
    const start = Math.max(0, end - limit);
    const messages = e.messages.slice(start, end).map((m, i) => ({ ...m, ordinal: start + i + 1 }));
    return { conversation: { ...e.summary }, messages, hasMore: start > 0, ...(messages.length ? { firstOrdinal: start + 1 } : {}) };
  }

}

/** Where a checkpoint's card goes relative to a page: before one of its messages, in older pages, or after it (for the newest page: at the end). */
interface Placed {
  view: CheckpointView;
  place: 'page' | 'older' | 'after';
}

/**
 * A checkpoint card belongs right before the first message of its segment; a segment with no
 * messages yet puts it before the first message of a later one, else at the end. Segments hold
 * contiguous runs of ordinals in segment order, so a page (with the message just before it,
 * `behind`) tells every segment that starts inside it; the segment of `behind` started before it.
 */
export function placeCheckpoints(segments: SegmentInfo[], page: Pick<HistoryMessage, 'id' | 'segmentId'>[], behind?: Pick<HistoryMessage, 'segmentId'>): Placed[] {
  const starts = new Map<string, string>();
  let prev = behind?.segmentId;
  for (const m of page) {
    if (m.segmentId !== prev && !starts.has(m.segmentId)) starts.set(m.segmentId, m.id);
    prev = m.segmentId;
  }
  const out: Placed[] = [];
  segments.forEach((seg, i) => {
    if (!seg.checkpoint) return;
    let before: string | undefined;
    let place: Placed['place'] = 'after';
    for (let j = i; j < segments.length; j++) {
      const sid = segments[j]!.id;
      before = starts.get(sid);
      if (before) {
        place = 'page';
        break;
      }
      if (sid === behind?.segmentId) {
        place = 'older';
        break;
      }
    }
    out.push({ view: viewOf(seg.id, seg.checkpoint, place === 'page' ? before : undefined), place });
  });
  return out;
}

function withoutPlace(view: CheckpointView): CheckpointView {
  const { beforeMessageId: _b, ...rest } = view;
  return rest;
}

function viewOf(segmentId: string, c: Checkpoint, beforeMessageId: string | undefined): CheckpointView {
  return {
    segmentId,
    ...(beforeMessageId ? { beforeMessageId } : {}),
    kind: c.kind,
    trigger: c.trigger,
    summary: c.summary,
    coveredMessageCount: c.coveredMessageCount,
    ...(c.provider ? { provider: c.provider } : {}),
    ...(c.model ? { model: c.model } : {}),
    tokensBefore: c.tokensBefore,
    tokensAfter: c.tokensAfter,
    createdAt: c.createdAt,
  };
}

function textOf(m: Message): string {
  return m.content.map((b) => (b.type === 'text' ? b.text : '')).join(' ');
}
