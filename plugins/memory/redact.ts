/**
 * Secret redaction for silent memory extraction: the transcript sent to the extraction model
 * and every proposal it returns go through here, so a key pasted into a chat never lands in
 * the unreviewed list (or at another provider, when `memory.extractProvider` differs from the
 * conversation's). Matches become `[REDACTED_SECRET]`, codex's marker.
 *
 * The patterns lean towards redacting too much: a memory that lost a long hash is no loss, a
 * memory that kept a key is.
 */
export const REDACTED = '[REDACTED_SECRET]';

interface Rule {
  re: RegExp;
  /** Keep group 1 (the key name, "Bearer ") and redact the rest of the match. */
  keepName?: true;
}

const RULES: Rule[] = [
  // PEM private keys, whole.
  { re: /-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|$)/g },
  // Provider keys: OpenAI / Anthropic (sk-, sk-ant-, sk-proj-), AWS access key ids, GitHub, Slack, Google, Stripe.
  { re: /\bsk-[A-Za-z0-9_-]{12,}/g },
  { re: /\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b/g },
  { re: /\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}\b/g },
  { re: /\bgithub_pat_[A-Za-z0-9_]{20,}\b/g },
  { re: /\bxox[abprs]-[A-Za-z0-9-]{10,}/g },
  { re: /\bAIza[0-9A-Za-z_-]{30,}/g },
  { re: /\b(?:rk|pk|sk)_(?:live|test)_[A-Za-z0-9]{16,}/g },
  // JSON Web Tokens.
  { re: /\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g },
  // Authorization headers.
  { re: /\b((?:Bearer|Basic|Token)\s+)[A-Za-z0-9._~+/=-]{12,}/gi, keepName: true },
  // Credentials in URLs: scheme://user:password@host.
  { re: /\b([a-z][a-z0-9+.-]*:\/\/[^\s:/@]+:)[^\s@/]+(?=@)/gi, keepName: true },
  // `password: x`, `api_key = "x"`, `SECRET=x`, `"token": "x"` ...
  {
    re: /\b((?:[A-Za-z0-9_-]*?(?:password|passwd|passphrase|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|client[_-]?secret|auth))["']?\s*[:=]\s*)(?:"[^"\n]*"|'[^'\n]*'|[^\s,;]+)/gi,
    keepName: true,
  },
  // Long hex runs (keys, hashes of secrets).
  { re: /\b[0-9a-fA-F]{32,}\b/g },
];

/** Long base64-ish runs that mix cases and digits (random keys), whatever their prefix. */
const BASE64_RUN = /[A-Za-z0-9+/_-]{32,}={0,2}/g;

function looksRandom(s: string): boolean {
  return /[a-z]/.test(s) && /[A-Z]/.test(s) && /[0-9]/.test(s) && !s.includes(REDACTED);
}

export function redactSecrets(text: string): string {
  let out = text;
  for (const rule of RULES) {
    out = out.replace(rule.re, (_match: string, name?: string) => (rule.keepName && typeof name === 'string' ? `${name}${REDACTED}` : REDACTED));
  }
  return out.replace(BASE64_RUN, (run) => (looksRandom(run) ? REDACTED : run));
}

/** True when `text` still holds something the rules would redact. */
export function hasSecrets(text: string): boolean {
  return redactSecrets(text) !== text;
}
