/**
 * @google/generative-ai 0.24.1 failures → ProviderErrorInfo. The shared `toProviderError`
 * decides retryability from the HTTP status (429 with a quota message and 400 never, 503 yes);
 * this adds what only this SDK tells, by class name and message since its errors carry no code:
 * - GoogleGenerativeAIFetchError: status + statusText + Google's `error.details`, all squeezed
 *   into one message with the URL; we keep `<status> <reason>: <Google's message>` and read
 *   `RetryInfo.retryDelay` ("41s") as retryAfterMs.
 * - "Error reading from the stream": the body broke (early EOF, reset, abort mid-body).
 * - "Failed to parse stream": the body ended cleanly in the middle of an event.
 * - "Error parsing JSON response": a data line that is not JSON.
 * - GoogleGenerativeAIAbortError: our signal, or our header timeout.
 * The SDK itself never retries (it has no retry logic at all), so the kernel's retry is the only one.
 */
import type { ProviderErrorInfo } from '../../plugin-api.js';
import { toProviderError } from '../provider-shared/errors.js';

interface SdkError {
  name?: string;
  message?: string;
  status?: number;
  statusText?: string;
  errorDetails?: Array<{ '@type'?: string; retryDelay?: string; reason?: string }>;
  constructor?: { name?: string };
}

const PREFIX = /^\[GoogleGenerativeAI Error\]:\s*/;

/** "41s" / "0.5s" (a protobuf Duration in JSON) → ms. */
export function parseRetryDelay(v: unknown): number | undefined {
  if (typeof v !== 'string') return undefined;
  const m = /^(\d+(?:\.\d+)?)s$/.exec(v.trim());
  return m ? Math.round(Number(m[1]) * 1000) : undefined;
}

/** Google's own message out of "Error fetching from <url>: [400 Bad Request] <message> <details json>". */
function apiMessage(e: SdkError): string {
  let m = (e.message ?? '').replace(PREFIX, '');
  const at = m.indexOf('] ');
  if (m.startsWith('Error fetching from') && at >= 0) m = m.slice(at + 2);
  else if (m.startsWith('Error fetching from') && m.endsWith(']')) m = '';
  if (e.errorDetails?.length) {
    const json = JSON.stringify(e.errorDetails);
    if (m.endsWith(json)) m = m.slice(0, -json.length);
  }
  return m.trim();
}

export function geminiErrorInfo(err: unknown, partial: boolean, timedOut = false): ProviderErrorInfo {
  const e = (err ?? {}) as SdkError;
  const cls = e.constructor?.name ?? '';
  const raw = (e.message ?? String(err)).replace(PREFIX, '');
  if (typeof e.status === 'number') {
    const text = apiMessage(e);
    const reason = e.errorDetails?.find((d) => typeof d.reason === 'string')?.reason;
    const info = toProviderError({ status: e.status, message: `${e.statusText ?? ''}: ${text} ${reason ?? ''}` }, partial);
    if (reason === 'API_KEY_INVALID') info.code = 'auth';
    info.message = `${e.status}${e.statusText ? ` ${e.statusText}` : ''}${text ? `: ${text}` : ''}`;
    const delay = parseRetryDelay(e.errorDetails?.find((d) => d['@type']?.endsWith('RetryInfo'))?.retryDelay);
    if (delay !== undefined) info.retryAfterMs = delay;
    return info;
  }
  if (timedOut) return { code: 'timeout', message: 'no response headers within timeoutMs', retryable: !partial };
  if (cls === 'GoogleGenerativeAIAbortError' || e.name === 'AbortError') return { code: 'aborted', message: 'the request was aborted', retryable: false };
  if (raw.startsWith('Error reading from the stream')) return { code: 'network', message: 'the connection closed before the reply was complete', retryable: !partial };
  if (raw.startsWith('Failed to parse stream')) return { code: 'stream', message: 'the stream ended in the middle of an event', retryable: !partial };
  if (raw.startsWith('Error parsing JSON response')) return { code: 'malformed', message: `malformed stream data: ${raw.slice(0, 300)}`, retryable: false };
  if (raw.startsWith('Error fetching from')) {
    // fetch itself failed (refused, DNS): nothing was sent, a retry may reach it.
    const cause = raw.replace(/^Error fetching from \S+: /, '');
    return { code: 'network', message: `cannot reach the provider (${cause})`, retryable: true };
  }
  return toProviderError(err, partial);
}
