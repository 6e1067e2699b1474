/**
 * Errors reported inside a stream (an SSE `error` event, a failed response, an error chunk from
 * a proxy) have no HTTP status, only a code or type string. This classifies them the same way
 * errors.ts classifies statuses: rate limits and server trouble may be retried (the kernel only
 * does so when nothing was output yet), quota, auth and bad requests never. A prompt that does
 * not fit the context window is `context_overflow`, by its code (OpenAI's `response.failed` with
 * `context_length_exceeded`) or, under a generic code like `invalid_request_error`, its wording.
 */
import type { ProviderErrorInfo } from '../../plugin-api.js';
import { isContextOverflow } from './errors.js';

const RULES: Array<[RegExp, Pick<ProviderErrorInfo, 'code' | 'retryable'>]> = [
  // First: these codes mean nothing else (the `context_length` of bad_request below used to swallow them).
  [/context_length_exceeded|context_window_exceeded|context_overflow|exceed_context_size|request_too_large|prompt_too_long/i, { code: 'context_overflow', retryable: false }],
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
  const byKey = key ? RULES.find(([re]) => re.test(key))?.[1] : undefined;
  // A generic code (invalid_request_error) leaves the message to tell an overflow; a specific one (rate_limit_exceeded) does not.
  if ((!byKey || byKey.code === 'bad_request') && isContextOverflow(message)) return { code: 'context_overflow', retryable: false, message: clean(message, key) };
  if (byKey) return { ...byKey, message: clean(message, key) };
  for (const [re, c] of RULES) if (re.test(message)) return { ...c, message: clean(message, key) };
  return { code: 'stream', retryable: false, message: clean(message, key) };
}

function clean(message: string, code: string): string {
  const m = message.replace(/\s+/g, ' ').trim().slice(0, 2000) || 'the provider reported an error';
  return code && !m.includes(code) ? `${m} (${code})` : m;
}
