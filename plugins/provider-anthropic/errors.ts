/**
 * Anthropic SDK failures → ProviderErrorInfo. The shared `toProviderError` decides retryability
 * and reads retry-after; this adds what only the Anthropic SDK tells: an in-stream `error` event
 * has no HTTP status but a documented error type (classified as the status the docs pair it
 * with), connection errors are named by class, and messages are shortened to `type: message`.
 */
import type { ProviderErrorInfo } from '../../plugin-api.js';
import { classifyStatus, toProviderError } from '../../lib/provider-shared/errors.js';

/** HTTP status for each documented error type (https://docs.anthropic.com/en/api/errors). */
const TYPE_STATUS: Record<string, number> = {
  invalid_request_error: 400,
  authentication_error: 401,
  billing_error: 402,
  permission_error: 403,
  not_found_error: 404,
  request_too_large: 413,
  rate_limit_error: 429,
  api_error: 500,
  timeout_error: 504,
  overloaded_error: 529,
};

interface SdkError {
  name?: string;
  status?: number;
  type?: string | null;
  apiMessage?: string | null;
  message?: string;
}

export function anthropicErrorInfo(err: unknown, partial: boolean): ProviderErrorInfo {
  const e = (err ?? {}) as SdkError;
  if (e.name === 'APIConnectionTimeoutError') return { code: 'timeout', message: 'the request timed out', retryable: !partial };
  if (e.name === 'APIConnectionError') {
    const cause = (err as { cause?: { message?: string; cause?: { code?: string } } }).cause;
    const detail = cause?.cause?.code ?? cause?.message;
    return { code: 'network', message: `cannot reach the provider${detail ? ` (${detail})` : ''}`, retryable: !partial };
  }
  const info = toProviderError(err, partial);
  const label = e.type && e.apiMessage ? `${e.type}: ${e.apiMessage}` : e.apiMessage || e.type;
  if (typeof e.status === 'number') {
    if (label) info.message = `${e.status} ${label}`;
    return info;
  }
  if (e.type && e.name !== 'APIUserAbortError') {
    // An error event inside a 200 stream: classify as the HTTP status its type stands for.
    const c = classifyStatus(TYPE_STATUS[e.type], `${e.type} ${e.apiMessage ?? ''}`);
    return { code: c.code, message: `stream error ${label}`, retryable: c.retryable && !partial };
  }
  return info;
}
