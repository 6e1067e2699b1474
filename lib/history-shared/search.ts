/**
 * Conversation search, the part both backends share: how a search splits into words, how a word
 * becomes a LIKE pattern, and the snippet shown for a match. The queries that find the matches
 * are each dialect's (full-text trigram index on SQLite, ILIKE on PostgreSQL).
 */

/** LIKE pattern for a literal substring (`\` escapes %, _ and itself). */
export const likePattern = (s: string) => `%${s.replace(/[\\%_]/g, (ch) => `\\${ch}`)}%`;

/** The search's words (at most 16), each matched as a substring; every one must match. */
export function searchTerms(search: string): string[] {
  return search.trim().split(/\s+/).filter(Boolean).slice(0, 16);
}

const SNIPPET_BEFORE = 40;
const SNIPPET_LENGTH = 160;

/** A line's worth of `text` around the first term found in it, whitespace folded. */
export function snippetOf(text: string, terms: string[]): string {
  const lower = text.toLowerCase();
  const found = terms.map((t) => lower.indexOf(t.toLowerCase())).filter((i) => i >= 0);
  const at = found.length ? Math.min(...found) : 0;
  let start = Math.max(0, at - SNIPPET_BEFORE);
  // Start on a word when one begins shortly before the match.
  if (start > 0) {
    const space = text.indexOf(' ', start);
    if (space >= 0 && space < at) start = space + 1;
  }
  const end = Math.min(text.length, start + SNIPPET_LENGTH);
  return `${start > 0 ? '…' : ''}${text.slice(start, end).replace(/\s+/g, ' ').trim()}${end < text.length ? '…' : ''}`;
}
