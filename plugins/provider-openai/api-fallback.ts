/**
 * Which endpoints have no Responses API. codex speaks Responses at any base URL unless
 * `providers.codex.api` says otherwise; an endpoint that answers that it does not know the route
 * (vLLM, Ollama, llama.cpp, LM Studio before they grew /v1/responses, most proxies) gets one
 * fallback to Chat Completions, remembered per base URL in memory and in
 * `$LIVEAGENT_HOME/openai-api-fallback.json`, so later requests, and a restarted process, go
 * straight to Chat Completions. Deleting the file (or an entry) makes the next request try
 * Responses again, e.g. after upgrading the server.
 */
import { z } from 'zod';
import type { Logger } from '../../plugin-api.js';
import { queueJsonWrite, readJsonFile } from './remembered-file.js';

const EntrySchema = z.object({ api: z.literal('chat'), reason: z.string().max(1000), checkedAt: z.number() });
const FallbackFileSchema = z.object({ version: z.literal(1), baseUrls: z.record(z.string(), EntrySchema) });
type FallbackFile = z.infer<typeof FallbackFileSchema>;
type Entry = z.infer<typeof EntrySchema>;

export const API_FALLBACK_FILE = 'openai-api-fallback.json';
/** A machine talks to a handful of endpoints; the oldest answers go first past this. */
const MAX_ENTRIES = 200;

/**
 * Whether an SDK error (thrown before any output) says the endpoint has no `/responses` route.
 * 405 always does. A 404 does unless its body speaks of something the route exists to look up:
 * an unknown model (OpenAI's `model_not_found`, Ollama's `model 'x' not found`) or an unknown
 * stored response. The bodies servers send for an unknown route: OpenAI `Invalid URL (POST
 * /v1/responses)`, vLLM (FastAPI) `{"detail":"Not Found"}`, Ollama (gin) `404 page not found`,
 * llama.cpp `{"error":{"code":404,"message":"File Not Found","type":"not_found_error"}}`.
 */
export function isMissingResponsesRoute(err: unknown): boolean {
  const e = err as { status?: unknown; code?: unknown; param?: unknown; message?: unknown; error?: unknown };
  if (e?.status === 405) return true;
  if (e?.status !== 404) return false;
  const code = typeof e.code === 'string' ? e.code : '';
  if (code === 'model_not_found' || code === 'previous_response_not_found' || e.param === 'model' || e.param === 'previous_response_id') return false;
  const text = `${String(e.message ?? '')} ${safeJson(e.error)}`;
  return !/\bmodels?\b|response with id|previous[_ ]response/i.test(text);
}

/** LM Studio answers an unknown route with HTTP 200 and this JSON body (lmstudio-bug-tracker#618). */
export function isUnexpectedEndpointBody(text: string): boolean {
  return /^\s*\{\s*"error"\s*:\s*"Unexpected endpoint or method\./.test(text);
}

function safeJson(v: unknown): string {
  try {
    return v === undefined ? '' : JSON.stringify(v);
  } catch {
    return '';
  }
}

export class ApiFallbacks {
  private entries = new Map<string, Entry>();
  private loaded = false;
  private writing: Promise<void> = Promise.resolve();

  /** `file` omitted: remember in memory only. */
  constructor(private readonly file?: string, private readonly logger?: Logger) {}

  /** The endpoint is known to have no Responses API. */
  chatOnly(baseUrl: string): boolean {
    this.load();
    return this.entries.has(baseUrl);
  }

  /** Where answers are kept (for the warning), or undefined in memory only. */
  get path(): string | undefined {
    return this.file;
  }

  /** Record that `baseUrl` has no Responses API; false when it was known already. */
  record(baseUrl: string, reason: string): boolean {
    this.load();
    if (this.entries.has(baseUrl)) return false;
    this.entries.set(baseUrl, { api: 'chat', reason: reason.slice(0, 500), checkedAt: Date.now() });
    while (this.entries.size > MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value!);
    if (this.file) this.save(this.file);
    return true;
  }

  /** Settles when pending writes are on disk (tests, shutdown). */
  flush(): Promise<void> {
    return this.writing;
  }

  private save(file: string): void {
    const body: FallbackFile = { version: 1, baseUrls: Object.fromEntries(this.entries) };
    this.writing = queueJsonWrite(this.writing, file, body, this.logger);
  }

  private load(): void {
    if (this.loaded || !this.file) return;
    this.loaded = true;
    const data = readJsonFile(this.file, FallbackFileSchema, this.logger, 'trying the Responses API again');
    if (!data) return;
    // Oldest first, so the bound drops the stalest; answers from this process win over the file's.
    const sorted = Object.entries(data.baseUrls).sort((a, b) => a[1].checkedAt - b[1].checkedAt).slice(-MAX_ENTRIES);
    const mine = [...this.entries];
    this.entries = new Map(sorted);
    for (const [k, v] of mine) this.entries.set(k, v);
  }
}
