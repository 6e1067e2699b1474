/**
 * Errors that a provider's setup fixes (no provider, no key, a refused key) lead to Settings →
 * Providers, not only to environment variables: the WebUI user may have no shell on the server.
 */
import { nextTick } from 'vue';
import type { RuntimeErrorInfo } from '../../../plugin-api.js';
import { useConversationsStore } from '../stores/conversations.js';

const SETUP_WORDS = /no provider is configured|has no API key|no API key|refused the API key|invalid x-api-key|incorrect api key|api key not valid|unauthori[sz]ed/i;

/** A message (a refused send, a run's error text) that a provider's settings would fix. */
export function needsProviderSettings(message: string | null | undefined): boolean {
  return !!message && SETUP_WORDS.test(message);
}

/** Same, for a run's error: an auth failure (HTTP 401/403), a missing key, a configuration problem. */
export function errorNeedsProviderSettings(error: RuntimeErrorInfo): boolean {
  const status = typeof error.details?.status === 'number' ? error.details.status : undefined;
  return status === 401 || status === 403 || error.details?.code === 'auth' || error.code === 'config' || needsProviderSettings(error.message);
}

/** The run's error is a missing key (not a refused one): the provider was never asked. */
export function isMissingKey(error: RuntimeErrorInfo): boolean {
  return /no API key|no provider is configured/i.test(error.message);
}

/** Open Settings scrolled to the providers (to one provider's card when given). */
export async function openProviderSettings(providerId?: string): Promise<void> {
  useConversationsStore().showSettings();
  for (let i = 0; i < 20; i++) {
    await nextTick();
    const card = providerId ? document.querySelector(`[data-testid="provider-card"][data-provider="${CSS.escape(providerId)}"], [data-testid="custom-provider-card"][data-provider="${CSS.escape(providerId)}"]`) : null;
    const target = card ?? document.getElementById('settings-providers');
    if (target) {
      target.scrollIntoView({ block: 'start' });
      (target.querySelector('input') as HTMLInputElement | null)?.focus({ preventScroll: true });
      return;
    }
    await new Promise((r) => setTimeout(r, 25));
  }
}
