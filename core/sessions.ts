/**
 * Conversation sessions: the per-conversation state the kernel keeps in memory (the sequence
 * counter, the active run, recent client request ids) plus an in-memory history used only when
 * no persistence plugin answers `loadHistory` (tests, ephemeral hosts).
 */
import type { KernelHooks } from './hooks.js';
import type { Checkpoint, Message, SessionInfo } from '../plugin-api.js';
import type { Run } from './run.js';

const RECENT_REQUESTS = 256;

export class Session {
  lastSeq = 0;
  /** The checkpoint in force (from the store, or made in this process). */
  checkpoint: Checkpoint | undefined;
  /** Set while a compaction runs: a run that starts meanwhile waits for it. */
  compacting: Promise<void> | undefined;
  /** History kept in memory when nothing persists it. */
  memory: Message[] = [];
  /** True once this process created or ran the conversation. */
  known = false;
  activeRun: Run | undefined;
  private recent = new Map<string, Run>();

  constructor(readonly conversationId: string) {}

  info(): SessionInfo {
    const run = this.activeRun?.info;
    return run ? { conversationId: this.conversationId, lastSeq: this.lastSeq, run } : { conversationId: this.conversationId, lastSeq: this.lastSeq };
  }

  remember(message: Message): void {
    this.known = true;
    this.memory.push(message);
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

  runForRequest(clientRequestId: string): Run | undefined {
    return this.recent.get(clientRequestId);
  }

  begin(run: Run, clientRequestId?: string): void {
    this.known = true;
    this.activeRun = run;
    if (clientRequestId) {
      this.recent.set(clientRequestId, run);
      if (this.recent.size > RECENT_REQUESTS) this.recent.delete(this.recent.keys().next().value!);
    }
  }

  finish(run: Run): void {
    if (this.activeRun === run) this.activeRun = undefined;
  }
}

export class SessionManager {
  private sessions = new Map<string, Session>();
  private readonly kernelHooks: KernelHooks;

  constructor({ kernelHooks }: { kernelHooks: KernelHooks }) {
    this.kernelHooks = kernelHooks;
  }

  get(conversationId: string): Session {
    let s = this.sessions.get(conversationId);
    if (!s) {
      s = new Session(conversationId);
      this.sessions.set(conversationId, s);
      if (this.kernelHooks.sessionCreated.isUsed()) this.kernelHooks.sessionCreated.call(s.info());
    }
    return s;
  }

  peek(conversationId: string): Session | undefined {
    return this.sessions.get(conversationId);
  }

  /** Forget a deleted conversation (its runs must already be stopped). */
  drop(conversationId: string): void {
    this.sessions.delete(conversationId);
  }

  all(): Session[] {
    return [...this.sessions.values()];
  }
}
