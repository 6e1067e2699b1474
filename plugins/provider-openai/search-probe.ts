/**
 * The hosted-search probe: whether a model accepts hosted web search, per API. Responses offers
 * the `web_search` tool; Chat Completions takes `web_search_options` (only the search models,
 * e.g. gpt-4o-search-preview: https://platform.openai.com/docs/guides/tools-web-search?api-mode=chat).
 * Nobody publishes the list (and it changes), so the first request with search on finds out: a
 * 400 naming the tool / option means "no", remembered per provider, model and API in memory and
 * in `$LIVEAGENT_HOME/openai-search-probe.json`, and later requests go without search. Deleting
 * the file (or a model entry) makes the next request ask again. Keys: `<provider>:<model>` for
 * Responses (as before), `<provider>:chat:<model>` for Chat Completions.
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

/** The API a probe answer is about. */
export type SearchApi = 'responses' | 'chat';

/**
 * A 400 that refuses hosted search. Responses names the tool ("Hosted tool 'web_search' is not
 * supported with gpt-4.1-nano."). Chat Completions answers a model without search either
 * "Web search options not supported with this model." (cpbotha/obsidian-ai-chat-as-md#5) or,
 * for the gpt-5 family, "Unknown parameter: 'web_search_options'." with
 * `param: 'web_search_options'`, `code: 'unknown_parameter'` (pydantic/pydantic-ai#2822).
 */
export function isSearchRefusal(err: unknown): boolean {
  const e = err as { status?: unknown; message?: unknown; param?: unknown };
  if (e?.status !== 400) return false;
  return e.param === 'web_search_options' || /web[_ ]search/i.test(`${String(e.message ?? '')}`);
}

export class SearchProbe {
  private answers = new Map<string, Answer>();
  private loaded = false;
  private writing: Promise<void> = Promise.resolve();

  /** `file` omitted: remember in memory only. */
  constructor(private readonly file?: string, private readonly logger?: Logger) {}

  static keyOf(providerId: string, model: string, api: SearchApi = 'responses'): string {
    return api === 'chat' ? `${providerId}:chat:${model}` : `${providerId}:${model}`;
  }

  /** true / false once known, undefined before the first answer. */
  supported(providerId: string, model: string, api: SearchApi = 'responses'): boolean | undefined {
    this.load();
    return this.answers.get(SearchProbe.keyOf(providerId, model, api))?.webSearch;
  }

  refuse(providerId: string, model: string, reason: string, api: SearchApi = 'responses'): void {
    this.record(SearchProbe.keyOf(providerId, model, api), { webSearch: false, reason: reason.slice(0, 500), checkedAt: Date.now() });
  }

  accept(providerId: string, model: string, api: SearchApi = 'responses'): void {
    if (this.supported(providerId, model, api) === true) return;
    this.record(SearchProbe.keyOf(providerId, model, api), { webSearch: true, checkedAt: Date.now() });
  }

  /** Settles when pending writes are on disk (tests, shutdown). */
  flush(): Promise<void> {
    return this.writing;
  }

  private record(key: string, answer: Answer): void {
    this.load();
    this.answers.set(key, answer);
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
