/**
 * The hosted-search probe: whether a model accepts the Responses `web_search` tool. Nobody
 * publishes the list (and it changes), so the first request with search on finds out: a 400
 * naming the tool means "no", remembered per provider and model in memory and in
 * `$LIVEAGENT_HOME/openai-search-probe.json`, and later requests go without search. Deleting the
 * file (or a model entry) makes the next request ask again.
 */
import { z } from 'zod';
import type { Logger } from '../../plugin-api.js';
import { queueJsonWrite, readJsonFile } from './remembered-file.js';

const ProbeFileSchema = z.object({
  version: z.literal(1),
  models: z.record(z.string(), z.object({ webSearch: z.boolean(), reason: z.string().optional(), checkedAt: z.number() })),
});
type ProbeFile = z.infer<typeof ProbeFileSchema>;
type Answer = ProbeFile['models'][string];

export const SEARCH_PROBE_FILE = 'openai-search-probe.json';

/** A 400 whose message names the hosted search tool. */
export function isSearchRefusal(err: unknown): boolean {
  const e = err as { status?: unknown; message?: unknown; param?: unknown };
  return e?.status === 400 && /web_search/i.test(`${String(e.message ?? '')}`);
}

export class SearchProbe {
  private answers = new Map<string, Answer>();
  private loaded = false;
  private writing: Promise<void> = Promise.resolve();

  /** `file` omitted: remember in memory only. */
  constructor(private readonly file?: string, private readonly logger?: Logger) {}

  static keyOf(providerId: string, model: string): string {
    return `${providerId}:${model}`;
  }

  /** true / false once known, undefined before the first answer. */
  supported(providerId: string, model: string): boolean | undefined {
    this.load();
    return this.answers.get(SearchProbe.keyOf(providerId, model))?.webSearch;
  }

  refuse(providerId: string, model: string, reason: string): void {
    this.record(providerId, model, { webSearch: false, reason: reason.slice(0, 500), checkedAt: Date.now() });
  }

  accept(providerId: string, model: string): void {
    if (this.supported(providerId, model) === true) return;
    this.record(providerId, model, { webSearch: true, checkedAt: Date.now() });
  }

  /** Settles when pending writes are on disk (tests, shutdown). */
  flush(): Promise<void> {
    return this.writing;
  }

  private record(providerId: string, model: string, answer: Answer): void {
    this.load();
    this.answers.set(SearchProbe.keyOf(providerId, model), answer);
    if (!this.file) return;
    const file = this.file;
    const body: ProbeFile = { version: 1, models: Object.fromEntries(this.answers) };
    this.writing = queueJsonWrite(this.writing, file, body, this.logger);
  }

  private load(): void {
    if (this.loaded || !this.file) return;
    this.loaded = true;
    const data = readJsonFile(this.file, ProbeFileSchema, this.logger, 'probing hosted search again');
    if (!data) return;
    // Answers recorded in this process before the load win over the file's.
    for (const [k, v] of Object.entries(data.models)) if (!this.answers.has(k)) this.answers.set(k, v);
  }
}
