/**
 * provider-openai: the `codex` provider (alias `openai`) on the official openai SDK, plus one
 * provider per `settings.customProviders` entry whose format is `openai-chat` or
 * `openai-responses` (Ollama, vLLM, DeepSeek, proxies...). Custom providers are re-registered
 * when settings change; codex re-reads `providers.codex` on every request.
 *
 * Which API codex speaks: `providers.codex.api` ('responses' | 'chat'); unset, Responses at any
 * `baseUrl` / OPENAI_BASE_URL, and an endpoint that answers it has no such route (404/405 before
 * any output) gets Chat Completions, remembered per base URL in $LIVEAGENT_HOME/openai-api-fallback.json
 * (api-fallback.ts). A custom provider's `format` decides for it.
 *
 * Settings (`providers.codex`, all optional, over the environment; strict: unknown keys are refused):
 *   apiKey, apiKeyEnv   key, or the name of a variable holding it (else OPENAI_API_KEY)
 *   baseUrl             endpoint ending in /v1 (else OPENAI_BASE_URL, else https://api.openai.com/v1)
 *   defaultModel        model when none is chosen (default gpt-5)
 *   api                 'responses' | 'chat': forces one, no fallback (see above)
 *   store               Responses: store responses and chain rounds with previous_response_id (default false)
 *   webSearch           hosted web search, probed per model and API (default false): Responses offers the
 *                       web_search tool; Chat Completions sends web_search_options (search models only)
 *   reasoningEffort     none | minimal | low | medium | high | xhigh (else mapped from a thinking budget)
 *   reasoningSummary    Responses: auto | concise | detailed | off (default auto, reasoning models only)
 *   maxOutputTokens     max_output_tokens / max_completion_tokens (max_tokens off api.openai.com)
 *   timeoutMs           time to wait for response headers (the SDK's timeout; default 10 minutes)
 *   foreignThinking     'drop' (default) | 'text': another provider's thinking in the history
 * A custom `openai-chat` / `openai-responses` entry takes id, name, baseUrl, apiKey / apiKeyEnv
 * (optional: a placeholder key is sent), defaultModel, models, and the same request options;
 * `providers.<custom id>` may override them too.
 */
import path from 'node:path';
import type { CustomProviderSettings, Disposable, Plugin, PluginContext, Settings } from '../../plugin-api.js';
import { definePlugin } from '../../core/define-plugin.js';
import { API_FALLBACK_FILE, ApiFallbacks } from './api-fallback.js';
import { ResponseChains, type ChainMetaStore } from './chains.js';
import { checkSettingsSection, customBase } from './config.js';
import { createOpenAIProvider } from './provider.js';
import { SEARCH_PROBE_FILE, SearchProbe } from './search-probe.js';

export { createOpenAIProvider, loadOpenAISdk, type OpenAIProvider, type OpenAIProviderOptions } from './provider.js';
export { OPENAI_MODELS, DEFAULT_OPENAI_MODEL, isReasoningModel } from './models.js';
export { OpenAISettingsSchema, type OpenAISettings } from './config.js';
export { SearchProbe, SEARCH_PROBE_FILE } from './search-probe.js';
export { ResponseChains } from './chains.js';
export { ApiFallbacks, API_FALLBACK_FILE } from './api-fallback.js';

const OPENAI_FORMATS = new Set(['openai-chat', 'openai-responses']);

export interface OpenAIPluginOptions {
  /** Environment to read keys from (default `process.env`). */
  env?: NodeJS.ProcessEnv;
}

export function createOpenAIPlugin(options: OpenAIPluginOptions = {}): Plugin {
  return definePlugin({
    name: 'provider-openai',
    apply(ctx) {
      const env = options.env ?? process.env;
      const probe = new SearchProbe(path.join(ctx.paths.home, SEARCH_PROBE_FILE), ctx.logger);
      const fallbacks = new ApiFallbacks(path.join(ctx.paths.home, API_FALLBACK_FILE), ctx.logger);
      // Chains survive restarts in the conversation's meta when a history service is loaded.
      const chains = new ResponseChains(1000, () => ctx.service<ChainMetaStore>('history'), ctx.logger);
      ctx.hooks.shutdown.tap(() => Promise.all([probe.flush(), fallbacks.flush(), chains.flush()]).then(() => undefined));
      const settings = () => ctx.settings.get();
      ctx.registerProvider(createOpenAIProvider({ id: 'codex', aliases: ['openai'], displayName: 'OpenAI', settings, env, probe, chains, fallbacks, logger: ctx.logger }));
      // A typo in providers.codex is reported now; requests fail with the same message until fixed.
      const check = checkSettingsSection('codex', settings().providers?.codex);
      if (!check.ok) ctx.logger.warn(check.error);
      syncCustomProviders(ctx, { env, probe, chains });
    },
  });
}

function syncCustomProviders(ctx: PluginContext, shared: { env: NodeJS.ProcessEnv; probe: SearchProbe; chains: ResponseChains }): void {
  let registered: Disposable[] = [];
  let lastKey: string | undefined;
  const sync = (s: Settings) => {
    const entries = (s.customProviders ?? []).map((e, i) => [e, i] as const).filter(([e]) => OPENAI_FORMATS.has(e.format));
    const key = JSON.stringify(entries);
    if (key === lastKey) return;
    lastKey = key;
    for (const d of registered) d.dispose();
    registered = [];
    for (const [entry, index] of entries) {
      try {
        registered.push(ctx.registerProvider(customProvider(ctx, entry, index, shared)));
      } catch (err) {
        ctx.logger.error(`custom provider "${entry.id}" was not registered: ${(err as Error).message}`);
      }
    }
  };
  sync(ctx.settings.get());
  ctx.subscriptions.push(ctx.settings.onChange(sync));
  ctx.subscriptions.push({ dispose: () => registered.forEach((d) => d.dispose()) });
}

function customProvider(ctx: PluginContext, entry: CustomProviderSettings, index: number, shared: { env: NodeJS.ProcessEnv; probe: SearchProbe; chains: ResponseChains }) {
  const extra = customBase(entry as unknown as Record<string, unknown>, index);
  if (!extra.ok) ctx.logger.warn(extra.error);
  const defaultModel = entry.defaultModel ?? entry.models?.[0]?.id;
  if (!defaultModel) ctx.logger.warn(`custom provider "${entry.id}" names no model: set defaultModel (or models) in settings.customProviders[${index}]`);
  const base = extra.ok ? extra.value : { api: entry.format === 'openai-chat' ? ('chat' as const) : ('responses' as const) };
  return createOpenAIProvider({
    ...base,
    id: entry.id,
    displayName: entry.name ?? entry.id,
    models: entry.models ?? [],
    baseUrl: entry.baseUrl,
    ...(entry.apiKey ? { apiKey: entry.apiKey } : {}),
    ...(entry.apiKeyEnv ? { apiKeyEnv: entry.apiKeyEnv } : {}),
    defaultModel: defaultModel ?? 'default',
    settings: () => ctx.settings.get(),
    env: shared.env,
    envNames: null,
    keyOptional: true,
    probe: shared.probe,
    chains: shared.chains,
    logger: ctx.logger,
    ...(extra.ok ? {} : { configError: extra.error }),
  });
}

export default createOpenAIPlugin();
