/**
 * Conversation sessions: the per-conversation state the kernel keeps in memory (the sequence
 * counter, the checkpoint, the active run) plus an in-memory history used only when no
 * persistence plugin answers `loadHistory` (tests, ephemeral hosts).
 *
 * Nothing here grows with use when a store persists history: messages are not copied into
 * memory, idle sessions are evicted beyond a small LRU (the store has what they held: the next
 * run reloads it), and recent client request ids live in one bounded map for all conversations.
 */
import type { KernelHooks, SessionHooks } from './hooks.js';
import type { Checkpoint, HistorySnapshot, Logger, Message, SessionInfo, SettingsStore } from '../plugin-api.js';
import { AfterTurn } from './after-turn.js';
import { UsageError } from './errors.js';
import { repairHistory } from './history-repair.js';
import type { Run } from './run.js';

/** Client request ids remembered for dedupe, across all conversations. */
const RECENT_REQUESTS = 1024;
/** Idle sessions of persisted conversations kept in memory (a hot cache, not state). */
const IDLE_SESSIONS = 64;
/** Held windows (Session.held): at most this many sessions, and `runtime.heldWindowMessages` messages in all. */
const HELD_SESSIONS = 4;
const HELD_MESSAGES = 5_000;

export class Session {
  lastSeq = 0;
  /** The checkpoint in force (from the store, or made in this process). */
  checkpoint: Checkpoint | undefined;
  /** Set while a compaction runs: a run that starts meanwhile waits for it. */
  compacting: Promise<void> | undefined;
  /** History kept in memory when nothing persists it (empty when a store does). */
  memory: Message[] = [];
  /** True once this process created or ran the conversation. */
  known = false;
  /**
   * The window the last completed run ended with, and the store's stamp of it: the next load
   * reuses it when the store says nothing changed (bounded across sessions: SessionManager.hold).
   */
  held: { window: Message[]; stamp: string } | undefined;
  activeRun: Run | undefined;

  constructor(readonly conversationId: string, private readonly persistent: () => boolean) {}

  info(): SessionInfo {
    const run = this.activeRun?.info;
    return run ? { conversationId: this.conversationId, lastSeq: this.lastSeq, run } : { conversationId: this.conversationId, lastSeq: this.lastSeq };
  }

  remember(message: Message): void {
    this.known = true;
    if (!this.persistent()) this.memory.push(message);
  }

  /** A stored checkpoint is now in force; the in-memory history keeps only its window. */
  adoptCheckpoint(checkpoint: Checkpoint, kept: Message[]): void {
    this.checkpoint = checkpoint;
    const first = kept[0]?.id;
    const at = first === undefined ? this.memory.length : this.memory.findIndex((m) => m.id === first);
    if (at >= 0) this.memory = this.memory.slice(at);
  }

  truncate(fromMessageId: string): void {
    const at = this.memory.findIndex((m) => m.id === fromMessageId);
    if (at >= 0) this.memory = this.memory.slice(0, at);
  }

  get idle(): boolean {
    return !this.activeRun && !this.compacting;
  }
}

export class SessionManager {
  /** In LRU order: the least recently used first. */
  private sessions = new Map<string, Session>();
  private recent = new Map<string, Run>();
  private readonly kernelHooks: KernelHooks;
  private readonly sessionHooks: SessionHooks;
  /** A finished run's `turnEnd` taps, run in the background (core/after-turn.ts); shutdown drains it. */
  readonly afterTurn: AfterTurn;

  private readonly settings: SettingsStore;

  constructor({ kernelHooks, sessionHooks, settings, logger }: { kernelHooks: KernelHooks; sessionHooks: SessionHooks; settings: SettingsStore; logger: Logger }) {
    this.settings = settings;
    this.kernelHooks = kernelHooks;
    this.sessionHooks = sessionHooks;
    this.afterTurn = new AfterTurn({ sessionHooks, kernelHooks, settings: () => settings.get(), logger });
  }

  private persistent = () => this.sessionHooks.loadHistory.isUsed();

  get(conversationId: string): Session {
    let s = this.sessions.get(conversationId);
    if (s) {
      this.sessions.delete(conversationId);
      this.sessions.set(conversationId, s);
      return s;
    }
    s = new Session(conversationId, this.persistent);
    this.sessions.set(conversationId, s);
    if (this.kernelHooks.sessionCreated.isUsed()) this.kernelHooks.sessionCreated.call(s.info());
    return s;
  }

  peek(conversationId: string): Session | undefined {
    return this.sessions.get(conversationId);
  }

  /** The run an earlier request with this client id started, if it is still remembered. */
  runForRequest(conversationId: string, clientRequestId: string): Run | undefined {
    return this.recent.get(`${conversationId}\u0000${clientRequestId}`);
  }

  begin(session: Session, run: Run, clientRequestId?: string): void {
    session.activeRun = run;
    if (clientRequestId) {
      this.recent.set(`${session.conversationId}\u0000${clientRequestId}`, run);
      if (this.recent.size > RECENT_REQUESTS) this.recent.delete(this.recent.keys().next().value!);
    }
  }

  /** The run ended: the session is idle and may be evicted (persisted conversations only). */
  finish(session: Session, run: Run): void {
    if (session.activeRun === run) session.activeRun = undefined;
    this.evictIdle();
  }

  /** Sessions holding a window, the least recently held first. */
  private holders = new Set<Session>();

  /** Keep `window` for the session's next load, within the bounds (the oldest holds go first). */
  hold(session: Session, window: Message[], stamp: string): void {
    const cap = this.settings.get().runtime?.heldWindowMessages ?? HELD_MESSAGES;
    this.holders.delete(session);
    if (window.length > cap) return void (session.held = undefined);
    session.held = { window, stamp };
    this.holders.add(session);
    let total = 0;
    for (const s of this.holders) total += s.held?.window.length ?? 0;
    for (const s of this.holders) {
      if (total <= cap && this.holders.size <= HELD_SESSIONS) break;
      if (s === session) continue;
      total -= s.held?.window.length ?? 0;
      s.held = undefined;
      this.holders.delete(s);
    }
  }

  /** Keep at most IDLE_SESSIONS idle sessions of persisted conversations. */
  evictIdle(): void {
    if (!this.persistent()) return;
    let idle = 0;
    for (const s of this.sessions.values()) if (s.idle) idle++;
    for (const [id, s] of this.sessions) {
      if (idle <= IDLE_SESSIONS) break;
      if (!s.idle) continue;
      this.sessions.delete(id);
      this.holders.delete(s);
      idle--;
    }
  }

  /** Forget a deleted conversation (its runs must already be stopped). */
  drop(conversationId: string): void {
    const s = this.sessions.get(conversationId);
    if (s) this.holders.delete(s);
    this.sessions.delete(conversationId);
    for (const key of this.recent.keys()) if (key.startsWith(`${conversationId}\u0000`)) this.recent.delete(key);
  }

  all(): Session[] {
    return [...this.sessions.values()];
  }

  /** Shutdown: nothing is kept. */
  clear(): void {
    this.holders.clear();
    this.sessions.clear();
    this.recent.clear();
  }
}

/**
 * The conversation's active window as a run or a manual compaction starts from it: from the
 * store when a plugin answers `loadHistory` (the session learns the stored seq and checkpoint),
 * else from the session's memory; dangling tool calls repaired. Unknown conversations are a
 * UsageError unless `isNew`.
 */
export async function loadWindow(hooks: SessionHooks, session: Session, isNew: boolean): Promise<{ window: Message[]; snapshot?: HistorySnapshot }> {
  const unknown = () => new UsageError(`unknown conversation "${session.conversationId}"`);
  if (!hooks.loadHistory.isUsed()) {
    if (!isNew && !session.known) throw unknown();
    return { window: repairHistory(session.memory) };
  }
  // A held window is offered once: whatever this load does next changes what is stored.
  const held = session.held;
  session.held = undefined;
  const info = session.info();
  const snapshot = await hooks.loadHistory.promise(held ? { ...info, held: { stamp: held.stamp, count: held.window.length, ...(held.window.length ? { lastMessageId: held.window.at(-1)!.id } : {}) } } : info);
  if (!snapshot) {
    // Known here but not stored: its first run ended before storing anything (a refused prompt).
    if (!isNew && !session.known) throw unknown();
    return { window: [] };
  }
  session.lastSeq = Math.max(session.lastSeq, snapshot.lastSeq);
  session.checkpoint = snapshot.checkpoint ?? (snapshot.summary ? summaryOnlyCheckpoint(snapshot.summary) : undefined);
  // The held window was repaired when it was loaded, and only stored messages were added since.
  if (snapshot.unchanged && held) return { window: held.window, snapshot };
  return { window: repairHistory(snapshot.messages), snapshot };
}

/** A segment stored with only a summary (no checkpoint record): what the kernel assumes of it. */
function summaryOnlyCheckpoint(summary: string): Checkpoint {
  return { kind: 'summary', summary, coveredMessageCount: 0, prunedToolCallIds: [], ledger: { read: [], modified: [] }, trigger: 'manual', tokensBefore: 0, tokensAfter: 0, createdAt: 0 };
}
