/**
 * The kernel's side of compaction: ask the `compaction` hook at a trigger, check what it
 * answers, store the checkpoint through `saveCheckpoint`, and publish `compaction` / `context`
 * events. How a summary is made is the tap's business; what the kernel guarantees is here:
 * a call and its result never split, the newest
 * user message always kept, and a failure (a throw, a `failed` answer, a store that refuses)
 * leaving the history exactly as it was.
 */
import type {
  Checkpoint,
  CompactionRequest,
  CompactionTrigger,
  ContextBudget,
  JsonObject,
  Logger,
  Message,
  ProviderErrorInfo,
  ProviderRequest,
  RequestContext,
} from '../plugin-api.js';
import type { SessionHooks } from './hooks.js';
import type { Session } from './sessions.js';
import type { EventInput } from './types.js';

export interface CompactionEnv {
  hooks: SessionHooks;
  session: Session;
  ctx: RequestContext;
  logger: Logger;
  emit(e: EventInput): void;
}

export interface CompactionAsk {
  trigger: CompactionTrigger;
  force: boolean;
  /** The active window; not changed here (a compacted window is returned). */
  window: Message[];
  request?: ProviderRequest;
  error?: ProviderErrorInfo;
}

export type CompactionStep =
  | { kind: 'none' }
  | { kind: 'budget'; budget: ContextBudget }
  | { kind: 'compacted'; checkpoint: Checkpoint; window: Message[]; budget?: ContextBudget }
  | { kind: 'failed'; reason: string; budget?: ContextBudget };

/**
 * Ask the hook once; on a checkpoint, store it and return the window it keeps. One at a time per
 * conversation holds by construction: a run asks only from its own loop, and a manual
 * compaction (runtime.compact) is refused while a run is active and makes new runs wait.
 */
export async function askCompaction(env: CompactionEnv, ask: CompactionAsk): Promise<CompactionStep> {
  const { hooks, session, ctx } = env;
  if (!hooks.compaction.isUsed()) return { kind: 'none' };
  let started = false;
  const begin = () => {
    if (started) return;
    started = true;
    env.emit({ type: 'compaction', payload: { phase: 'start', trigger: ask.trigger, round: ctx.round } });
  };
  const fail = (reason: string): CompactionStep => {
    env.emit({ type: 'compaction', payload: { phase: 'error', trigger: ask.trigger, round: ctx.round, error: reason } });
    return { kind: 'failed', reason };
  };
  const request: CompactionRequest = {
    trigger: ask.trigger,
    force: ask.force,
    messages: ask.window.slice(),
    ...(session.checkpoint ? { checkpoint: session.checkpoint } : {}),
    ...(ask.request ? { request: ask.request } : {}),
    ...(ask.error ? { error: ask.error } : {}),
    provider: ctx.provider.id,
    model: ctx.model,
    signal: ctx.signal,
    begin,
  };
  let answer;
  try {
    answer = await hooks.compaction.promise(request, ctx);
  } catch (err) {
    env.logger.error('compaction failed', err);
    return fail(err instanceof Error ? err.message : String(err));
  }
  if (!answer) return started ? fail('the compaction tap gave no answer') : { kind: 'none' };
  if ('failed' in answer) {
    const failed = fail(answer.failed) as Extract<CompactionStep, { kind: 'failed' }>;
    if (answer.budget) failed.budget = answer.budget;
    return failed;
  }
  if (!('checkpoint' in answer)) return started ? fail('the compaction tap gave no checkpoint') : { kind: 'budget', budget: answer.budget };
  begin();
  const checkpoint: Checkpoint = { ...answer.checkpoint, trigger: ask.trigger, createdAt: Date.now() };
  const kept = keptWindow(ask.window, checkpoint, ask.trigger);
  if (typeof kept === 'string') return fail(`the compaction tap answered an invalid checkpoint: ${kept}`);
  try {
    await hooks.saveCheckpoint.promise({ conversationId: session.conversationId, checkpoint, lastSeq: session.lastSeq + 1 });
  } catch (err) {
    env.logger.error('storing the checkpoint failed', err);
    return fail(`the checkpoint could not be stored: ${err instanceof Error ? err.message : String(err)}`);
  }
  session.adoptCheckpoint(checkpoint, kept);
  env.emit({ type: 'compaction', payload: endPayload(checkpoint, ctx.round) });
  const step: CompactionStep = { kind: 'compacted', checkpoint, window: kept };
  if (answer.budget) step.budget = answer.budget;
  return step;
}

/** The window a checkpoint keeps, or why the checkpoint is not acceptable. */
function keptWindow(window: Message[], c: Checkpoint, trigger: CompactionTrigger): Message[] | string {
  if (c.kind !== 'summary' && c.kind !== 'prune') return `kind must be "summary" or "prune"`;
  if (typeof c.summary !== 'string') return 'summary must be a string';
  if (c.kind === 'summary' && !c.summary.trim()) return 'a summary checkpoint needs a non-empty summary';
  if (!Array.isArray(c.prunedToolCallIds) || !c.ledger || !Array.isArray(c.ledger.read) || !Array.isArray(c.ledger.modified)) return 'prunedToolCallIds and ledger are required';
  let at = window.length;
  if (c.firstKeptMessageId !== undefined) {
    at = window.findIndex((m) => m.id === c.firstKeptMessageId);
    if (at < 0) return `firstKeptMessageId "${c.firstKeptMessageId}" is not in the active window`;
    if (window[at]!.role === 'tool') return 'firstKeptMessageId points at a tool result (a call and its result must stay together)';
  }
  // A run's new user message is what the next request answers: it must never be covered.
  if (trigger !== 'manual') {
    let lastUser = -1;
    for (let i = window.length - 1; i >= 0; i--) if (window[i]!.role === 'user') { lastUser = i; break; }
    if (lastUser >= 0 && at > lastUser) return 'the checkpoint covers the newest user message';
  }
  return window.slice(at);
}

function endPayload(c: Checkpoint, round: number): JsonObject {
  const p: JsonObject = {
    phase: 'end',
    trigger: c.trigger,
    round,
    kind: c.kind,
    tokensBefore: c.tokensBefore,
    tokensAfter: c.tokensAfter,
    coveredMessageCount: c.coveredMessageCount,
    summary: c.summary,
    createdAt: c.createdAt,
  };
  if (c.firstKeptMessageId) p.firstKeptMessageId = c.firstKeptMessageId;
  if (c.provider) p.provider = c.provider;
  if (c.model) p.model = c.model;
  return p;
}

export function contextPayload(budget: ContextBudget, round: number): JsonObject {
  const p: JsonObject = { round, usedTokens: budget.usedTokens, contextWindow: budget.contextWindow, thresholdTokens: budget.thresholdTokens };
  if (budget.replyChars !== undefined) p.replyChars = budget.replyChars;
  return p;
}
