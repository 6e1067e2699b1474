/**
 * Redaction for the debug log: every record is serialized through `serializeRecord`, so nothing
 * reaches a file unredacted.
 *
 * - A string (or an array of strings) under a credential key (`apiKey`, `authorization`,
 *   `x-api-key`, `token`, `secret`, `password`, `cookie`, ...) becomes `[REDACTED secret len=N]`.
 *   Numbers and booleans under such keys stay: `inputTokens` is usage, not a credential.
 * - Inside any string, things that look like credentials: provider keys (`sk-…`, `AIza…`),
 *   `Bearer …` / `Basic …`, GitHub / Slack / AWS keys, JWTs, PEM private keys, `password=…`.
 * - Binary payloads: the `data` of an image / document / redacted-thinking block (and of any
 *   object with a MIME type), the payload of a `data:…;base64,` URL, and any base64-looking run
 *   longer than 256 characters become `[REDACTED base64 len=N sha256=<12 hex>]`, so two records
 *   can still be compared without carrying megabytes.
 *
 * Secrets get no hash: a hash prefix of a low-entropy secret (a password) would let a reader
 * confirm a guess. Payloads get one: they are not secret, just large.
 */
import { createHash } from 'node:crypto';

const CREDENTIAL_KEY = /api[-_]?key|authorization|token|secret|password|cookie/i;

/** Patterns inside text; `keep` is the number of leading groups kept (the name, "Bearer "). */
const TEXT_RULES: Array<{ re: RegExp; keep?: true }> = [
  { re: /-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|$)/g },
  { re: /\bsk-[A-Za-z0-9_-]{16,}/g },
  { re: /\bAIza[0-9A-Za-z_-]{30,}/g },
  { re: /\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})/g },
  { re: /\bxox[abprs]-[A-Za-z0-9-]{10,}/g },
  { re: /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g },
  { re: /\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g },
  { re: /\b((?:Bearer|Basic)\s+)[A-Za-z0-9._~+/=-]{8,}/gi, keep: true },
  {
    re: /\b([A-Za-z0-9_-]*(?:api[_-]?key|secret|token|password|passwd|cookie|authorization)["']?\s*[:=]\s*)(?:"[^"\n]*"|'[^'\n]*'|[^\s,;"'}]+)/gi,
    keep: true,
  },
];

/** Cheap pre-check: only strings with one of these go through TEXT_RULES. */
const TEXT_HINT = /sk-|AIza|gh[pousr]_|github_pat_|xox|AKIA|ASIA|eyJ|bearer|basic|PRIVATE KEY|api[_-]?key|secret|token|passw|cookie|authorization/i;

const DATA_URL = /data:([\w.+-]+\/[\w.+-]+)?((?:;[\w-]+=[^;,\s]*)*);base64,([A-Za-z0-9+/_-]+={0,2})/g;

/** Longer base64 runs than this are payloads, not text. */
export const BASE64_RUN_LIMIT = 256;

const BINARY_TYPES = new Set(['image', 'document', 'base64', 'redacted_thinking', 'thinking', 'input_audio', 'file', 'inline_data']);

export function secretMarker(value: string): string {
  return `[REDACTED secret len=${value.length}]`;
}

// Big payloads (an image in the history) come back every round: hash each once.
const payloadMarkers = new Map<string, string>();
const MEMO_MIN = 16 * 1024;
const MEMO_MAX = 64;

export function payloadMarker(value: string): string {
  const memo = value.length >= MEMO_MIN;
  if (memo) {
    const hit = payloadMarkers.get(value);
    if (hit) return hit;
  }
  const marker = `[REDACTED base64 len=${value.length} sha256=${createHash('sha256').update(value).digest('hex').slice(0, 12)}]`;
  if (memo) {
    if (payloadMarkers.size >= MEMO_MAX) payloadMarkers.delete(payloadMarkers.keys().next().value!);
    payloadMarkers.set(value, marker);
  }
  return marker;
}

// Lookup table of base64 / base64url characters (padding handled apart).
const B64 = new Uint8Array(128);
for (const c of 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_') B64[c.charCodeAt(0)] = 1;

/** Runs longer than BASE64_RUN_LIMIT that mix cases and digits become markers. One linear pass. */
function redactBase64Runs(s: string): string {
  let out = '';
  let last = 0;
  let start = -1;
  let lower = false;
  let upper = false;
  let digit = false;
  const n = s.length;
  for (let i = 0; i <= n; i++) {
    const c = i < n ? s.charCodeAt(i) : 0;
    if (c < 128 && B64[c] === 1) {
      if (start < 0) {
        start = i;
        lower = upper = digit = false;
      }
      if (c >= 97 && c <= 122) lower = true;
      else if (c >= 65 && c <= 90) upper = true;
      else if (c >= 48 && c <= 57) digit = true;
      continue;
    }
    if (start >= 0) {
      let end = i;
      while (end < n && end - i < 2 && s.charCodeAt(end) === 61) end++;
      if (end - start > BASE64_RUN_LIMIT && lower && upper && digit) {
        out += s.slice(last, start) + payloadMarker(s.slice(start, end));
        last = end;
      }
      start = -1;
      i = end - 1 < i ? i : end - 1;
    }
  }
  return last === 0 ? s : out + s.slice(last);
}

/** A string with every credential-looking part and every base64 payload replaced. */
export function redactText(s: string): string {
  let out = s;
  if (out.length >= 8 && TEXT_HINT.test(out)) {
    for (const rule of TEXT_RULES) {
      rule.re.lastIndex = 0;
      out = out.replace(rule.re, (match: string, name?: unknown) => (rule.keep && typeof name === 'string' ? `${name}${secretMarker(match.slice(name.length))}` : secretMarker(match)));
    }
  }
  if (out.includes(';base64,')) {
    DATA_URL.lastIndex = 0;
    out = out.replace(DATA_URL, (_m, mime: string | undefined, params: string, payload: string) => `data:${mime ?? ''}${params};base64,${payloadMarker(payload)}`);
  }
  return out.length > BASE64_RUN_LIMIT ? redactBase64Runs(out) : out;
}

function holdsBinary(holder: unknown): boolean {
  if (!holder || typeof holder !== 'object') return false;
  const h = holder as Record<string, unknown>;
  if (typeof h.type === 'string' && BINARY_TYPES.has(h.type)) return true;
  return 'mimeType' in h || 'media_type' in h || 'mime_type' in h;
}

function replacer(this: unknown, key: string, value: unknown): unknown {
  if (typeof value === 'string') {
    if (key && CREDENTIAL_KEY.test(key)) return value ? secretMarker(value) : value;
    if (key === 'data' && holdsBinary(this)) return payloadMarker(value);
    return redactText(value);
  }
  if (value === null || typeof value !== 'object') return typeof value === 'bigint' ? String(value) : value;
  // Buffers arrive here already through their toJSON; the holder still has the original.
  const raw = key ? (this as Record<string, unknown>)[key] : value;
  if (raw instanceof Uint8Array) return `[REDACTED bytes len=${raw.byteLength} sha256=${createHash('sha256').update(raw).digest('hex').slice(0, 12)}]`;
  if (Array.isArray(value) && key && CREDENTIAL_KEY.test(key)) return value.map((v) => (typeof v === 'string' ? secretMarker(v) : v));
  return value;
}

/** One JSON line (no newline) with everything above redacted. Throws on a circular value. */
export function serializeRecord(record: object): string {
  return JSON.stringify(record, replacer);
}

/** `value` redacted, as a plain JSON value (for tests and for callers that log elsewhere). */
export function redactValue<T>(value: T): T {
  return JSON.parse(serializeRecord({ value })).value as T;
}
