/**
 * Silent memory extraction: after a turn that ended normally, a model is asked (through
 * `runtime.complete`) for durable facts from it, and what it proposes goes to the unreviewed
 * list (redacted, with its source), never into memory files.
 *
 * It never blocks a conversation: the `turnEnd` tap only records the turn and arms a timer;
 * the extraction runs in the background and its promise is kept, so `shutdown` can wait for it.
 * Gates, each configurable (settings.ts):
 *  - a turn that was aborted or failed proposes nothing, and drops the turns still waiting to
 *    be read with it (the user stopped: what came before may be what went wrong);
 *  - a short user text or a greeting is not worth a model call;
 *  - `idleMs` of quiet after a turn first: a quick follow-up restarts the wait, and the turns
 *    are read together (one call instead of one per turn). A host that stops before the wait
 *    is over (a one-shot `liveagent chat`), or while an extraction is still in flight, hands the
 *    turns to the next host on the same home (handoff.ts), which extracts them at its start;
 *  - at most one extraction in flight per conversation, and `spacingMs` between two starts;
 *  - `timeoutMs` bounds the model call.
 */
import type { Logger, Message, RunResult, RuntimeApi, SessionInfo } from '../../plugin-api.js';
import { EXTRACTION_SYSTEM, parseExtraction, worthExtracting } from './extract-prompt.js';
import type { MemoryFileInfo } from './files.js';
import { redactSecrets } from './redact.js';
import type { MemorySettings } from './settings.js';
import type { MemoryProposal, UnreviewedList } from './unreviewed.js';
import type { ExtractionHandoff, HandoffBatch } from './handoff.js';

/** Turns read together at most (the oldest drop out). */
const MAX_TURNS = 6;
const MAX_TURN_CHARS = 4000;
const MAX_INDEX_LINES = 60;
/** Shutdown waits at most this long (or `timeoutMs`, if shorter) before it aborts what is in flight. */
const SHUTDOWN_GRACE_MS = 5000;

export interface ExtractorDeps {
  runtime: Pick<RuntimeApi, 'complete'>;
  logger: Logger;
  settings(): MemorySettings;
  list: UnreviewedList;
  /** The memory files a workdir sees (both scopes), to tell the model what is already known. */
  files(workdir: string): Promise<MemoryFileInfo[]>;
  /** A failure that is not the model's (the list cannot be written). */
  reportFailure(message: string): void;
  /** New proposals reached the list (the WebUI shows an indicator). */
  /** `agentDev`: a turn of the batch ran in agent-dev mode (its clients show what was extracted). */
  proposed?(added: MemoryProposal[], info: { conversationId: string; agentDev: boolean }): void;
  /** Where turns still waiting at shutdown go, and where a start finds those an earlier host left. */
  handoff?: ExtractionHandoff;
}

interface Turn {
  runId: string;
  userText: string;
  userMessageId?: string;
  assistantText: string;
}

interface Batch {
  turns: Turn[];
  provider: string;
  model: string;
  workdir: string;
  /** A turn of the batch ran in agent-dev mode. */
  agentDev?: boolean;
  timer?: NodeJS.Timeout;
}

const textOf = (m: Message) => m.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
const cap = (s: string, n: number) => (s.length > n ? `${s.slice(0, n)}\n[... cut ...]` : s);

export class Extractor {
  private readonly userMessages = new Map<string, { id: string; text: string }>();
  private readonly batches = new Map<string, Batch>();
  private readonly inflight = new Map<string, Promise<void>>();
  private readonly lastStart = new Map<string, number>();
  private readonly controllers = new Set<AbortController>();
  private idleWaiters: Array<() => void> = [];
  private stopped = false;
  /** Batches whose extraction the shutdown aborted: handed off with the waiting ones. */
  private readonly unfinished: Array<{ conv: string; batch: Batch }> = [];

  constructor(private readonly d: ExtractorDeps) {}

  /** `saveUserMessage`: remember the run's user text; a new turn restarts the quiet wait. */
  userMessage(message: Message, session: SessionInfo): void {
    const runId = session.run?.runId;
    if (!runId || message.role !== 'user') return;
    this.userMessages.set(runId, { id: message.id, text: textOf(message) });
    const batch = this.batches.get(session.conversationId);
    if (batch?.timer) {
      clearTimeout(batch.timer);
      delete batch.timer;
    }
  }

  /** `turnEnd`: record a completed turn and arm the timer; returns at once. */
  turnEnded(result: RunResult, session: SessionInfo): void {
    const user = this.userMessages.get(result.runId);
    this.userMessages.delete(result.runId);
    const conv = result.conversationId;
    if (result.status !== 'completed') {
      this.drop(conv);
      return;
    }
    const s = this.d.settings();
    const run = session.run;
    if (this.stopped || !s.enabled || !s.autoExtract || !run) return;
    if (!user || !worthExtracting(user.text, s.minTurnChars)) {
      this.arm(conv);
      return;
    }
    const assistantText = result.messages.filter((m) => m.role === 'assistant').map(textOf).join('\n').trim();
    const batch = this.batches.get(conv) ?? { turns: [], provider: run.provider, model: run.model, workdir: run.workdir };
    Object.assign(batch, { provider: run.provider, model: run.model, workdir: run.workdir, agentDev: batch.agentDev || run.mode === 'agent-dev' });
    batch.turns = [...batch.turns, { runId: result.runId, userText: user.text, userMessageId: user.id, assistantText }].slice(-MAX_TURNS);
    this.batches.set(conv, batch);
    this.arm(conv);
  }

  private drop(conv: string): void {
    const batch = this.batches.get(conv);
    if (batch?.timer) clearTimeout(batch.timer);
    this.batches.delete(conv);
    this.notifyIfIdle();
  }

  private arm(conv: string): void {
    const batch = this.batches.get(conv);
    if (!batch || this.stopped) return;
    if (batch.timer) clearTimeout(batch.timer);
    delete batch.timer;
    // The one in flight re-arms this when it ends.
    if (this.inflight.has(conv)) return;
    const s = this.d.settings();
    const spacing = (this.lastStart.get(conv) ?? -Infinity) + s.spacingMs - Date.now();
    batch.timer = setTimeout(() => this.fire(conv), Math.max(s.idleMs, spacing, 0));
    batch.timer.unref?.();
  }

  private fire(conv: string): void {
    const batch = this.batches.get(conv);
    if (!batch || this.stopped || this.inflight.has(conv)) return;
    this.batches.delete(conv);
    this.lastStart.set(conv, Date.now());
    const job = this.extract(conv, batch)
      .catch((err: unknown) => {
        // Cut short by the host stopping: the next host reads these turns again.
        if (this.stopped) return void this.unfinished.push({ conv, batch });
        this.d.logger.warn(`memory extraction for conversation ${conv} failed: ${(err as Error)?.message ?? String(err)}`);
      })
      .finally(() => {
        this.inflight.delete(conv);
        this.arm(conv);
        this.notifyIfIdle();
      });
    this.inflight.set(conv, job);
  }

  private async extract(conv: string, batch: Batch): Promise<void> {
    const s = this.d.settings();
    const provider = s.extractProvider ?? batch.provider;
    const model = s.extractModel ?? (s.extractProvider ? undefined : batch.model);
    const known = await this.d.files(batch.workdir).catch(() => []);
    const index = known.slice(0, MAX_INDEX_LINES).map((f) => `- ${f.path}: ${f.firstLine}`);
    const transcript = batch.turns.map((t) => `[User]: ${cap(t.userText, MAX_TURN_CHARS)}\n[Assistant]: ${cap(t.assistantText || '(no text)', MAX_TURN_CHARS)}`).join('\n\n');
    const prompt = [
      '<conversation-excerpt>',
      redactSecrets(transcript),
      '</conversation-excerpt>',
      '<already-remembered>',
      index.length ? index.join('\n') : '(nothing yet)',
      '</already-remembered>',
    ].join('\n');
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), s.timeoutMs);
    timer.unref?.();
    this.controllers.add(controller);
    let reply: string;
    try {
      const done = await this.d.runtime.complete({
        provider,
        ...(model ? { model } : {}),
        system: [{ id: 'memory-extraction', text: EXTRACTION_SYSTEM }],
        messages: [{ id: `memx-${conv}-${Date.now()}`, role: 'user', content: [{ type: 'text', text: prompt }], createdAt: Date.now() }],
        maxOutputTokens: 1024,
        lean: true,
        signal: controller.signal,
      });
      reply = done.text;
    } catch (err) {
      if (this.stopped) throw new Error('the host stopped before the model answered');
      if (controller.signal.aborted) throw new Error(`the model did not answer within ${s.timeoutMs} ms (memory.timeoutMs)`);
      throw err;
    } finally {
      clearTimeout(timer);
      this.controllers.delete(controller);
    }
    const proposals = parseExtraction(reply);
    if (!proposals.length) return;
    const last = batch.turns.at(-1)!;
    const items: Array<Omit<MemoryProposal, 'id' | 'createdAt'>> = proposals.map((p) => ({
      text: redactSecrets(p.text),
      scope: p.scope,
      file: p.file,
      ...(p.scope === 'project' ? { workdir: batch.workdir } : {}),
      source: { conversationId: conv, runId: last.runId, ...(last.userMessageId ? { messageId: last.userMessageId } : {}) },
      provider,
      ...(model ? { model } : {}),
    }));
    try {
      const added = await this.d.list.add(items);
      if (added.length) {
        this.d.logger.info(`proposed ${added.length} memories for review from conversation ${conv}`);
        this.d.proposed?.(added, { conversationId: conv, agentDev: !!batch.agentDev });
      }
    } catch (err) {
      this.d.reportFailure(`cannot write the unreviewed memory list: ${(err as Error)?.message ?? String(err)}`);
    }
  }

  /** Resolves once nothing waits or runs (timers of batches included). */
  whenIdle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private isIdle(): boolean {
    return this.inflight.size === 0 && [...this.batches.values()].every((b) => !b.timer);
  }

  private notifyIfIdle(): void {
    if (!this.isIdle()) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }

  /**
   * Stop arming; drop waiting batches; wait for the extractions in flight, for a grace period
   * (the kernel bounds shutdown taps), then abort what is left and wait for it to wind down.
   */
  async shutdown(): Promise<void> {
    this.stopped = true;
    for (const b of this.batches.values()) if (b.timer) clearTimeout(b.timer);
    const waiting = [...this.batches].map(([conv, batch]) => ({ conv, batch }));
    this.batches.clear();
    const all = Promise.allSettled([...this.inflight.values()]);
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((r) => (timer = setTimeout(r, Math.min(SHUTDOWN_GRACE_MS, this.d.settings().timeoutMs))));
    await Promise.race([all, grace]);
    clearTimeout(timer);
    for (const c of this.controllers) c.abort();
    await all;
    const left = [...waiting, ...this.unfinished.splice(0)];
    if (left.length && this.d.handoff) {
      const now = Date.now();
      await this.d.handoff.save(left.map(({ conv, batch }): HandoffBatch => ({ conversationId: conv, turns: batch.turns, provider: batch.provider, model: batch.model, workdir: batch.workdir, ...(batch.agentDev ? { agentDev: true } : {}), savedAt: now })));
    }
    this.notifyIfIdle();
  }

  /** Take the turns earlier hosts left and extract them now, in the background. */
  async resume(): Promise<number> {
    const s = this.d.settings();
    if (!this.d.handoff || !s.enabled || !s.autoExtract || this.stopped) return 0;
    const claimed = await this.d.handoff.claim();
    for (const b of claimed) {
      if (this.stopped) break;
      const known = this.batches.get(b.conversationId);
      const batch: Batch = known ?? { turns: [], provider: b.provider, model: b.model, workdir: b.workdir };
      batch.turns = [...b.turns, ...batch.turns].slice(-MAX_TURNS);
      if (b.agentDev) batch.agentDev = true;
      this.batches.set(b.conversationId, batch);
      if (batch.timer) clearTimeout(batch.timer);
      delete batch.timer;
      // They waited long enough: no quiet time again (a one-shot CLI would never see it end).
      this.fire(b.conversationId);
    }
    return claimed.length;
  }
}
