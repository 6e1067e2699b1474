/**
 * Names a conversation after its first completed turn: asks a small model for a title from the
 * first exchange, keeps it if it is one (clean.ts), else falls back to the first user text, and
 * stores it with `history.setTitle`, which never replaces a title the user gave.
 */
import type { Logger, ModelInfo, RunResult, RuntimeApi, ServiceMap, SessionInfo } from '../../plugin-api.js';
import { cleanTitle, fallbackTitle } from './clean.js';
import { firstExchange, LEAD_TEXT, SYSTEM_TEXT, titleRequest, type Exchange } from './prompt.js';
import { DEFAULT_MAX_OUTPUT_TOKENS, DEFAULT_TIMEOUT_MS, type TitleSettings } from './settings.js';

/** The first messages read to find the first exchange (a user message, tool rounds, the reply). */
const HEAD_MESSAGES = 8;

/** The subset of the model catalog read here (plugins/model-catalog). */
export interface CatalogLike {
  models(providerId: string): ModelInfo[];
}

export interface TitlerDeps {
  runtime: Pick<RuntimeApi, 'complete' | 'provider'>;
  history(): ServiceMap['history'] | undefined;
  catalog(): CatalogLike | undefined;
  settings(): TitleSettings;
  logger: Logger;
  reportFailure(message: string): void;
}

/** Who writes the title: a provider and a model (undefined: the provider's default). */
interface Writer {
  provider: string;
  model?: string;
}

export class Titler {
  /** Conversations being titled now: a second run ending meanwhile does not ask again. */
  private readonly busy = new Set<string>();
  private readonly warned = new Set<string>();

  constructor(private readonly deps: TitlerDeps) {}

  async onTurnEnd(result: RunResult, info: SessionInfo): Promise<void> {
    const s = this.deps.settings();
    if (s.enabled === false || result.status !== 'completed') return;
    const history = this.deps.history();
    if (!history) return;
    const id = result.conversationId;
    if (this.busy.has(id)) return;
    this.busy.add(id);
    try {
      // Ordinals start at 1: the first page of the conversation, read through the index.
      const head = await history.getConversation(id, { limit: HEAD_MESSAGES, before: HEAD_MESSAGES + 1 });
      if (!head || head.title) return;
      const exchange = firstExchange(head.messages);
      if (!exchange) return;
      const conversation = info.run ? { provider: info.run.provider, model: info.run.model } : head.provider ? { provider: head.provider, model: head.model ?? undefined } : undefined;
      const title = (conversation ? await this.ask(exchange, conversation, s) : undefined) ?? fallbackTitle(exchange.user);
      if (!title) return;
      const stored = await history.setTitle(id, title);
      this.deps.logger.debug(stored ? `titled ${id}: ${title}` : `${id} was named meanwhile; the generated title was not stored`);
    } finally {
      this.busy.delete(id);
    }
  }

  /** The model's title, or undefined (no answer in time, a failure, or an answer that is not a title). */
  private async ask(exchange: Exchange, conversation: { provider: string; model?: string }, s: TitleSettings): Promise<string | undefined> {
    const { system, messages } = titleRequest(exchange);
    const writers = this.writers(conversation, s);
    for (const [i, w] of writers.entries()) {
      try {
        const reply = await this.deps.runtime.complete({
          provider: w.provider,
          ...(w.model ? { model: w.model } : {}),
          system,
          messages,
          maxOutputTokens: s.maxOutputTokens ?? DEFAULT_MAX_OUTPUT_TOKENS,
          // No reasoning, search, cache writes or server-side storage for a five-word answer.
          lean: true,
          signal: AbortSignal.timeout(s.timeoutMs ?? DEFAULT_TIMEOUT_MS),
        });
        const title = cleanTitle(reply.text, [SYSTEM_TEXT, LEAD_TEXT]);
        if (!title) this.deps.logger.debug(`not a title, using the first user text instead: ${JSON.stringify(reply.text.slice(0, 200))}`);
        return title;
      } catch (err) {
        const e = err as { code?: string; message?: string };
        const next = writers[i + 1];
        // A catalog's small model may not exist behind a compatible endpoint: the conversation's own model does.
        if (e.code === 'provider' && next) {
          this.deps.logger.debug(`title by ${w.provider}/${w.model ?? 'default'} failed (${e.message}); trying ${next.provider}/${next.model ?? 'default'}`);
          continue;
        }
        this.deps.logger.warn(`title request failed, using the first user text instead: ${e.message ?? String(err)}`);
        return undefined;
      }
    }
    return undefined;
  }

  /** The writer settings ask for, else the provider's small model, then the conversation's own model. */
  private writers(conversation: { provider: string; model?: string }, s: TitleSettings): Writer[] {
    let provider = conversation.provider;
    if (s.provider) {
      const p = this.deps.runtime.provider(s.provider);
      if (p) provider = p.id;
      else if (!this.warned.has(s.provider)) {
        this.warned.add(s.provider);
        this.deps.reportFailure(`settings title.provider: unknown provider "${s.provider}"; titles use the conversation's provider`);
      }
    }
    if (s.model) return [{ provider, model: s.model }];
    const own: Writer = provider === conversation.provider && conversation.model ? { provider, model: conversation.model } : { provider };
    const small = smallModel(this.deps.catalog()?.models(provider) ?? [], own.model);
    return small && small !== own.model ? [{ provider, model: small }, own] : [own];
  }
}

/**
 * The catalog's cheapest model of a provider (by output price, then input price), unless the
 * current model costs no more. Undefined when the catalog has no prices for the provider.
 */
export function smallModel(models: ModelInfo[], current: string | undefined): string | undefined {
  const priced = models.filter((m) => typeof m.price?.output === 'number');
  if (priced.length === 0) return undefined;
  const cost = (m: ModelInfo) => [m.price!.output!, m.price!.input ?? Infinity] as const;
  const cheapest = priced.reduce((a, b) => {
    const [ao, ai] = cost(a);
    const [bo, bi] = cost(b);
    return bo < ao || (bo === ao && bi < ai) ? b : a;
  });
  const mine = current ? priced.find((m) => m.id === current || current.startsWith(`${m.id}-`)) : undefined;
  if (mine && cost(mine)[0] <= cost(cheapest)[0]) return current;
  return cheapest.id;
}
