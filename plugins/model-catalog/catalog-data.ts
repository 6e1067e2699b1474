/**
 * What an unknown model is assumed to support: small enough to be safe everywhere. The facts of
 * known models live in one place, the provider plugin that serves them (`Provider.models`), and
 * custom providers bring theirs in settings (`customProviders[].models`).
 */
import type { ModelInfo } from '../../plugin-api.js';

export const SAFE_DEFAULTS: Required<Pick<ModelInfo, 'contextWindow' | 'maxOutputTokens' | 'thinking' | 'cache'>> = {
  contextWindow: 128_000,
  maxOutputTokens: 8_192,
  thinking: false,
  cache: false,
};
