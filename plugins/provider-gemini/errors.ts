/**
 * @google/generative-ai 0.24.1 failures → ProviderErrorInfo. The shared `toProviderError`
 * decides retryability from the HTTP status (400 never, 503 yes); this adds what only this SDK
 * tells, by class name and message since its errors carry no code:
 * - GoogleGenerativeAIFetchError: status + statusText + Google's `error.details`, all squeezed
 *   into one message with the URL; we keep `<status> <reason>: <Google's message>`.
 * - "Error reading from the stream": the body broke (early EOF, reset, abort mid-body).
 * - "Failed to parse stream": the body ended cleanly in the middle of an event.
 * - "Error parsing JSON response": a data line that is not JSON.
 * - GoogleGenerativeAIAbortError: our signal, or our header timeout.
 * The SDK itself never retries (it has no retry logic at all), so the kernel's retry is the only one.
 *
 * 429 RESOURCE_EXHAUSTED is a rate limit or a spent quota, and Google opens both with the same
 * "You exceeded your current quota, please check your plan and billing details" (so the wording
 * tells nothing). The details do: a `google.rpc.QuotaFailure` names the violated quota
 * (`GenerateRequestsPerMinutePerProjectPerModel-FreeTier` vs `...PerDay...`; a limit of 0 means
 * the tier has no access at all) and `google.rpc.RetryInfo.retryDelay` ("17s") says when to come
 * back. A per-day or zero quota is final; a per-minute one, or any RetryInfo, is a rate limit to
 * wait out; the quota wording with neither is a spent quota (billing); a bare "Resource has been
 * exhausted" is transient. The wait comes from RetryInfo, else the message's "Please retry in
 * 36.4s." (the SDK drops the response headers, so a proxy's `Retry-After` is not seen).
 */
import type { ProviderErrorInfo } from '../../plugin-api.js';
import { retryAfterMs, toProviderError } from '../../lib/provider-shared/errors.js';

interface QuotaViolation {
  quotaId?: unknown;
  quotaMetric?: unknown;
  quotaValue?: unknown;
}

interface ErrorDetail {
  '@type'?: string;
  retryDelay?: string;
  reason?: string;
  violations?: QuotaViolation[];
}

interface SdkError {
  name?: string;
  message?: string;
  status?: number;
  statusText?: string;
  errorDetails?: ErrorDetail[];
  headers?: Headers;
  constructor?: { name?: string };
}

const PREFIX = /^\[GoogleGenerativeAI Error\]:\s*/;

/** "41s" / "0.5s" (a protobuf Duration in JSON) → ms. */
export function parseRetryDelay(v: unknown): number | undefined {
  if (typeof v !== 'string') return undefined;
  const m = /^(\d+(?:\.\d+)?)s$/.exec(v.trim());
  return m ? Math.round(Number(m[1]) * 1000) : undefined;
}

/** Google's "Please retry in 36.429760048s." (the message's own copy of RetryInfo) → ms. */
function parsePleaseRetry(text: string): number | undefined {
  const m = /please retry in (\d+(?:\.\d+)?)\s*(ms|s)\b/i.exec(text);
  if (!m) return undefined;
  return Math.round(Number(m[1]) * (m[2]!.toLowerCase() === 'ms' ? 1 : 1000));
}

function detail(e: SdkError, type: 'RetryInfo' | 'QuotaFailure'): ErrorDetail | undefined {
  return e.errorDetails?.find((d) => typeof d?.['@type'] === 'string' && d['@type'].endsWith(`.${type}`));
}

const QUOTA_WORDING = /exceeded your current quota|check your plan and billing|billing details|quota exceeded for metric/i;

/** Rate limit or spent quota (see the header comment); the message says which when it is final. */
function classify429(e: SdkError, text: string, base: string, hasDelay: boolean, partial: boolean): Pick<ProviderErrorInfo, 'code' | 'retryable'> & { message?: string } {
  const violations = detail(e, 'QuotaFailure')?.violations ?? [];
  const ids = violations.map((v) => (typeof v.quotaId === 'string' ? v.quotaId : typeof v.quotaMetric === 'string' ? v.quotaMetric : '')).filter(Boolean);
  const daily = ids.find((id) => /per[-_ ]?day|daily/i.test(id));
  const zero = violations.find((v) => v.quotaValue === '0' || v.quotaValue === 0) ?? (/\blimit: 0\b/.test(text) ? {} : undefined);
  if (daily) return { code: 'quota', retryable: false, message: `${base} (daily quota ${daily} is used up; Google resets daily quotas at midnight Pacific time)` };
  if (zero) return { code: 'quota', retryable: false, message: `${base} (${typeof zero.quotaId === 'string' ? `quota ${zero.quotaId}` : 'the quota'} has a limit of 0 for this key: the model is not available on its tier)` };
  if (ids.length || hasDelay) return { code: 'rate_limited', retryable: !partial };
  if (QUOTA_WORDING.test(text)) return { code: 'quota', retryable: false };
  return { code: 'rate_limited', retryable: !partial };
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
    const delay =
      parseRetryDelay(detail(e, 'RetryInfo')?.retryDelay) ?? parsePleaseRetry(text) ?? (e.headers instanceof Headers ? retryAfterMs(e.headers) : undefined);
    if (delay !== undefined) info.retryAfterMs = delay;
    if (e.status === 429) Object.assign(info, classify429(e, text, info.message, delay !== undefined, partial));
    return info;
  }
  if (timedOut) return { code: 'timeout', message: 'no response headers within timeoutMs', retryable: !partial };
  // The SDK's abort error is told by its message too: a minified bundle renames the class.
  if (cls === 'GoogleGenerativeAIAbortError' || e.name === 'AbortError' || /^Request aborted when fetching /.test(raw)) return { code: 'aborted', message: 'the request was aborted', retryable: false };
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
