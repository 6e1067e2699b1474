/**
 * A server's "wait this long before retrying" (HTTP `Retry-After`, Gemini's `RetryInfo`) against
 * the longest wait we accept. The kernel caps every wait at `runtime.retryMaxDelayMs` and would
 * retry a 2-hour hint after 30 s, into certain failure; a hint over the cap is therefore not
 * retried at all, and the error says when the server will take a request again.
 */
import type { ProviderErrorInfo, RuntimeSettings } from '../../plugin-api.js';

/** The kernel's default for `runtime.retryMaxDelayMs` (plugin-api.d.ts). */
export const DEFAULT_RETRY_MAX_DELAY_MS = 60_000;

/** Where providers read the cap: the same setting the kernel caps its waits with. */
export function retryMaxDelayFrom(runtime: RuntimeSettings | undefined): number {
  const v = runtime?.retryMaxDelayMs;
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : DEFAULT_RETRY_MAX_DELAY_MS;
}

/** "45 s", "12 min", "2 h 5 min": a wait as a person reads it. */
export function formatWait(ms: number): string {
  const s = Math.ceil(ms / 1000);
  if (s <= 120) return `${s} s`;
  const min = Math.round(s / 60);
  if (min <= 120) return `${min} min`;
  const h = Math.floor(min / 60);
  return `${h} h${min % 60 ? ` ${min % 60} min` : ''}`;
}

/**
 * A retryable error whose hint exceeds `maxMs` becomes a final one that names the wait, the cap
 * and the time to try again. Anything else is returned as it is (the same object).
 */
export function capRetryHint(info: ProviderErrorInfo, maxMs: number, now = Date.now()): ProviderErrorInfo {
  const wait = info.retryAfterMs;
  if (!info.retryable || wait === undefined || wait <= maxMs) return info;
  const at = new Date(now + wait).toISOString().replace(/\.\d{3}Z$/, 'Z');
  return {
    ...info,
    retryable: false,
    message: `${info.message} (the server asks to wait ${formatWait(wait)} before retrying, longer than the ${formatWait(maxMs)} runtime.retryMaxDelayMs allows: try again after ${at})`,
  };
}
