/**
 * The pending table: one entry per asked question set, keyed by toolCallId (within its
 * conversation, so two providers that number their calls alike never collide). Exactly one outcome
 * settles an entry (an answer, a cancel, the deadline); whatever comes after the first finds no
 * entry and changes nothing.
 */
import type { Disposable } from '../../plugin-api.js';
import { CancelledError } from '../../core/errors.js';
import { AnswerError, defaultAnswers, parseAnswers, type Answer } from './answers.js';
import type { NormalizedQuestion } from './schema.js';

export type Outcome = 'answered' | 'cancelled' | 'timedOut';

/** A question set waiting for the user. */
export interface PendingQuestion {
  toolCallId: string;
  conversationId: string;
  runId: string;
  questions: NormalizedQuestion[];
  /** Epoch ms when the recommended options are taken; null when the timeout is off. */
  deadlineAt: number | null;
  /** Longest typed answer accepted. */
  maxCustomLength: number;
}

/** How an entry was settled. `answers` is empty when cancelled. */
export interface Settlement {
  outcome: Outcome;
  answers: Answer[];
  /** Why it was cancelled (the run was stopped, the conversation was deleted, ...). */
  reason?: string;
}

interface Entry {
  question: PendingQuestion;
  resolve(s: Settlement): void;
  cleanup: Array<() => void>;
}

/** Settled ids remembered so a late answer hears "already settled", not "unknown". */
const RECENT_LIMIT = 256;

export class PendingQuestions {
  private readonly entries = new Map<string, Entry>();
  private readonly recent = new Map<string, Outcome>();
  private readonly askedListeners = new Set<(q: PendingQuestion) => void>();
  private readonly settledListeners = new Set<(q: PendingQuestion, s: Settlement) => void>();

  /**
   * Register a question set and return the promise of its settlement. The entry exists before
   * this returns, so an answer sent as soon as the event is out always finds it.
   */
  ask(question: PendingQuestion, signal: AbortSignal): Promise<Settlement> {
    const id = keyOf(question.conversationId, question.toolCallId);
    if (this.entries.has(id)) throw new Error(`question "${question.toolCallId}" is already pending`);
    let resolve!: (s: Settlement) => void;
    const promise = new Promise<Settlement>((r) => (resolve = r));
    const entry: Entry = { question, resolve, cleanup: [] };
    this.entries.set(id, entry);
    if (question.deadlineAt !== null) {
      // Kept referenced: in the CLI this timer may be the only thing keeping the process alive.
      const timer = setTimeout(() => this.settle(id, { outcome: 'timedOut', answers: defaultAnswers(question.questions) }), Math.max(0, question.deadlineAt - Date.now()));
      entry.cleanup.push(() => clearTimeout(timer));
    } else {
      // No deadline: hold the event loop open until someone settles it (answer, stop, Ctrl-C).
      const hold = setInterval(() => {}, 1 << 30);
      entry.cleanup.push(() => clearInterval(hold));
    }
    const onAbort = () => this.settle(id, { outcome: 'cancelled', answers: [], reason: stopReason(signal) });
    if (signal.aborted) onAbort();
    else {
      signal.addEventListener('abort', onAbort, { once: true });
      entry.cleanup.push(() => signal.removeEventListener('abort', onAbort));
    }
    if (this.entries.has(id)) for (const l of this.askedListeners) safely(() => l(question));
    return promise;
  }

  /** Settle with the user's answers. Throws AnswerError when refused; the entry then stays pending. */
  answer(toolCallId: string, conversationId: string, requestJson: unknown): Answer[] {
    const id = keyOf(conversationId, toolCallId);
    const entry = this.entries.get(id);
    if (!entry) {
      if ([...this.entries.values()].some((e) => e.question.toolCallId === toolCallId)) {
        throw new AnswerError('forbidden', `question "${toolCallId}" does not belong to conversation "${conversationId}"; the answer was refused and the question stays pending`);
      }
      const was = this.recent.get(id);
      if (was) throw new AnswerError('conflict', `question "${toolCallId}" is already settled (${describeOutcome(was)}); a later answer changes nothing`);
      throw new AnswerError('not_found', `no pending question with id "${toolCallId}" in conversation "${conversationId}"`);
    }
    const answers = parseAnswers(requestJson, entry.question.questions, entry.question.maxCustomLength);
    this.settle(id, { outcome: 'answered', answers });
    return answers;
  }

  /** Cancel the pending questions of one conversation. Returns how many were cancelled. */
  cancelConversation(conversationId: string, reason = 'the conversation was deleted'): number {
    const ids = [...this.entries.entries()].filter(([, e]) => e.question.conversationId === conversationId).map(([id]) => id);
    for (const id of ids) this.settle(id, { outcome: 'cancelled', answers: [], reason });
    return ids.length;
  }

  /** Cancel everything (plugin unload, shutdown). */
  cancelAll(reason: string): void {
    for (const id of [...this.entries.keys()]) this.settle(id, { outcome: 'cancelled', answers: [], reason });
  }

  /** The pending question sets, oldest first; only one conversation's when given. */
  list(conversationId?: string): PendingQuestion[] {
    return [...this.entries.values()]
      .filter((e) => conversationId === undefined || e.question.conversationId === conversationId)
      .map((e) => ({ ...e.question, questions: structuredClone(e.question.questions) }));
  }

  isPending(conversationId: string, toolCallId: string): boolean {
    return this.entries.has(keyOf(conversationId, toolCallId));
  }

  onAsked(listener: (q: PendingQuestion) => void): Disposable {
    this.askedListeners.add(listener);
    return { dispose: () => void this.askedListeners.delete(listener) };
  }

  onSettled(listener: (q: PendingQuestion, s: Settlement) => void): Disposable {
    this.settledListeners.add(listener);
    return { dispose: () => void this.settledListeners.delete(listener) };
  }

  private settle(id: string, settlement: Settlement): void {
    const entry = this.entries.get(id);
    if (!entry) return; // the first outcome already won
    this.entries.delete(id);
    this.recent.set(id, settlement.outcome);
    if (this.recent.size > RECENT_LIMIT) this.recent.delete(this.recent.keys().next().value!);
    for (const c of entry.cleanup) c();
    entry.resolve(settlement);
    for (const l of this.settledListeners) safely(() => l(entry.question, settlement));
  }
}

/**
 * Why the run's stop cancelled a question. Deleting a conversation stops its run before any
 * plugin hears of the delete (the conversationDeleted hook comes after the run ended), so the
 * stop is where a delete shows first: the contract's CancelledError says so in `details.reason`.
 */
function stopReason(signal: AbortSignal): string {
  const r: unknown = signal.reason;
  return r instanceof CancelledError && r.details?.reason === 'conversation_deleted' ? 'the conversation was deleted' : 'the run was stopped';
}

function keyOf(conversationId: string, toolCallId: string): string {
  return `${conversationId}\u0000${toolCallId}`;
}

export function describeOutcome(o: Outcome): string {
  return o === 'answered' ? 'answered' : o === 'cancelled' ? 'cancelled' : 'timed out';
}

function safely(fn: () => void) {
  try {
    fn();
  } catch {
    /* a listener's failure must not block settling */
  }
}
