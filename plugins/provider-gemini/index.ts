/**
 * The Gemini provider plugin: `gemini` over the Google Generative AI API
 * (@google/generative-ai 0.24.1, imported on first use), plus one provider per
 * `customProviders[]` entry with `format: 'gemini'`, re-registered whenever settings change.
 * Settings keys and the conversion rules are in README.md beside this file.
 */
import type { Disposable, Plugin, PluginContext, Provider, Settings } from '../../plugin-api.js';
import { definePlugin } from '../../core/define-plugin.js';
import { retryMaxDelayFrom } from '../../lib/provider-shared/retry-hints.js';
import { DEFAULT_GEMINI_MODEL, GEMINI_MODELS } from './models.js';
import { createGeminiProvider } from './provider.js';
import { GEMINI_ID, GeminiSettingsSchema, parseCustomGemini, resolveCustomConfig, resolveGeminiConfig, unknownKeys, type ConfigResult } from './settings.js';

export { createGeminiProvider, loadGeminiSdk, type GeminiProviderOptions } from './provider.js';
export { GEMINI_MODELS, DEFAULT_GEMINI_MODEL } from './models.js';
export { GeminiSettingsSchema, CustomGeminiSchema } from './settings.js';
export { toGeminiSchema } from './schema.js';

export const PLUGIN_NAME = 'provider-gemini';

export interface GeminiPluginOptions {
  /** Environment to read GEMINI_API_KEY / GEMINI_BASE_URL and `apiKeyEnv` variables from (default `process.env`). */
  env?: NodeJS.ProcessEnv;
}

/** Report settings problems once per change, not at every request. */
function reportMain(ctx: PluginContext, settings: Settings, env: NodeJS.ProcessEnv): void {
  const r = resolveGeminiConfig(settings, GEMINI_ID, env);
  if (!r.ok) ctx.logger.error(r.error);
  for (const key of unknownKeys(settings.providers?.[GEMINI_ID], GeminiSettingsSchema)) {
    ctx.logger.warn(`provider "${GEMINI_ID}": settings providers.${GEMINI_ID}.${key} is not a known setting and is ignored`);
  }
}

/** A server's retry hint is honoured up to the kernel's own cap on waits. */
const retryCap = (ctx: PluginContext) => () => retryMaxDelayFrom(ctx.settings.get().runtime);

/** One provider for a custom entry; an invalid entry still registers, answering every request with its settings error. */
function customProvider(ctx: PluginContext, entry: unknown, index: number, env: NodeJS.ProcessEnv): Provider {
  const parsed = parseCustomGemini(entry, index);
  if (!parsed.ok) {
    ctx.logger.error(parsed.error);
    const e = entry as { name?: unknown; defaultModel?: unknown };
    const failed: ConfigResult = { ok: false, error: parsed.error };
    return createGeminiProvider({
      id: parsed.id,
      displayName: typeof e.name === 'string' && e.name ? e.name : parsed.id,
      defaultModel: typeof e.defaultModel === 'string' && e.defaultModel ? e.defaultModel : DEFAULT_GEMINI_MODEL,
      models: [],
      config: () => failed,
      logger: ctx.logger,
    });
  }
  const c = parsed.entry;
  return createGeminiProvider({
    id: c.id,
    displayName: c.name ?? c.id,
    defaultModel: c.defaultModel ?? c.models?.[0]?.id ?? DEFAULT_GEMINI_MODEL,
    models: c.models ?? [],
    // The key variable is read at each request, so exporting it later works without a restart.
    config: (settings) => resolveCustomConfig(c, settings ?? ctx.settings.get(), env),
    logger: ctx.logger,
    retryMaxDelayMs: retryCap(ctx),
  });
}

export function createGeminiPlugin(options: GeminiPluginOptions = {}): Plugin {
  return definePlugin({
    name: PLUGIN_NAME,
    apply(ctx) {
      const env = options.env ?? process.env;
      ctx.registerProvider(
        createGeminiProvider({
          id: GEMINI_ID,
          displayName: 'Gemini',
          defaultModel: DEFAULT_GEMINI_MODEL,
          models: GEMINI_MODELS,
          config: (settings) => resolveGeminiConfig(settings ?? ctx.settings.get(), GEMINI_ID, env),
          logger: ctx.logger,
          retryMaxDelayMs: retryCap(ctx),
        }),
      );
      reportMain(ctx, ctx.settings.get(), env);

      let customs: Disposable[] = [];
      let lastKey: string | undefined;
      const disposeCustoms = () => {
        for (const d of customs.splice(0).reverse()) d.dispose();
      };
      const sync = (settings: Settings) => {
        const entries = (settings.customProviders ?? []).map((e, i) => [e, i] as const).filter(([e]) => e?.format === 'gemini');
        // Unrelated settings changes keep the registered providers (and their in-flight streams) as they are.
        const key = JSON.stringify(entries);
        if (key === lastKey) return;
        lastKey = key;
        disposeCustoms();
        for (const [entry, index] of entries) {
          try {
            customs.push(ctx.registerProvider(customProvider(ctx, entry, index, env)));
          } catch (err) {
            // An id clash names both plugins; the other providers still register.
            ctx.logger.error(`custom provider "${entry.id}" was not registered: ${(err as Error).message}`);
          }
        }
      };
      sync(ctx.settings.get());
      ctx.subscriptions.push(
        ctx.settings.onChange((settings) => {
          reportMain(ctx, settings, env);
          sync(settings);
        }),
        { dispose: disposeCustoms },
      );
    },
  });
}

export default createGeminiPlugin();
