/**
 * What the composer's context meter shows: the tokens the conversation's context holds, the
 * model's window, and the cost of its replies where prices are known. The used figure comes from
 * the latest `context` event or compaction (whichever is newer), else from the last reply's usage
 * when it is newer than the latest checkpoint, else from that checkpoint.
 */
import type { Message, Usage } from '../../../plugin-api.js';
import type { ModelSummary, ProviderSummary } from '../../../lib/gateway-protocol/protocol.js';
import type { ConversationState } from './conversation-state.js';

export interface MeterView {
  usedTokens: number;
  contextWindow?: number;
  thresholdTokens?: number;
  /** 0-1 when the window is known. */
  fraction?: number;
  /** USD of the replies whose model has a price; undefined when none has. */
  cost?: number;
  /** Some replies had no price, so `cost` leaves them out. */
  costPartial: boolean;
  /** Older messages are not loaded: the cost counts the loaded replies only. */
  costLoadedOnly: boolean;
  source: 'context' | 'usage' | 'checkpoint';
}

/** The model's facts from providers.list (a dated id shares its family's). */
export function findModel(providers: ProviderSummary[] | null | undefined, provider: string | undefined, model: string | undefined): ModelSummary | undefined {
  if (!provider || !model) return undefined;
  const models = providers?.find((p) => p.id === provider)?.models ?? [];
  return models.find((m) => m.id === model) ?? models.find((m) => model.startsWith(`${m.id}-`));
}

/** Everything a request carried plus the reply: what the context holds after this round. */
export function usageTokens(u: Usage): number {
  return u.inputTokens + (u.cacheReadTokens ?? 0) + (u.cacheWriteTokens ?? 0) + u.outputTokens;
}

/** A reply's cost: the kernel's (`costUsd`, priced when it ran), else from today's prices (older replies). */
export function costOf(u: Usage, price: ModelSummary['price']): number | undefined {
  if (u.costUsd !== undefined) return u.costUsd;
  if (!price?.input || !price.output) return undefined;
  const cached = u.cacheReadTokens ?? 0;
  const written = u.cacheWriteTokens ?? 0;
  return (Math.max(0, u.inputTokens) * price.input + u.outputTokens * price.output + cached * (price.cacheRead ?? price.input) + written * (price.cacheWrite ?? price.input)) / 1_000_000;
}

function lastWithUsage(messages: Message[]): Message | undefined {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role === 'assistant' && m.usage) return m;
  }
  return undefined;
}

export function meterOf(s: ConversationState, providers: ProviderSummary[] | null | undefined, fallback: { provider?: string | null; model?: string | null } = {}): MeterView | null {
  const last = lastWithUsage(s.messages);
  const checkpoint = s.checkpoints.reduce<ConversationState['checkpoints'][number] | undefined>((a, c) => (!a || c.createdAt >= a.createdAt ? c : a), undefined);
  let used: number | undefined;
  let source: MeterView['source'] = 'context';
  if (s.context) used = s.context.usedTokens;
  else if (last?.usage && (!checkpoint || last.createdAt > checkpoint.createdAt)) {
    used = usageTokens(last.usage);
    source = 'usage';
  } else if (checkpoint) {
    used = checkpoint.tokensAfter;
    source = 'checkpoint';
  }
  if (used === undefined) return null;

  const provider = s.run?.provider ?? last?.provider ?? fallback.provider ?? undefined;
  const model = s.run?.model ?? last?.model ?? fallback.model ?? undefined;
  const contextWindow = s.context?.contextWindow ?? findModel(providers, provider, model)?.contextWindow;

  let cost: number | undefined;
  let costPartial = false;
  let loadedOnly = s.hasMore;
  if (s.spent && s.spent.rounds > 0) {
    // The server's sum covers every stored round, older pages and truncated replies included.
    cost = s.spent.costUsd;
    costPartial = s.spent.unpricedRounds > 0;
    loadedOnly = false;
  } else {
    for (const m of s.messages) {
      if (m.role !== 'assistant' || !m.usage) continue;
      const c = costOf(m.usage, findModel(providers, m.provider, m.model)?.price);
      if (c === undefined) costPartial = true;
      else cost = (cost ?? 0) + c;
    }
  }
  return {
    usedTokens: used,
    ...(contextWindow ? { contextWindow, fraction: Math.min(1, used / contextWindow) } : {}),
    ...(s.context?.thresholdTokens ? { thresholdTokens: s.context.thresholdTokens } : {}),
    ...(cost !== undefined ? { cost } : {}),
    costPartial: cost !== undefined && costPartial,
    // Older pages not loaded yet hold usage too: the sum is of the replies shown.
    costLoadedOnly: cost !== undefined && loadedOnly,
    source,
  };
}
