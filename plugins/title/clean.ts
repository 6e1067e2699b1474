/**
 * What a model answers is not always a title: it may wrap it in quotes or markdown, add
 * "Title:", refuse, explain, or repeat the instructions. `cleanTitle` keeps a usable title or
 * says none; `fallbackTitle` makes one from the user's first message.
 */

/** Longest generated title kept (characters, as code points). */
export const MAX_TITLE_CHARS = 50;
/** Longest fallback title, the ellipsis included. */
export const MAX_FALLBACK_CHARS = 48;

const QUOTES = `"'\`“”‘’«»「」『』„‚‹›`;
const EDGE_QUOTES = new RegExp(`^[${QUOTES}]+|[${QUOTES}]+$`, 'gu');
const TRAILING = /[\s.。!！?？,，;；:：、…·\-–—]+$/u;
const PREFIX = /^(?:conversation\s+title|chat\s+title|title|标题|標題|タイトル|titre|título|titel)\s*[:：-]\s*/iu;
const REFUSAL = [
  /^i\s*(?:can['’]?t|cannot|can\s+not|won['’]?t|am\s+(?:not\s+able|unable)|['’]m\s+(?:not\s+able|unable))\b/i,
  /^(?:i['’]m|i\s+am)\s+sorry\b/i,
  /^sorry\b/i,
  /^as\s+an?\s+(?:ai|language\s+model|assistant)\b/i,
  /^(?:unfortunately|i\s+apologi[sz]e)\b/i,
  /^(?:抱歉|对不起|很抱歉|我无法|我不能|作为一?个?\s*(?:AI|人工智能))/iu,
  /^(?:申し訳|すみません)/u,
];

const chars = (s: string) => Array.from(s);

/** Lower case, letters and digits only, single spaces: for comparing text loosely. */
function loose(s: string): string {
  return s
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim();
}

/**
 * A title from a model's answer, or undefined when the answer is not one: empty, a refusal,
 * longer than {@link MAX_TITLE_CHARS}, or an echo of `instructions` (the prompt we sent).
 */
export function cleanTitle(answer: string, instructions: string[]): string | undefined {
  const lines = answer.split(/\r?\n/).map((l) => l.trim()).filter(Boolean);
  // "Here is a title:" followed by the title on its own line.
  let line = lines[0] ?? '';
  if (/[:：]$/.test(line) && lines[1]) line = lines[1];
  let t = line
    .replace(/^#+\s*/, '')
    .replace(/^[-*•]\s+/, '')
    .replace(/\*\*|__|`/g, '')
    .trim();
  t = t.replace(PREFIX, '');
  for (let i = 0; i < 3; i++) t = t.replace(EDGE_QUOTES, '').replace(TRAILING, '').trim();
  t = t.replace(/\s+/g, ' ');
  if (!t || !/[\p{L}\p{N}]/u.test(t)) return undefined;
  if (chars(t).length > MAX_TITLE_CHARS) return undefined;
  if (REFUSAL.some((r) => r.test(t))) return undefined;
  if (isEcho(t, instructions)) return undefined;
  return t;
}

/** The title repeats our instructions (two words or more of them, verbatim), or carries the prompt's tags. */
function isEcho(title: string, instructions: string[]): boolean {
  if (/<\/?\s*(?:user_message|assistant_reply)/i.test(title)) return true;
  const l = loose(title);
  if (l.split(' ').length < 2) return false;
  return instructions.some((text) => ` ${loose(text)} `.includes(` ${l} `));
}

/** The first user text, whitespace collapsed, cut at a word boundary to {@link MAX_FALLBACK_CHARS} with "…". */
export function fallbackTitle(userText: string): string | undefined {
  const t = userText.replace(/\s+/g, ' ').trim();
  if (!t) return undefined;
  const cps = chars(t);
  if (cps.length <= MAX_FALLBACK_CHARS) return t;
  const head = cps.slice(0, MAX_FALLBACK_CHARS - 1).join('');
  // At the last space, unless that throws most of it away (text without spaces, e.g. Chinese).
  const space = head.lastIndexOf(' ');
  const cut = space >= head.length / 3 ? head.slice(0, space) : head;
  return `${cut.replace(TRAILING, '')}…`;
}
