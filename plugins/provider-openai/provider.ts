/**
 * The OpenAI-format provider: one factory for codex (Responses or Chat Completions) and for
 * custom `openai-chat` / `openai-responses` providers. The `openai` SDK is imported on the first
 * stream, never at load. The SDK's own retries are off (`maxRetries: 0`): the kernel retries
 * retryable errors before any output, honouring `retryAfterMs` up to `runtime.retryMaxDelayMs`
 * (a longer `retry-after` fails at once, saying when to try again).
 *
 * Contract kept here: `stream` never throws. Every failure, from settings to a socket reset,
 * ends the stream with exactly one `error` event, after whatever partial output was streamed.
 */
import type { JsonObject, Logger, ModelInfo, Provider, ProviderErrorInfo, ProviderEvent, ProviderRequest, Settings } from '../../plugin-api.js';
import { toProviderError } from '../../lib/provider-shared/errors.js';
import { capRetryHint, retryMaxDelayFrom } from '../../lib/provider-shared/retry-hints.js';
import { classifyStreamError } from '../../lib/provider-shared/stream-errors.js';
import { ApiFallbacks, isMissingResponsesRoute, isUnexpectedEndpointBody } from './api-fallback.js';
import { ResponseChains } from './chains.js';
import { buildChatBody } from './chat-request.js';
import { ChatTranslator } from './chat-stream.js';
import { resolveConfig, type OpenAISettings, type ResolvedConfig } from './config.js';
import { DEFAULT_OPENAI_MODEL, OPENAI_MODELS, isReasoningModel } from './models.js';
import { buildResponsesBody } from './responses-request.js';
import { ResponsesTranslator } from './responses-stream.js';
import { SearchProbe, isSearchRefusal } from './search-probe.js';

type OpenAIModule = typeof import('openai');
type OpenAIClient = InstanceType<OpenAIModule['OpenAI']>;

let sdkPromise: Promise<OpenAIModule> | undefined;
/** The SDK, imported once on first use (it costs ~100 ms at start-up otherwise). */
export function loadOpenAISdk(): Promise<OpenAIModule> {
  sdkPromise ??= import('openai').catch((err) => {
    sdkPromise = undefined;
    throw err;
  });
  return sdkPromise;
}

export interface OpenAIProviderOptions extends OpenAISettings {
  /** Provider id (default `codex`). */
  id?: string;
  aliases?: string[];
  displayName?: string;
  models?: ModelInfo[];
  /** Live settings; `providers.<id>` is re-read on every request. Omitted: only these options count. */
  settings?: () => Settings;
  /** Environment to read (default `process.env`). */
  env?: NodeJS.ProcessEnv;
  /** Variables for the key and endpoint; default OPENAI_API_KEY / OPENAI_BASE_URL, `null` for none. */
  envNames?: { key: string; baseUrl: string } | null;
  /** Allow running without a key (a placeholder is sent): custom OpenAI-compatible endpoints. */
  keyOptional?: boolean;
  /** Shared hosted-search answers (default: a fresh in-memory probe). */
  probe?: SearchProbe;
  /** Shared storage chains (default: fresh). */
  chains?: ResponseChains;
  /** Shared answers on which endpoints lack the Responses API (default: a fresh in-memory one). */
  fallbacks?: ApiFallbacks;
  logger?: Logger;
  /** A configuration problem found at registration (a bad custom provider entry): every request fails with it. */
  configError?: string;
}

export type OpenAIProvider = Provider & {
  /** Resolve the effective configuration for a request (errors name provider and field). */
  config(options?: ProviderRequest['options']): { ok: true; config: ResolvedConfig } | { ok: false; error: string };
  readonly probe: SearchProbe;
  readonly chains: ResponseChains;
  readonly fallbacks: ApiFallbacks;
};

const OPENAI_ENV = { key: 'OPENAI_API_KEY', baseUrl: 'OPENAI_BASE_URL' };

export function createOpenAIProvider(options: OpenAIProviderOptions = {}): OpenAIProvider {
  const { id = 'codex', aliases, displayName, models, settings, env = process.env, envNames, keyOptional = false, logger } = options;
  const base: OpenAISettings = pickSettings(options);
  const catalog = models ?? (id === 'codex' ? OPENAI_MODELS : []);
  const probe = options.probe ?? new SearchProbe();
  const chains = options.chains ?? new ResponseChains();
  const fallbacks = options.fallbacks ?? new ApiFallbacks();
  const clients = new Map<string, OpenAIClient>();
  const src = (s: Settings | undefined) => ({
    id,
    base,
    settings: s,
    env,
    ...(envNames !== null ? { envNames: envNames ?? OPENAI_ENV } : {}),
    keyOptional,
  });
  // A retry-after longer than the kernel's cap on waits fails now, saying when to try again.
  const errorEvent = (sdk: OpenAIModule, err: unknown, signal: AbortSignal, partial: boolean): ProviderEvent => ({
    type: 'error',
    error: capRetryHint(mapError(sdk, err, signal, partial), retryMaxDelayFrom(settings?.().runtime)),
  });
  const config = (opts: ProviderRequest['options'] = {}) =>
    options.configError ? ({ ok: false, error: options.configError } as const) : resolveConfig(src(settings?.()), opts);

  async function clientFor(cfg: ResolvedConfig): Promise<OpenAIClient> {
    const key = `${cfg.baseUrl}\n${cfg.apiKey}\n${cfg.timeoutMs ?? ''}`;
    const cached = clients.get(key);
    if (cached) return cached;
    const sdk = await loadOpenAISdk();
    const client = new sdk.OpenAI({
      apiKey: cfg.apiKey!,
      baseURL: cfg.baseUrl,
      maxRetries: 0,
      ...(cfg.timeoutMs ? { timeout: cfg.timeoutMs } : {}),
      // Never send OPENAI_ORG_ID / OPENAI_PROJECT_ID to somebody else's endpoint.
      ...(cfg.official ? {} : { organization: null, project: null }),
      // Our error events carry what the SDK would log (e.g. the malformed line).
      logLevel: 'off',
    });
    if (clients.size > 16) clients.clear();
    clients.set(key, client);
    return client;
  }

  const provider: OpenAIProvider = {
    id,
    ...(aliases?.length ? { aliases } : {}),
    displayName: displayName ?? (id === 'codex' ? 'OpenAI' : id),
    defaultModel: base.defaultModel ?? catalog[0]?.id ?? DEFAULT_OPENAI_MODEL,
    models: catalog,
    probe,
    chains,
    fallbacks,
    config,
    isConfigured(s: Settings): boolean {
      if (options.configError) return false;
      const r = resolveConfig(src(s));
      return r.ok && !!r.config.apiKey;
    },
    stream(request, signal) {
      return streamRound(request, signal);
    },
    prepare: () => void loadOpenAISdk().catch(() => undefined),
  };

  async function* streamRound(request: ProviderRequest, signal: AbortSignal): AsyncGenerator<ProviderEvent> {
    const r = config(request.options);
    if (!r.ok) {
      yield { type: 'error', error: { code: 'config', retryable: false, message: r.error } };
      return;
    }
    const cfg = r.config;
    if (!cfg.apiKey) {
      yield { type: 'error', error: { code: 'auth', retryable: false, message: `no API key for provider "${id}": set OPENAI_API_KEY, or providers.${id}.apiKey / apiKeyEnv in settings` } };
      return;
    }
    let sdk: OpenAIModule;
    let client: OpenAIClient;
    try {
      sdk = await loadOpenAISdk();
      client = await clientFor(cfg);
    } catch (err) {
      yield { type: 'error', error: { code: 'dependency', retryable: false, message: `cannot load the openai SDK: ${(err as Error).message}` } };
      return;
    }
    const reasoning = isReasoningModel(request.model, catalog);
    try {
      // api unset: Responses, unless this endpoint already said it has none.
      const chat = cfg.api === 'chat' || (!cfg.apiForced && !cfg.official && fallbacks.chatOnly(cfg.baseUrl));
      if (chat) {
        yield* streamChat(client, sdk, request, cfg, reasoning, signal);
        return;
      }
      const missing = yield* streamResponses(client, sdk, request, cfg, reasoning, signal);
      if (missing === undefined) return;
      if (fallbacks.record(cfg.baseUrl, missing)) {
        const where = fallbacks.path ? ` (remembered in ${fallbacks.path})` : '';
        logger?.warn(
          `${cfg.baseUrl} has no Responses API (${missing}); provider "${id}" uses Chat Completions there from now on${where}. Set providers.${id}.api to "chat" to skip this probe, or "responses" to force the Responses API`,
          { provider: id, baseUrl: cfg.baseUrl },
        );
        yield { type: 'notice', kind: 'api_fallback', message: `${cfg.baseUrl} has no Responses API: using Chat Completions there from now on`, details: { baseUrl: cfg.baseUrl } };
      }
      yield* streamChat(client, sdk, request, cfg, reasoning, signal);
    } catch (err) {
      // A bug of ours (SDK failures are mapped where they happen) must still not escape.
      yield { type: 'error', error: { code: 'internal', retryable: false, message: `provider "${id}" failed: ${(err as Error)?.message ?? String(err)}` } };
    }
  }

  /**
   * Returns (without yielding anything) why the endpoint seems to have no Responses API, when
   * `api` is unset and the very first answer says so; the caller then falls back to Chat.
   */
  async function* streamResponses(client: OpenAIClient, sdk: OpenAIModule, request: ProviderRequest, cfg: ResolvedConfig, reasoning: boolean, signal: AbortSignal): AsyncGenerator<ProviderEvent, string | undefined> {
    const probing = !cfg.apiForced && !cfg.official;
    const model = request.model;
    const conv = request.conversationId;
    // A lean side request neither searches nor joins (or starts) the conversation's stored chain.
    const store = cfg.store && !request.lean;
    let search = cfg.webSearch && !request.lean && probe.supported(id, model) !== false;
    let continuation = store ? await chains.continuation(conv, id, model, request.messages) : undefined;
    // At most one retry for each fallback: without hosted search, and without the stored chain.
    for (;;) {
      const body = buildResponsesBody(request, { providerId: id, config: cfg, reasoning, search, ...(continuation ? { continuation } : {}) });
      yield { type: 'wire_request', api: 'responses', body: body as JsonObject };
      let stream: AsyncIterable<unknown>;
      try {
        const { data, response } = await (client.responses.create(body as never, { signal }) as unknown as { withResponse(): Promise<{ data: AsyncIterable<unknown>; response: Response }> }).withResponse();
        stream = data;
        if (probing && /json/i.test(response.headers.get('content-type') ?? '')) {
          // JSON where a stream was asked for: LM Studio's 200 for an unknown route, or a broken proxy (left to the translator).
          const text = await response.clone().text().catch(() => '');
          if (isUnexpectedEndpointBody(text)) {
            (data as { controller?: AbortController }).controller?.abort();
            return `HTTP ${response.status}: ${text.trim().slice(0, 200)}`;
          }
        }
      } catch (err) {
        if (probing && !continuation && !signal.aborted && isMissingResponsesRoute(err)) return (err as Error).message.slice(0, 300);
        if (search && isSearchRefusal(err)) {
          const reason = (err as Error).message;
          logger?.info(`model "${model}" refused hosted web search; continuing without it`, { provider: id, reason });
          probe.refuse(id, model, reason);
          search = false;
          continue;
        }
        // The server forgot the stored response (expired, another account, a restarted proxy): send everything once.
        if (continuation && ((err as { code?: unknown }).code === 'previous_response_not_found' || (err as { status?: unknown }).status === 404)) {
          chains.forget(conv);
          continuation = undefined;
          continue;
        }
        yield errorEvent(sdk, err, signal, false);
        return undefined;
      }
      if (search) probe.accept(id, model);
      const t = new ResponsesTranslator(id);
      const out = t.out;
      try {
        for await (const ev of stream) {
          t.handle(ev);
          if (out.length === 1) yield out[0]!;
          else for (const e of out) yield e;
          out.length = 0;
          if (t.terminal) break;
        }
      } catch (err) {
        for (const e of out) yield e;
        yield errorEvent(sdk, err, signal, t.hasOutput);
        return;
      }
      if (!t.terminal && signal.aborted) {
        yield abortedEvent();
        return;
      }
      t.endedEarly();
      for (const e of out) yield e;
      if (store && t.completed && t.responseId) chains.remember(conv, id, t.responseId, model, request.messages);
      else if (store) chains.forget(conv);
      return;
    }
  }

  async function* streamChat(client: OpenAIClient, sdk: OpenAIModule, request: ProviderRequest, cfg: ResolvedConfig, reasoning: boolean, signal: AbortSignal): AsyncGenerator<ProviderEvent> {
    const model = request.model;
    // Chat Completions search is `web_search_options`, which only the search models take: the probe decides, per model.
    let search = cfg.webSearch && !request.lean && probe.supported(id, model, 'chat') !== false;
    let stream: AsyncIterable<unknown>;
    for (;;) {
      const body = buildChatBody(request, { providerId: id, config: cfg, reasoning, search });
      yield { type: 'wire_request', api: 'chat.completions', body: body as JsonObject };
      try {
        stream = (await client.chat.completions.create(body as never, { signal })) as unknown as AsyncIterable<unknown>;
      } catch (err) {
        // At most one retry: the same round without search, remembered for the model.
        if (search && !signal.aborted && isSearchRefusal(err)) {
          const reason = (err as Error).message;
          logger?.info(`model "${model}" refused web_search_options on Chat Completions; continuing without search`, { provider: id, reason });
          probe.refuse(id, model, reason, 'chat');
          search = false;
          continue;
        }
        yield errorEvent(sdk, err, signal, false);
        return;
      }
      break;
    }
    if (search) probe.accept(id, model, 'chat');
    const t = new ChatTranslator(id);
    const out = t.out;
    try {
      for await (const chunk of stream) {
        t.handle(chunk);
        if (out.length === 0) continue;
        if (out.length === 1) yield out[0]!;
        else for (const e of out) yield e;
        out.length = 0;
      }
    } catch (err) {
      for (const e of out) yield e;
      yield errorEvent(sdk, err, signal, t.hasOutput);
      return;
    }
    if (signal.aborted) {
      yield abortedEvent();
      return;
    }
    t.end();
    for (const e of out) yield e;
  }

  return provider;
}

function pickSettings(o: OpenAIProviderOptions): OpenAISettings {
  const keys = ['apiKey', 'apiKeyEnv', 'baseUrl', 'defaultModel', 'api', 'store', 'webSearch', 'reasoningEffort', 'reasoningSummary', 'maxOutputTokens', 'timeoutMs', 'foreignThinking'] as const;
  const out: Record<string, unknown> = {};
  for (const k of keys) if (o[k] !== undefined) out[k] = o[k];
  return out as OpenAISettings;
}

function abortedEvent(): ProviderEvent {
  return { type: 'error', error: { code: 'aborted', retryable: false, message: 'the request was aborted' } };
}

export function mapError(sdk: OpenAIModule, err: unknown, signal: AbortSignal, partial: boolean): ProviderErrorInfo {
  if (signal.aborted || err instanceof sdk.APIUserAbortError) return { code: 'aborted', retryable: false, message: 'the request was aborted' };
  if (err instanceof sdk.APIConnectionTimeoutError) return { code: 'timeout', retryable: true, message: 'the provider did not answer in time' };
  if (err instanceof sdk.APIConnectionError) {
    const cause = (err as { cause?: { message?: string; cause?: { code?: string } } }).cause;
    const detail = [cause?.message, cause?.cause?.code].filter(Boolean).join(', ');
    return { code: 'network', retryable: true, message: `cannot reach the provider${detail ? ` (${detail})` : ''}` };
  }
  if (err instanceof sdk.APIError && err.status === undefined) {
    // An `error` payload inside the stream: classified by its code / type.
    const e = err as { code?: string | null; type?: string | null; message: string };
    return classifyStreamError(e.code || e.type, e.message);
  }
  return toProviderError(err, partial);
}
