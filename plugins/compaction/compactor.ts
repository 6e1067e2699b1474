/**
 * Answers the kernel's `compaction` hook: estimate the request against the model's budget and
 * either report the budget or compact. Compacting summarizes what lies before the kept window
 * (through `runtime.complete`, the conversation's own model unless `compaction.model` says
 * otherwise) and, when that is not enough or the summary cannot be had, prunes old tool outputs.
 *
 * Loop guards: the kernel asks once per trigger; a compaction that could not get under the
 * threshold is not tried again until the context has grown by a twentieth of the window; a
 * failed summary falls back to pruning, and a failure leaves the history as it was.
 */
import type { Checkpoint, CompactionAnswer, CompactionRequest, ContextBudget, Logger, Message, RuntimeApi, Usage } from '../../plugin-api.js';
import { chooseBoundary, lastUserIndex, mergeLedger, pruneCandidates, recentFacts } from './plan.js';
import { budgetFor, type CompactionSettings, type ModelBudget, type ModelFactsLike } from './settings.js';
import { SUMMARY_SYSTEM, fitTranscript, repairPrompt, summaryPrompt, summaryProblems } from './summary.js';
import { MessageCounter, estimateRequest, loadTokenizer, messagesTokens, textTokens, tokenizerLoaded } from './tokens.js';

export interface CompactorDeps {
  runtime: RuntimeApi;
  logger: Logger;
  settings(): CompactionSettings;
  facts(provider: string, model: string): ModelFactsLike;
}

type Draft = Extract<CompactionAnswer, { checkpoint: unknown }>['checkpoint'];

const STALL_LIMIT = 1000;
/** Below this, what a summary would replace is about the size of the summary itself. */
const MIN_SUMMARIZED_TOKENS = 300;
/** Room the prompt around the transcript and the previous summary need in a summary request. */
const PROMPT_OVERHEAD = 1500;

export class Compactor {
  readonly counter = new MessageCounter();
  /** Conversations whose last compaction left them over the threshold, with the tokens it left. */
  private stalled = new Map<string, number>();

  constructor(private readonly d: CompactorDeps) {}

  async answer(req: CompactionRequest, conversationId: string): Promise<CompactionAnswer | undefined> {
    const s = this.d.settings();
    const budget = budgetFor(s, req.provider, req.model, this.d.facts(req.provider, req.model));
    const used = await this.estimate(req, budget);
    const report = (usedTokens: number): ContextBudget => {
      const b: ContextBudget = { usedTokens, contextWindow: budget.contextWindow, thresholdTokens: budget.thresholdTokens };
      // The reply may grow until the context would no longer hold it plus a small margin.
      const room = budget.contextWindow - usedTokens - Math.min(Math.floor(budget.reserveTokens / 4), Math.floor(budget.contextWindow / 50));
      if (usedTokens < budget.thresholdTokens && s.enabled !== false) b.replyChars = Math.max(0, room) * 4;
      return b;
    };
    if (!req.force) {
      if (s.enabled === false || used < budget.thresholdTokens) return { budget: report(used) };
      const stuckAt = this.stalled.get(conversationId);
      if (stuckAt !== undefined && used < stuckAt + budget.contextWindow / 20) return { budget: report(used) };
    } else if (s.enabled === false && req.trigger !== 'manual') {
      return { failed: 'automatic compaction is off (compaction.enabled is false)' };
    }
    // The provider's own count beats our estimate when it refused the prompt.
    const before = Math.max(used, overflowTokens(req.error?.message));
    const draft = await this.compact(req, budget, before, s);
    if ('skip' in draft) return { budget: report(used) };
    if ('failed' in draft) {
      // Do not try again on every request: wait until the context has grown.
      this.stall(conversationId, before);
      return { failed: draft.failed, budget: report(used) };
    }
    if (draft.tokensAfter >= budget.thresholdTokens) this.stall(conversationId, draft.tokensAfter);
    else this.stalled.delete(conversationId);
    return { checkpoint: draft, budget: report(draft.tokensAfter) };
  }

  private stall(conversationId: string, tokens: number): void {
    this.stalled.delete(conversationId);
    this.stalled.set(conversationId, tokens);
    if (this.stalled.size > STALL_LIMIT) this.stalled.delete(this.stalled.keys().next().value!);
  }

  private async estimate(req: CompactionRequest, budget: ModelBudget): Promise<number> {
    const checkpointAt = req.checkpoint?.createdAt ?? 0;
    if (!req.request) {
      if (!tokenizerLoaded()) await loadTokenizer();
      return messagesTokens(req.messages, this.counter);
    }
    let e = estimateRequest(req.request, this.counter, req.provider, checkpointAt);
    // Bytes bound tokens from above: only a request that might be over needs exact counting.
    if (!tokenizerLoaded() && (e.upperBound >= budget.thresholdTokens || req.force)) {
      await loadTokenizer();
      e = estimateRequest(req.request, this.counter, req.provider, checkpointAt);
    }
    return e.tokens;
  }

  /** Summarize (then prune if still over), or prune alone when there is nothing to summarize. */
  private async compact(req: CompactionRequest, budget: ModelBudget, before: number, s: CompactionSettings): Promise<Draft | { failed: string } | { skip: true }> {
    const window = req.messages;
    const manual = req.trigger === 'manual';
    const latest = Math.max(0, lastUserIndex(window));
    // "Compact now" summarizes all but the newest turn; automatic triggers keep the recent window.
    let at = chooseBoundary(window, this.counter, manual ? 0 : budget.keepRecentTokens, latest, false);
    // Forced and nothing outside the recent window: keep only the newest turn (or, in one long
    // agent turn, its latest rounds).
    if (at === 0 && req.force && !manual) at = chooseBoundary(window, this.counter, 0, latest, true);
    const pruned = new Set(req.checkpoint?.prunedToolCallIds ?? []);
    // A summary of a few hundred tokens does not pay for itself: prune instead, or do nothing.
    if (at === 0 || messagesTokens(window.slice(0, at), this.counter) < MIN_SUMMARIZED_TOKENS) {
      if (manual && pruneCandidates(window, this.counter, pruned).length === 0) return { skip: true };
      req.begin();
      return this.prune(req, budget, before, pruned, 'there is too little old history to summarize');
    }
    const covered = window.slice(0, at);
    const kept = window.slice(at);
    req.begin();
    const written = await this.summarize(req, covered, s);
    if ('failed' in written) {
      this.d.logger.warn(`summary failed (${written.failed}); pruning old tool outputs instead`);
      return this.prune(req, budget, before, pruned, written.failed);
    }
    const ledger = mergeLedger(req.checkpoint?.ledger, covered);
    const keptIds = new Set(kept.flatMap((m) => (m.role === 'tool' ? m.content.flatMap((b) => (b.type === 'tool_result' ? [b.toolCallId] : [])) : [])));
    const stillPruned = new Set([...pruned].filter((id) => keptIds.has(id)));
    const overhead = textTokens(written.text) + textTokens([...ledger.read, ...ledger.modified].join(', ')) + 80;
    let after = before - messagesTokens(covered, this.counter) - textTokens(req.checkpoint?.summary ?? '') + overhead;
    // Still near the threshold: cut old tool outputs of the kept window too, rather than summarize again.
    const target = Math.floor(budget.thresholdTokens * 0.8);
    if (after > target) for (const c of pruneCandidates(kept, this.counter, stillPruned)) {
      if (after <= target) break;
      stillPruned.add(c.toolCallId);
      after -= c.tokens - 30;
    }
    const draft: Draft = {
      kind: 'summary',
      summary: written.text,
      coveredMessageCount: covered.length,
      prunedToolCallIds: [...stillPruned],
      ledger,
      provider: written.provider,
      model: written.model,
      tokensBefore: before,
      tokensAfter: Math.max(0, after),
    };
    if (kept[0]) draft.firstKeptMessageId = kept[0].id;
    if (written.usage) draft.usage = written.usage;
    return draft;
  }

  private prune(req: CompactionRequest, budget: ModelBudget, before: number, already: Set<string>, why: string): Draft | { failed: string } {
    const target = Math.floor(budget.thresholdTokens * 0.8);
    const ids = new Set(already);
    let after = before;
    for (const c of pruneCandidates(req.messages, this.counter, already)) {
      if (after <= target && !req.force) break;
      ids.add(c.toolCallId);
      after -= c.tokens - 30;
      if (after <= target) break;
    }
    if (ids.size === already.size) return { failed: `${why}, and no old tool output is left to prune` };
    const draft: Draft = {
      kind: 'prune',
      summary: req.checkpoint?.summary ?? '',
      coveredMessageCount: 0,
      prunedToolCallIds: [...ids],
      ledger: req.checkpoint?.ledger ?? mergeLedger(undefined, []),
      tokensBefore: before,
      tokensAfter: Math.max(0, after),
    };
    if (req.messages[0]) draft.firstKeptMessageId = req.messages[0].id;
    return draft;
  }

  private async summarize(req: CompactionRequest, covered: Message[], s: CompactionSettings): Promise<{ text: string; provider: string; model: string; usage?: Usage } | { failed: string }> {
    const [provider, model] = s.model ? splitModel(s.model) : [req.provider, req.model];
    const window = budgetFor(s, provider, model, this.d.facts(provider, model)).contextWindow;
    // Small windows get a proportionally small summary and prompt allowance.
    const maxTokens = Math.min(s.summaryMaxTokens ?? 4096, Math.floor(window / 4));
    const room = window - maxTokens - Math.min(PROMPT_OVERHEAD, Math.floor(window / 8)) - textTokens(req.checkpoint?.summary ?? '');
    if (room < 200) return { failed: `the summary model's context window is too small to summarize anything` };
    const facts = recentFacts(covered);
    const prompt = summaryPrompt(req.checkpoint?.summary, fitTranscript(covered, s.toolOutputChars ?? 2000, room), facts);
    const ask: Message[] = [{ id: 'compaction-request', role: 'user', content: [{ type: 'text', text: prompt }], createdAt: Date.now() }];
    let usage: Usage | undefined;
    try {
      for (let attempt = 1; attempt <= 2; attempt++) {
        const r = await this.d.runtime.complete({ provider, model, system: [SUMMARY_SYSTEM], messages: ask, maxOutputTokens: maxTokens, signal: req.signal });
        if (r.usage) usage = sumUsage(usage, r.usage);
        if (r.message.stopReason === 'refusal') return { failed: 'the model refused to write the summary' };
        const text = r.text.trim();
        const problems = summaryProblems(text, facts);
        if (!problems.length) return { text, provider, model, ...(usage ? { usage } : {}) };
        this.d.logger.warn(`summary rejected (${problems.join('; ')})${attempt === 1 ? ', asking once more' : ''}`);
        if (attempt === 2) return { failed: `the summary was not usable: ${problems.join('; ')}` };
        ask.push(r.message, { id: 'compaction-repair', role: 'user', content: [{ type: 'text', text: repairPrompt(problems) }], createdAt: Date.now() });
      }
    } catch (err) {
      return { failed: `the summary request failed: ${err instanceof Error ? err.message : String(err)}` };
    }
    return { failed: 'no summary' };
  }
}

function sumUsage(a: Usage | undefined, b: Usage): Usage {
  if (!a) return { ...b };
  return {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    ...(a.cacheReadTokens || b.cacheReadTokens ? { cacheReadTokens: (a.cacheReadTokens ?? 0) + (b.cacheReadTokens ?? 0) } : {}),
    ...(a.cacheWriteTokens || b.cacheWriteTokens ? { cacheWriteTokens: (a.cacheWriteTokens ?? 0) + (b.cacheWriteTokens ?? 0) } : {}),
  };
}

function splitModel(spec: string): [string, string] {
  const i = spec.indexOf('/');
  return [spec.slice(0, i), spec.slice(i + 1)];
}

/** The prompt size an overflow error states ("prompt is too long: 214093 tokens > 200000", "resulted in 130412 tokens", "input token count (N)"). */
export function overflowTokens(message: string | undefined): number {
  if (!message) return 0;
  const m = /(\d[\d,]*)\s*tokens\s*>|resulted in (\d[\d,]*) tokens|token count \((\d[\d,]*)\)|request \((\d[\d,]*) tokens\)/i.exec(message);
  const n = m ? Number((m[1] ?? m[2] ?? m[3] ?? m[4])!.replace(/,/g, '')) : 0;
  return Number.isFinite(n) ? n : 0;
}

export type { Checkpoint };
