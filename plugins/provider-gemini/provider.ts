/**
 * `createGeminiProvider`: a Provider over @google/generative-ai 0.24.1, iterating the SDK's raw
 * `result.stream` (one parsed GenerateContentResponse per `data:` line). The SDK is imported on
 * the first stream. It has no retry logic, so the kernel's retry (only before any output) is the
 * only one.
 *
 * Three SDK traps handled here: `result.response` rejects whenever the stream fails, and nobody
 * else awaits it, so it is always given a catch (an unobserved rejection would crash the
 * process); it also holds every chunk until the stream ends, so the translator empties each
 * one once read (stream-events.ts `releaseChunks`); and returning from `result.stream` early
 * does not stop the download, so every request runs on our own AbortController, aborted when
 * we stop reading.
 *
 * Contract: `stream` never throws. Every failure (bad settings, no key, HTTP error, a broken or
 * incomplete stream, a blocked prompt or reply) is exactly one `error` event, then the end.
 */
import { lazyModule } from '../../lib/provider-shared/keys.js';
import { DEFAULT_RETRY_MAX_DELAY_MS } from '../../lib/provider-shared/retry-hints.js';
import { TranslatedStream } from '../../lib/provider-shared/translated-stream.js';
import type { GenerateContentRequest } from '@google/generative-ai';
import type { JsonObject, Logger, ModelInfo, Provider, ProviderEvent, ProviderRequest, ProviderStream, Settings } from '../../plugin-api.js';
import { DEFAULT_GEMINI_MODEL, GEMINI_MODELS } from './models.js';
import { buildGeminiRequest } from './request.js';
import { DEFAULT_BASE_URL, GEMINI_ID, applyOptions, parseRequestOptions, splitBaseUrl, type ConfigResult, type GeminiConfig } from './settings.js';
import { GeminiStreamTranslator } from './stream-events.js';

type Sdk = typeof import('@google/generative-ai');

/** The SDK module, imported once, on first use. */
export const loadGeminiSdk: () => Promise<Sdk> = lazyModule(() => import('@google/generative-ai'));

export interface GeminiProviderOptions {
  /** Provider id (default `gemini`). */
  id?: string;
  aliases?: string[];
  displayName?: string;
  defaultModel?: string;
  /** The model catalog (default: the Gemini catalog; a custom provider passes its own, possibly empty). */
  models?: ModelInfo[];
  /** Static configuration, used when `config` is not given (benchmarks and embedders). */
  apiKey?: string;
  /** Host root (default https://generativelanguage.googleapis.com); a trailing /v1beta sets the API version. */
  baseUrl?: string;
  thinkingBudget?: number;
  includeThoughts?: boolean;
  webSearch?: boolean;
  maxOutputTokens?: number;
  timeoutMs?: number;
  foreignThinking?: 'drop' | 'text';
  /** Live configuration, read at every stream and by `isConfigured` (the plugin passes one reading the settings store). */
  config?: (settings?: Settings) => ConfigResult;
  /** Hears, once each, about settings a request could not honour. */
  logger?: Logger;
  /**
   * The longest server retry hint (RetryInfo, Retry-After) a retry may honour (ms; default 60 s,
   * the kernel's default cap): a longer one fails with the time to try again. The plugin reads
   * `runtime.retryMaxDelayMs`.
   */
  retryMaxDelayMs?: () => number;
}

function staticConfig(o: GeminiProviderOptions): ConfigResult {
  const config: GeminiConfig = { ...splitBaseUrl(o.baseUrl ?? DEFAULT_BASE_URL), includeThoughts: true, webSearch: false, foreignThinking: 'drop' };
  if (o.apiKey) config.apiKey = o.apiKey;
  return { ok: true, config: applyOptions(config, o) };
}

export function createGeminiProvider(options: GeminiProviderOptions = {}): Provider {
  const id = options.id ?? GEMINI_ID;
  const models = options.models ?? GEMINI_MODELS;
  const resolve = options.config ?? (() => staticConfig(options));
  const retryMaxDelayMs = options.retryMaxDelayMs ?? (() => DEFAULT_RETRY_MAX_DELAY_MS);
  const noted = new Set<string>();
  const note = (message: string) => {
    if (noted.has(message)) return;
    noted.add(message);
    options.logger?.info(`provider "${id}": ${message}`);
  };

  /** Settings → body → the raw SDK stream; undefined when `t` already holds the error. */
  async function open(request: ProviderRequest, t: GeminiStreamTranslator, ctl: RequestControl): Promise<AsyncIterator<unknown> | undefined> {
    const resolved = resolve();
    if (!resolved.ok) return void t.error({ code: 'config', message: resolved.error, retryable: false });
    if (!resolved.config.apiKey && !resolved.config.keyless) {
      const where = id === GEMINI_ID ? 'set GEMINI_API_KEY, or providers.gemini.apiKey in settings' : `set apiKey or apiKeyEnv of custom provider "${id}" in settings`;
      return void t.error({ code: 'auth', message: `provider "${id}" has no API key: ${where}`, retryable: false });
    }
    const overrides = parseRequestOptions(id, request.options);
    if (!overrides.ok) return void t.error({ code: 'config', message: overrides.error, retryable: false });
    const cfg = applyOptions(resolved.config, overrides.value);
    const body = buildGeminiRequest(request, cfg, id, models, note);
    t.out.push({ type: 'wire_request', api: 'streamGenerateContent', body: body as unknown as JsonObject });
    const { GoogleGenerativeAI } = await loadGeminiSdk();
    // The key goes in the x-goog-api-key header (the SDK never puts it in the URL).
    const model = new GoogleGenerativeAI(cfg.apiKey ?? '').getGenerativeModel(
      { model: request.model },
      { baseUrl: cfg.baseUrl, ...(cfg.apiVersion ? { apiVersion: cfg.apiVersion } : {}) },
    );
    // Our own header timeout: the SDK's `timeout` leaves a timer running for its full length.
    const timer = cfg.timeoutMs ? setTimeout(() => ctl.timeout(), cfg.timeoutMs) : undefined;
    try {
      const result = await model.generateContentStream(body as unknown as GenerateContentRequest, { signal: ctl.signal });
      result.response.catch(() => undefined);
      return result.stream;
    } finally {
      if (timer) clearTimeout(timer);
    }
  }

  function stream(request: ProviderRequest, signal: AbortSignal): ProviderStream {
    const t = new GeminiStreamTranslator(id, true);
    const ctl = new RequestControl(signal);
    return new TranslatedStream(() => open(request, t, ctl), t, {
      end: () => t.end(ctl.callerAborted),
      fail: (err) => t.fail(err, ctl.callerAborted, ctl.timedOut),
      finish: () => ctl.finish(),
      retryMaxDelayMs,
    });
  }

  return {
    id,
    ...(options.aliases?.length ? { aliases: options.aliases } : {}),
    displayName: options.displayName ?? 'Gemini',
    defaultModel: options.defaultModel ?? DEFAULT_GEMINI_MODEL,
    ...(models.length ? { models } : {}),
    isConfigured(settings: Settings) {
      const r = resolve(settings);
      return r.ok && (!!r.config.apiKey || !!r.config.keyless);
    },
    stream,
    prepare: () => void loadGeminiSdk().catch(() => undefined),
  };
}

/** One request's abort: the caller's signal, our early stop, or our header timeout. */
class RequestControl {
  private readonly controller = new AbortController();
  readonly signal = this.controller.signal;
  timedOut = false;
  private readonly onAbort = () => this.controller.abort();

  constructor(private readonly outer: AbortSignal) {
    if (outer.aborted) this.controller.abort();
    else outer.addEventListener('abort', this.onAbort, { once: true });
  }

  get callerAborted(): boolean {
    return this.outer.aborted;
  }

  timeout(): void {
    this.timedOut = true;
    this.controller.abort();
  }

  /** Stop the download (if still running) and forget the caller's signal. */
  finish(): void {
    this.outer.removeEventListener('abort', this.onAbort);
    if (!this.signal.aborted) this.controller.abort();
  }
}

