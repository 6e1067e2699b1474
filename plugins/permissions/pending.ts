/**
 * The approvals waiting for a person, keyed by toolCallId within its conversation. The deadline
 * is stamped once, when the entry is made; the `tool_approval` event, the snapshot and the timer
 * all carry that one value. Exactly one outcome settles an entry (a decision, the deadline, a
 * stop); whatever comes after finds it settled and changes nothing.
 */
import type { Disposable } from '../../plugin-api.js';
import type { ApprovalRequest, Decision, Outcome, Settlement } from './events.js';

/** Why a decision was refused; `code` becomes the gateway's reply code. */
export class ApprovalError extends Error {
  constructor(
    readonly code: 'bad_request' | 'not_found' | 'conflict' | 'forbidden',
    message: string,
  ) {
    super(message);
    this.name = 'ApprovalError';
  }
}

interface Entry {
  request: ApprovalRequest;
  resolve(s: Settlement): void;
  cleanup: Array<() => void>;
}

/** Settled ids remembered, so a late decision hears "already settled" rather than "unknown". */
const RECENT_LIMIT = 256;

export class PendingApprovals {
  private readonly entries = new Map<string, Entry>();
  private readonly recent = new Map<string, Outcome>();
  private readonly askedListeners = new Set<(r: ApprovalRequest) => void>();
  private readonly settledListeners = new Set<(r: ApprovalRequest, s: Settlement) => void>();

  /**
   * Register an approval and return the promise of its settlement. The entry exists before the
   * listeners hear of it, so a decision sent the moment the event is out always finds it.
   */
  ask(request: ApprovalRequest, signal: AbortSignal): Promise<Settlement> {
    const id = keyOf(request.conversationId, request.toolCallId);
    if (this.entries.has(id)) throw new Error(`approval "${request.toolCallId}" is already pending`);
    let resolve!: (s: Settlement) => void;
    const promise = new Promise<Settlement>((r) => (resolve = r));
    const entry: Entry = { request, resolve, cleanup: [] };
    this.entries.set(id, entry);
    // Kept referenced: in the CLI this timer may be the only thing keeping the process alive.
    const timer = setTimeout(() => this.settle(id, { outcome: 'timedOut', approved: false }), Math.max(0, request.deadlineAt - Date.now()));
    entry.cleanup.push(() => clearTimeout(timer));
    const onAbort = () => this.settle(id, { outcome: 'cancelled', approved: false, reason: 'the run was stopped' });
    if (signal.aborted) onAbort();
    else {
      signal.addEventListener('abort', onAbort, { once: true });
      entry.cleanup.push(() => signal.removeEventListener('abort', onAbort));
    }
    if (this.entries.has(id)) for (const l of this.askedListeners) safely(() => l(request));
    return promise;
  }

  /** Settle with a person's decision. Throws ApprovalError when refused; the entry then stays pending. */
  decide(toolCallId: string, conversationId: string, decision: Decision): Settlement {
    const id = keyOf(conversationId, toolCallId);
    const entry = this.entries.get(id);
    if (!entry) {
      if ([...this.entries.values()].some((e) => e.request.toolCallId === toolCallId)) {
        throw new ApprovalError('forbidden', `approval "${toolCallId}" does not belong to conversation "${conversationId}"; the decision was refused and the approval stays pending`);
      }
      const was = this.recent.get(id);
      if (was) throw new ApprovalError('conflict', `approval "${toolCallId}" is already settled (${describeOutcome(was)}); a later decision changes nothing`);
      throw new ApprovalError('not_found', `no pending approval with id "${toolCallId}" in conversation "${conversationId}"`);
    }
    const s: Settlement = { outcome: decision === 'deny' ? 'denied' : 'approved', approved: decision !== 'deny', decision };
    this.settle(id, s);
    return s;
  }

  /** Cancel (deny) the pending approvals of one conversation. Returns how many. */
  cancelConversation(conversationId: string, reason: string): number {
    const ids = [...this.entries.entries()].filter(([, e]) => e.request.conversationId === conversationId).map(([id]) => id);
    for (const id of ids) this.settle(id, { outcome: 'cancelled', approved: false, reason });
    return ids.length;
  }

  cancelAll(reason: string): void {
    for (const id of [...this.entries.keys()]) this.settle(id, { outcome: 'cancelled', approved: false, reason });
  }

  /** The pending approvals, oldest first; one conversation's when given. */
  list(conversationId?: string): ApprovalRequest[] {
    return [...this.entries.values()].filter((e) => conversationId === undefined || e.request.conversationId === conversationId).map((e) => structuredClone(e.request));
  }

  isPending(conversationId: string, toolCallId: string): boolean {
    return this.entries.has(keyOf(conversationId, toolCallId));
  }

  onAsked(listener: (r: ApprovalRequest) => void): Disposable {
    this.askedListeners.add(listener);
    return { dispose: () => void this.askedListeners.delete(listener) };
  }

  onSettled(listener: (r: ApprovalRequest, s: Settlement) => void): Disposable {
    this.settledListeners.add(listener);
    return { dispose: () => void this.settledListeners.delete(listener) };
  }

  private settle(id: string, s: Settlement): void {
    const entry = this.entries.get(id);
    if (!entry) return; // the first outcome already won
    this.entries.delete(id);
    this.recent.set(id, s.outcome);
    if (this.recent.size > RECENT_LIMIT) this.recent.delete(this.recent.keys().next().value!);
    for (const c of entry.cleanup) c();
    entry.resolve(s);
    for (const l of this.settledListeners) safely(() => l(entry.request, s));
  }
}

function keyOf(conversationId: string, toolCallId: string): string {
  return `${conversationId}\u0000${toolCallId}`;
}

export function describeOutcome(o: Outcome): string {
  return o === 'approved' ? 'approved' : o === 'denied' ? 'denied' : o === 'timedOut' ? 'timed out, so denied' : 'cancelled, so denied';
}

function safely(fn: () => void): void {
  try {
    fn();
  } catch {
    /* a listener's failure must not block settling */
  }
}
