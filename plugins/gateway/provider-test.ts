/**
 * `providers.test`: "Test connection" in the WebUI's provider settings. One real, cheap request
 * (a 1-token lean completion through runtime.complete, so the provider's own key, endpoint and
 * error mapping are what is tested) with the saved settings; the answer says in plain words
 * whether it worked and, when not, what the provider said.
 */
import { z } from 'zod';
import type { RuntimeApi, Settings } from '../../plugin-api.js';
import { ReplyError } from './chat-runs.js';
import type { ExtensionMessage } from '../../lib/gateway-protocol/protocol.js';

export const ProviderTestSchema = z.object({
  type: z.literal('providers.test'),
  id: z.string().optional(),
  provider: z.string().min(1, 'provider: must name a provider').max(100),
  model: z.string().min(1).max(200).optional(),
  /** How long to wait for the answer (ms). */
  timeoutMs: z.number().int().min(100).max(300_000).default(30_000),
});

export interface ProviderTestResult {
  ok: boolean;
  provider: string;
  model: string;
  /** What to show: a sentence for people, not a stack. */
  message: string;
  /** The provider's error code (`auth`, `network`, ...) and HTTP status, when it failed. */
  code?: string;
  status?: number;
  durationMs: number;
}

/** What the user should read for a provider error code: the cause first, the provider's words after. */
export function plainProviderError(code: string | undefined, status: number | undefined, raw: string): string {
  const said = raw.trim() ? ` The provider said: ${raw.trim()}` : '';
  if (code === 'auth' && /no API key/i.test(raw)) return `No API key is set for this provider. Paste one in its API key field and save.`;
  if (status === 401 || status === 403 || code === 'auth') return `The provider refused the API key (check that it is complete and still valid).${said}`;
  if (status === 404) return `The endpoint or model was not found (check the base URL and the model id).${said}`;
  if (code === 'rate_limited' || status === 429) return `The key works, but the provider is rate limiting requests right now.${said}`;
  if (code === 'network') return `Could not reach the provider (check the base URL and the network).${said}`;
  if (code === 'timeout') return `The provider did not answer in time.${said}`;
  if (code === 'config') return `The provider's settings are not valid.${said}`;
  return `The test request failed.${said}`;
}

export function providerTestHandler(deps: { runtime: RuntimeApi; settings: () => Settings }) {
  return async (message: ExtensionMessage): Promise<ProviderTestResult> => {
    const r = ProviderTestSchema.safeParse(message);
    if (!r.success) {
      const i = r.error.issues[0]!;
      throw new ReplyError('bad_request', `${i.path.join('.') || 'message'}: ${i.message}`);
    }
    const { provider: id, timeoutMs } = r.data;
    const provider = deps.runtime.provider(id);
    if (!provider) throw new ReplyError('not_found', `unknown provider "${id}" (known: ${deps.runtime.providers().map((p) => p.id).join(', ') || 'none loaded'})`);
    const settings = deps.settings();
    const stored = settings.providers?.[provider.id]?.defaultModel ?? settings.customProviders?.find((c) => c.id === provider.id)?.defaultModel;
    const model = r.data.model ?? (typeof stored === 'string' && stored ? stored : provider.defaultModel);
    const started = Date.now();
    const signal = AbortSignal.timeout(timeoutMs);
    try {
      await deps.runtime.complete({ provider: provider.id, model, lean: true, maxOutputTokens: 1, signal, messages: [{ id: 'test', role: 'user', createdAt: started, content: [{ type: 'text', text: 'Reply with OK.' }] }] });
      return { ok: true, provider: provider.id, model, message: `Connected: ${provider.displayName} answered with ${model}.`, durationMs: Date.now() - started };
    } catch (err) {
      const details = (err as { details?: { code?: unknown; status?: unknown } }).details ?? {};
      const timedOut = signal.aborted;
      const code = timedOut ? 'timeout' : typeof details.code === 'string' ? details.code : undefined;
      const status = typeof details.status === 'number' ? details.status : undefined;
      const raw = timedOut ? `no answer within ${Math.round(timeoutMs / 1000)} s` : (err as Error).message ?? String(err);
      return { ok: false, provider: provider.id, model, message: plainProviderError(code, status, raw), ...(code ? { code } : {}), ...(status ? { status } : {}), durationMs: Date.now() - started };
    }
  };
}
