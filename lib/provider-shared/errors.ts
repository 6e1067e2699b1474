/**
 * Turning SDK failures into normalized ProviderErrorInfo, shared by every provider plugin so
 * that retry decisions are made the same way everywhere: retry 408, 409, 429, 5xx and
 * "overloaded"; never 400, 401, 403, or an exhausted quota. A prompt too long for the model's
 * context window is `context_overflow` (not retryable as is: the kernel compacts first), told
 * apart from other 400s only by its wording, since no two providers share a code for it.
 */
import type { ProviderErrorInfo } from '../../plugin-api.js';

/**
 * How providers say "the prompt does not fit the context window" (matched case-insensitively):
 * Anthropic "prompt is too long: N tokens > M maximum"; OpenAI code `context_length_exceeded`,
 * "This model's maximum context length is N tokens" (Chat) and "Your input exceeds the context
 * window of this model" (Responses); Gemini "The input token count (N) exceeds the maximum number
 * of tokens allowed (M)"; llama.cpp `exceed_context_size_error` "request (N tokens) exceeds the
 * available context size (M tokens)" (wording varies by build); vLLM, DeepSeek, Mistral, OpenRouter "maximum context
 * length"; xAI "maximum prompt length is"; Bedrock "Input is too long"; and the generic
 * "context length exceeded" / "too many tokens" of proxies.
 */
const OVERFLOW_PATTERN = new RegExp(
  [
    'prompt is too long',
    'prompt too long',
    'input is too long',
    'context[_ ]length[_ ]exceeded',
    'context[_ ]window[_ ]exceeded',
    'context_overflow',
    'exceed_context_size',
    'maximum context length',
    'maximum prompt length',
    'too many tokens',
    'exceeds the maximum number of tokens',
    'reduce the length of the messages',
    // "exceeds the context window", "exceeds the available context size", "exceed context limit".
    "exceed(?:s|ed)?\\b[^.]{0,40}?\\bcontext (?:window|length|size|limit)",
    // Older llama.cpp "is larger than the max context size", LM Studio "greater than the context length".
    '(?:larger|greater) than the (?:max |maximum )?context (?:size|length)',
  ].join('|'),
  'i',
);

/**
 * An output cap the model cannot honour is the caller's setting, not the conversation: compacting
 * would not help. vLLM words it "'max_tokens' or 'max_completion_tokens' is too large: N. This
 * model's maximum context length is ...", so this check wins over OVERFLOW_PATTERN.
 */
const OUTPUT_CAP_PATTERN = /\b(?:max_tokens|max_completion_tokens|max_output_tokens|max_new_tokens|maxOutputTokens)\b'?[^.]{0,40}?\bis too large/i;

/** "Too many tokens per minute" is a rate limit, which waiting fixes and compacting does not. */
const RATE_PATTERN = /rate.?limit|tokens per min|\bTPM\b/i;

/** True when the text says the prompt does not fit the model's context window. */
export function isContextOverflow(text: string): boolean {
  return OVERFLOW_PATTERN.test(text) && !OUTPUT_CAP_PATTERN.test(text) && !RATE_PATTERN.test(text);
}

const OVERFLOW = { code: 'context_overflow', retryable: false } as const;

const QUOTA_PATTERN = /insufficient_quota|quota|billing|credit balance|RESOURCE_EXHAUSTED.*(quota|billing)|exceeded your current quota/i;

/** Parse `retry-after` (seconds or an HTTP date) and `retry-after-ms`; undefined when absent. */
export function retryAfterMs(headers: Headers | Record<string, string | undefined> | undefined): number | undefined {
  if (!headers) return undefined;
  const get = (k: string) => (headers instanceof Headers ? headers.get(k) : (headers[k] ?? headers[k.toLowerCase()])) ?? undefined;
  const ms = get('retry-after-ms');
  if (ms && Number.isFinite(Number(ms))) return Math.max(0, Number(ms));
  const ra = get('retry-after');
  if (!ra) return undefined;
  if (Number.isFinite(Number(ra))) return Math.max(0, Number(ra) * 1000);
  const date = Date.parse(ra);
  return Number.isFinite(date) ? Math.max(0, date - Date.now()) : undefined;
}

/** Classify an HTTP status (+ body text) into a code and whether a retry may help. */
export function classifyStatus(status: number | undefined, text = ''): Pick<ProviderErrorInfo, 'code' | 'retryable'> {
  if (status === undefined) {
    if (isContextOverflow(text)) return { ...OVERFLOW };
    if (/overloaded/i.test(text)) return { code: 'overloaded', retryable: true };
    return { code: 'stream', retryable: false };
  }
  if (status === 429 && QUOTA_PATTERN.test(text)) return { code: 'quota', retryable: false };
  if (status === 401) return { code: 'auth', retryable: false };
  if (status === 403) return { code: 'forbidden', retryable: false };
  // 413: the body is over the size limit (Anthropic request_too_large), whatever the wording.
  if (status === 413 || ((status === 400 || status === 422) && isContextOverflow(text))) return { ...OVERFLOW };
  if (status === 400 || status === 404 || status === 422) return { code: 'bad_request', retryable: false };
  if (status === 408) return { code: 'timeout', retryable: true };
  if (status === 409) return { code: 'conflict', retryable: true };
  if (status === 429) return { code: 'rate_limited', retryable: true };
  if (status === 529 || /overloaded/i.test(text)) return { code: 'overloaded', retryable: true };
  if (status >= 500) return { code: 'server', retryable: true };
  return { code: 'http', retryable: false };
}

/**
 * Normalize anything an SDK throws. Works with the Anthropic and OpenAI SDKs' APIError
 * (status, headers, error), Gemini's GoogleGenerativeAIFetchError (status, statusText), undici's
 * `TypeError: terminated` (early EOF) and SyntaxError (malformed JSON).
 */
export function toProviderError(err: unknown, partial = false): ProviderErrorInfo {
  const e = err as { status?: number; headers?: Headers | Record<string, string>; message?: string; name?: string; error?: unknown; cause?: { code?: string } };
  const message = cleanMessage(e?.message ?? String(err));
  if (e?.name === 'AbortError' || /aborted/i.test(e?.name ?? '')) return { code: 'aborted', message: 'the request was aborted', retryable: false };
  if (err instanceof SyntaxError) return { code: 'malformed', message: `malformed stream data: ${message}`, retryable: false };
  if (typeof e?.status === 'number') {
    const c = classifyStatus(e.status, `${message} ${safeJson(e.error)}`);
    // SDK messages often start with the status already ("401 Incorrect API key"); do not say it twice.
    const info: ProviderErrorInfo = { ...c, status: e.status, message: message.startsWith(String(e.status)) ? message : `${e.status} ${message}` };
    const ra = retryAfterMs(e.headers);
    if (ra !== undefined) info.retryAfterMs = ra;
    return info;
  }
  const body = `${message} ${safeJson(e?.error)}`;
  if (/overloaded/i.test(body)) return { code: 'overloaded', message, retryable: !partial };
  if (/terminated|ECONNRESET|socket|UND_ERR|other side closed/i.test(`${message} ${e?.cause?.code ?? ''}`)) {
    return { code: 'network', message: `the connection closed early (${message})`, retryable: !partial };
  }
  if (/ECONNREFUSED|ENOTFOUND|fetch failed|EAI_AGAIN/i.test(`${message} ${e?.cause?.code ?? ''}`)) {
    return { code: 'network', message: `cannot reach the provider (${message}${e?.cause?.code ? `, ${e.cause.code}` : ''})`, retryable: true };
  }
  return { code: 'stream', message, retryable: false };
}

function cleanMessage(m: string): string {
  return m.replace(/\s+/g, ' ').trim().slice(0, 2000);
}

function safeJson(v: unknown): string {
  if (v === undefined) return '';
  try {
    return JSON.stringify(v);
  } catch {
    return '';
  }
}
