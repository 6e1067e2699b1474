/**
 * The Anthropic provider plugin: `claude_code` (alias `anthropic`) over the Messages API, plus
 * one provider per `customProviders[]` entry with `format: 'anthropic'`, re-registered whenever
 * settings change.
 *
 * Settings (`providers.claude_code`, all optional, over the environment):
 *   apiKey, apiKeyEnv        key, or the name of a variable holding it (else ANTHROPIC_API_KEY)
 *   baseUrl                  host root (else ANTHROPIC_BASE_URL, else https://api.anthropic.com)
 *   defaultModel             model when none is chosen (default claude-sonnet-4-6)
 *   thinkingBudget           thinking tokens per round (0: off; at least 1024 when on)
 *   maxOutputTokens          max_tokens (default 16384, capped by the model's limit)
 *   webSearch                true, or { maxUses }: offer the native web_search server tool
 *   cache                    prompt-cache breakpoints (default true)
 *   timeoutMs                SDK request timeout (default the SDK's 10 minutes)
 *   maxPauseContinuations    follow-up requests for a reply the API paused (pause_turn; default 5)
 * A custom entry takes id, name, baseUrl, apiKey / apiKeyEnv, defaultModel, models, and the
 * same request options.
 */
import type { Disposable, Plugin, PluginContext, Provider, Settings } from '../../plugin-api.js';
import { definePlugin } from '../../core/define-plugin.js';
import { memoBySettings } from '../../lib/provider-shared/keys.js';
import { retryMaxDelayFrom } from '../../lib/provider-shared/retry-hints.js';
import { CLAUDE_MODELS, DEFAULT_MODEL } from './models.js';
import { createAnthropicProvider } from './provider.js';
import {
  CLAUDE_CODE_ID,
  ClaudeCodeSettingsSchema,
  parseCustomProvider,
  claudeCodeEnvNames,
  resolveClaudeCodeConfig,
  resolveCustomConfig,
  unknownKeys,
  type ConfigResult,
} from './settings.js';

export { createAnthropicProvider, loadAnthropicSdk, type AnthropicProviderOptions } from './provider.js';
export { CLAUDE_MODELS, DEFAULT_MODEL } from './models.js';

export const PLUGIN_NAME = 'provider-anthropic';

/** Report settings problems once per change, not at every request. */
function reportMain(ctx: PluginContext, settings: Settings): void {
  const r = resolveClaudeCodeConfig(settings);
  if (!r.ok) ctx.logger.error(r.error);
  const raw = settings.providers?.[CLAUDE_CODE_ID];
  for (const key of unknownKeys(raw, ClaudeCodeSettingsSchema)) ctx.logger.warn(`settings for provider "${CLAUDE_CODE_ID}": providers.${CLAUDE_CODE_ID}.${key} is not a known setting and is ignored`);
}

/** A server's retry-after is honoured up to the kernel's own cap on waits. */
const retryCap = (ctx: PluginContext) => () => retryMaxDelayFrom(ctx.settings.get().runtime);

/** One provider for a custom entry; an invalid entry still registers, answering every request with its settings error. */
function customProvider(ctx: PluginContext, entry: unknown, index: number): Provider {
  const parsed = parseCustomProvider(entry, index);
  if (!parsed.ok) {
    ctx.logger.error(parsed.error);
    const e = entry as { name?: unknown; defaultModel?: unknown };
    const failed: ConfigResult = { ok: false, error: parsed.error };
    return createAnthropicProvider({
      id: parsed.id,
      displayName: typeof e.name === 'string' && e.name ? e.name : parsed.id,
      defaultModel: typeof e.defaultModel === 'string' && e.defaultModel ? e.defaultModel : DEFAULT_MODEL,
      models: [],
      config: () => failed,
      logger: ctx.logger,
    });
  }
  const c = parsed.entry;
  return createAnthropicProvider({
    id: c.id,
    displayName: c.name ?? c.id,
    defaultModel: c.defaultModel ?? c.models?.[0]?.id ?? DEFAULT_MODEL,
    models: c.models ?? [],
    // The key variable is read at each request, so exporting it later works without a restart.
    config: () => resolveCustomConfig(c),
    logger: ctx.logger,
    retryMaxDelayMs: retryCap(ctx),
  });
}

export function createAnthropicPlugin(): Plugin {
  return definePlugin({
    name: PLUGIN_NAME,
    apply(ctx) {
      const mainConfig = memoBySettings(resolveClaudeCodeConfig, claudeCodeEnvNames);
      const main = createAnthropicProvider({
        id: CLAUDE_CODE_ID,
        aliases: ['anthropic'],
        displayName: 'Claude',
        defaultModel: DEFAULT_MODEL,
        models: CLAUDE_MODELS,
        config: (settings) => mainConfig(settings ?? ctx.settings.get()),
        logger: ctx.logger,
        retryMaxDelayMs: retryCap(ctx),
      });
      ctx.registerProvider(main);
      reportMain(ctx, ctx.settings.get());

      let customs: Disposable[] = [];
      const disposeCustoms = () => {
        for (const d of customs.splice(0).reverse()) d.dispose();
      };
      const sync = (settings: Settings) => {
        disposeCustoms();
        const next: Disposable[] = [];
        (settings.customProviders ?? []).forEach((entry, index) => {
          if (entry?.format !== 'anthropic') return;
          try {
            next.push(ctx.registerProvider(customProvider(ctx, entry, index)));
          } catch (err) {
            // An id clash names both plugins; the other providers still register.
            ctx.logger.error(`custom provider "${entry.id}" was not registered: ${(err as Error).message}`);
          }
        });
        customs = next;
      };
      sync(ctx.settings.get());
      ctx.subscriptions.push(
        ctx.settings.onChange((settings) => {
          reportMain(ctx, settings);
          sync(settings);
        }),
        { dispose: disposeCustoms },
      );
    },
  });
}

export default createAnthropicPlugin();
