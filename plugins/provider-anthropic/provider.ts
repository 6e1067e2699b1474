/**
 * `createAnthropicProvider`: a Provider over the official SDK's raw stream
 * (`messages.create({stream: true})`, not the accumulating `.stream()` helper). The SDK is
 * imported on the first stream (it costs ~250 ms), the client is built once per key/endpoint,
 * and it never retries (`maxRetries: 0`): the kernel retries, only before any output.
 *
 * Contract: `stream` never throws. Every failure (bad settings, no key, HTTP error, a broken or
 * incomplete stream) is exactly one `error` event, after which the stream ends.
 */
import { lazyModule } from '../../lib/provider-shared/keys.js';
import { DEFAULT_RETRY_MAX_DELAY_MS } from '../../lib/provider-shared/retry-hints.js';
import { TranslatedStream } from '../../lib/provider-shared/translated-stream.js';
import type Anthropic from '@anthropic-ai/sdk';
import type { JsonObject, Logger, ModelInfo, Provider, ProviderEvent, ProviderRequest, ProviderStream, Settings } from '../../plugin-api.js';
import { CLAUDE_MODELS, DEFAULT_MODEL } from './models.js';
import { buildAnthropicRequest } from './request.js';
import { DEFAULT_BASE_URL, DEFAULT_MAX_PAUSE_CONTINUATIONS, parseRequestOptions, withRequestOptions, type AnthropicConfig, type ConfigResult } from './settings.js';
import { AnthropicStreamTranslator } from './stream-events.js';

type Sdk = typeof import('@anthropic-ai/sdk');
type Client = InstanceType<Sdk['default']>;

/** The SDK module, imported once, on first use. */
export const loadAnthropicSdk: () => Promise<Sdk> = lazyModule(() => import('@anthropic-ai/sdk'));

export interface AnthropicProviderOptions {
  /** Provider id (default `claude_code`). */
  id?: string;
  aliases?: string[];
  displayName?: string;
  defaultModel?: string;
  /** The model catalog (default: the Claude catalog; a custom provider passes its own, possibly empty). */
  models?: ModelInfo[];
  /** Static configuration, used when `config` is not given (the benchmark builds a provider this way). */
  apiKey?: string;
  baseUrl?: string;
  thinkingBudget?: number;
  maxOutputTokens?: number;
  webSearch?: boolean | { maxUses?: number };
  cache?: boolean;
  timeoutMs?: number;
  /** How many times one reply paused by the API (`pause_turn`) is continued (default 5). */
  maxPauseContinuations?: number;
  /**
   * Live configuration, read at every stream (and by `isConfigured`, with the settings it is
   * given). The plugin passes one that reads the settings store, so changes apply at once.
   */
  config?: (settings?: Settings) => ConfigResult;
  /** Where the SDK's own diagnostics go (default: dropped). */
  logger?: Logger;
  /**
   * The longest `retry-after` a retry may honour (ms; default 60 s, the kernel's default cap): a
   * longer one fails the request with the time to try again. The plugin reads `runtime.retryMaxDelayMs`.
   */
  retryMaxDelayMs?: () => number;
}

function staticConfig(o: AnthropicProviderOptions): ConfigResult {
  const config: AnthropicConfig = { baseUrl: (o.baseUrl ?? DEFAULT_BASE_URL).replace(/\/+$/, ''), cache: o.cache !== false };
  if (o.apiKey) config.apiKey = o.apiKey;
  if (o.thinkingBudget !== undefined) config.thinkingBudget = o.thinkingBudget;
  if (o.maxOutputTokens !== undefined) config.maxOutputTokens = o.maxOutputTokens;
  if (o.webSearch) config.webSearch = o.webSearch === true ? {} : o.webSearch;
  if (o.timeoutMs !== undefined) config.timeoutMs = o.timeoutMs;
  if (o.maxPauseContinuations !== undefined) config.maxPauseContinuations = o.maxPauseContinuations;
  return { ok: true, config };
}

const quiet = () => undefined;

export function createAnthropicProvider(options: AnthropicProviderOptions = {}): Provider {
  const id = options.id ?? 'claude_code';
  const displayName = options.displayName ?? 'Claude';
  const models = options.models ?? CLAUDE_MODELS;
  const resolve = options.config ?? (() => staticConfig(options));
  const log = options.logger;
  const retryMaxDelayMs = options.retryMaxDelayMs ?? (() => DEFAULT_RETRY_MAX_DELAY_MS);
  // The SDK logs through this; a malformed event is also reported as our error event, so its own lines are debug.
  const sdkLogger = { error: log ? (m: string, ...a: unknown[]) => log.debug(m, a) : quiet, warn: log ? (m: string, ...a: unknown[]) => log.warn(m, a) : quiet, info: quiet, debug: quiet };
  let cached: { key: string; client: Client } | undefined;

  async function clientFor(cfg: AnthropicConfig): Promise<Client> {
    const key = `${cfg.baseUrl}\n${cfg.apiKey ?? ''}\n${cfg.timeoutMs ?? ''}`;
    if (cached?.key === key) return cached.client;
    const { default: Anthropic } = await loadAnthropicSdk();
    const client = new Anthropic({
      // A keyless custom endpoint still needs a credential, or the SDK goes looking for profiles.
      apiKey: cfg.apiKey ?? 'no-key',
      baseURL: cfg.baseUrl,
      maxRetries: 0,
      ...(cfg.timeoutMs ? { timeout: cfg.timeoutMs } : {}),
      logger: sdkLogger,
    });
    cached = { key, client };
    return client;
  }

  /** The request as sent, kept for `pause_turn` continuations. */
  interface Sent {
    client: Client;
    body: ReturnType<typeof buildAnthropicRequest>;
  }

  /** Resolve settings, build the body and open the raw stream; undefined when `t` already holds the error. */
  async function open(request: ProviderRequest, signal: AbortSignal, t: AnthropicStreamTranslator, sent: { value?: Sent }): Promise<AsyncIterable<unknown> | undefined> {
    const resolved = resolve();
    if (!resolved.ok) return void t.error({ code: 'config', message: resolved.error, retryable: false });
    if (!resolved.config.apiKey && !resolved.config.keyless) {
      const where = id === 'claude_code' ? 'set ANTHROPIC_API_KEY, or providers.claude_code.apiKey in settings' : `set apiKey or apiKeyEnv of custom provider "${id}" in settings`;
      return void t.error({ code: 'auth', message: `provider "${id}" has no API key: ${where}`, retryable: false });
    }
    const overrides = parseRequestOptions(id, request.options);
    if (!overrides.ok) return void t.error({ code: 'config', message: overrides.error, retryable: false });
    const cfg = withRequestOptions(resolved.config, overrides.value);
    const body = buildAnthropicRequest(request, cfg, id, models);
    const client = await clientFor(cfg);
    sent.value = { client, body };
    t.out.push({ type: 'wire_request', api: 'messages', body: body as unknown as JsonObject });
    t.maxContinuations = cfg.maxPauseContinuations ?? DEFAULT_MAX_PAUSE_CONTINUATIONS;
    // Our body is the wire JSON (raw round-trip blocks included), looser than the SDK's param types.
    return client.messages.create(body as unknown as Anthropic.MessageCreateParamsStreaming, { signal });
  }

  /**
   * A `pause_turn` reply goes on in the same stream: the documented follow-up request (the
   * paused content appended as the last assistant message) is sent, and its blocks continue
   * this round's indices, so the kernel sees one reply.
   */
  function resume(t: AnthropicStreamTranslator, signal: AbortSignal, sent: { value?: Sent }): Promise<AsyncIterable<unknown>> | undefined {
    const s = sent.value;
    if (!t.paused || !s || signal.aborted) return undefined;
    t.resume();
    log?.debug(`provider "${id}": the API paused the turn (pause_turn); continuing it`);
    const body = t.continuationBody(s.body);
    t.out.push({ type: 'wire_request', api: 'messages', body: body as unknown as JsonObject });
    return s.client.messages.create(body as unknown as Anthropic.MessageCreateParamsStreaming, { signal });
  }

  function stream(request: ProviderRequest, signal: AbortSignal): ProviderStream {
    const t = new AnthropicStreamTranslator(id);
    const sent: { value?: Sent } = {};
    return new TranslatedStream(() => open(request, signal, t, sent), t, {
      end: () => t.end(signal.aborted),
      fail: (err) => t.fail(err, signal.aborted),
      retryMaxDelayMs,
      resume: () => resume(t, signal, sent),
    });
  }

  return {
    id,
    ...(options.aliases?.length ? { aliases: options.aliases } : {}),
    displayName,
    defaultModel: options.defaultModel ?? DEFAULT_MODEL,
    ...(models.length ? { models } : {}),
    isConfigured(settings: Settings) {
      const r = resolve(settings);
      return r.ok && (!!r.config.apiKey || !!r.config.keyless);
    },
    stream,
    prepare: () => void loadAnthropicSdk().catch(() => undefined),
  };
}

