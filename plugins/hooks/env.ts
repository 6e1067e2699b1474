/**
 * The environment a command hook runs with: the host's, minus every credential. A hook is a
 * user script, and often one copied from somewhere; it has no business with the provider keys
 * the host holds (CVE-2026-21852 was a key sent before trust). Removed:
 * - the provider variables (`ANTHROPIC_*`, `OPENAI_*`, `GEMINI_*`, `GOOGLE_API_KEY`, ...);
 * - any variable a provider setting names as its key (`apiKeyEnv`);
 * - names with a credential segment: `*_API_KEY`, `*_KEY`, `*_TOKEN`, `*_SECRET`,
 *   `*_PASSWORD`, `*_CREDENTIALS`, ... (`GITHUB_TOKEN`, `AWS_SECRET_ACCESS_KEY`);
 * - connection strings, which carry passwords (`DATABASE_URL`, `LIVEAGENT_DATABASE_URL`, `*_DSN`).
 * Then the hook's own variables are added.
 */
import type { Settings } from '../../plugin-api.js';

const PROVIDER_PREFIX = /^(ANTHROPIC|OPENAI|AZURE_OPENAI|GEMINI|GOOGLE_GENAI|GOOGLE_GENERATIVE_AI|CLAUDE|MISTRAL|COHERE|GROQ|DEEPSEEK|OPENROUTER|XAI|TOGETHER|FIREWORKS|PERPLEXITY)_/i;
const PROVIDER_NAMES = new Set(['GOOGLE_API_KEY', 'GOOGLE_APPLICATION_CREDENTIALS', 'HF_TOKEN', 'HUGGING_FACE_HUB_TOKEN']);
const CREDENTIAL_SEGMENT = /(^|_)(API_?KEY|KEY|KEYS|TOKEN|TOKENS|SECRET|SECRETS|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|CREDENTIALS|PRIVATE_KEY|ACCESS_KEY|ACCESS_KEY_ID|COOKIE|PAT)(_|$)/i;
const CONNECTION_STRING = /(^|_)(DATABASE_URL|DB_URL|DSN|CONNECTION_STRING|REDIS_URL|MONGO(DB)?_URL)$/i;

/** Variable names the settings point at as holding a key (`providers.*.apiKeyEnv`, custom providers). */
export function keyVariablesOf(settings: Settings): Set<string> {
  const out = new Set<string>();
  for (const p of Object.values(settings.providers ?? {})) {
    const name = (p as { apiKeyEnv?: unknown } | undefined)?.apiKeyEnv;
    if (typeof name === 'string' && name) out.add(name);
  }
  for (const c of settings.customProviders ?? []) if (typeof c?.apiKeyEnv === 'string' && c.apiKeyEnv) out.add(c.apiKeyEnv);
  return out;
}

/** True when a variable must not reach a hook. */
export function isSecretVariable(name: string, keyVariables: ReadonlySet<string> = new Set()): boolean {
  return keyVariables.has(name) || PROVIDER_NAMES.has(name.toUpperCase()) || PROVIDER_PREFIX.test(name) || CREDENTIAL_SEGMENT.test(name) || CONNECTION_STRING.test(name);
}

/** `base` without its credentials, plus `extra`. */
export function hookEnv(base: NodeJS.ProcessEnv, settings: Settings, extra: Record<string, string>): NodeJS.ProcessEnv {
  const keys = keyVariablesOf(settings);
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(base)) {
    if (value === undefined || isSecretVariable(name, keys)) continue;
    env[name] = value;
  }
  return Object.assign(env, extra);
}
