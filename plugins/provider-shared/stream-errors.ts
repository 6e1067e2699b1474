/**
 * Errors reported inside a stream (an SSE `error` event, a failed response, an error chunk from
 * a proxy) have no HTTP status, only a code or type string. This classifies them the same way
 * errors.ts classifies statuses: rate limits and server trouble may be retried (the kernel only
 * does so when nothing was output yet), quota, auth and bad requests never.
 */
import type { ProviderErrorInfo } from '../../plugin-api.js';

const RULES: Array<[RegExp, Pick<ProviderErrorInfo, 'code' | 'retryable'>]> = [
  [/insufficient_quota|quota|billing/i, { code: 'quota', retryable: false }],
  [/rate_limit|too_many_requests|rate limit/i, { code: 'rate_limited', retryable: true }],
  [/overloaded|capacity|slow_down/i, { code: 'overloaded', retryable: true }],
  [/server_error|internal_error|service_unavailable|timeout|unavailable/i, { code: 'server', retryable: true }],
  [/invalid_api_key|authentication|unauthorized/i, { code: 'auth', retryable: false }],
  [/permission|forbidden/i, { code: 'forbidden', retryable: false }],
  [/invalid_request|invalid_prompt|context_length|bad_request|not_found|unsupported/i, { code: 'bad_request', retryable: false }],
];

/** Classify an in-stream error by its code/type (checked first) and message. */
export function classifyStreamError(codeOrType: string | null | undefined, message: string): ProviderErrorInfo {
  const key = codeOrType ?? '';
  for (const [re, c] of RULES) if (key && re.test(key)) return { ...c, message: clean(message, key) };
  for (const [re, c] of RULES) if (re.test(message)) return { ...c, message: clean(message, key) };
  return { code: 'stream', retryable: false, message: clean(message, key) };
}

function clean(message: string, code: string): string {
  const m = message.replace(/\s+/g, ' ').trim().slice(0, 2000) || 'the provider reported an error';
  return code && !m.includes(code) ? `${m} (${code})` : m;
}
