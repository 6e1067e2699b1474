/**
 * What Write and Edit put in their result's `details.diff` so a UI can show what changed: the
 * changed region of the file before and after (with a few lines of context), as text, never a
 * computed diff (a client diffs it; the server has no diff library at runtime). Bounded: past
 * DIFF_MAX_CHARS the texts are left out and the diff says why, as it does for a binary file.
 * Details are stored with the tool result in history and never sent to the model.
 */
import type { JsonObject } from '../../plugin-api.js';

/** oldText and newText together at most this many characters. */
export const DIFF_MAX_CHARS = 100_000;
/** Lines of unchanged context kept around an edit. */
export const DIFF_CONTEXT_LINES = 3;

/** One changed region: lines `oldStart…` of the file before and `newStart…` after (1-based). */
export interface DiffRegion {
  oldStart: number;
  newStart: number;
  oldText: string;
  newText: string;
}

export type DiffDetails = { regions: DiffRegion[] } | { omitted: 'too_large' | 'binary' | 'unreadable' };

export function diffJson(d: DiffDetails): JsonObject {
  return d as unknown as JsonObject;
}

/** A whole file replaced (Write): `before` null when it was created; `binary` when the old content was not text. */
export function wholeFileDiff(before: string | null, after: string, opts: { binary?: boolean; tooLarge?: boolean } = {}): DiffDetails {
  if (opts.binary) return { omitted: 'binary' };
  if (opts.tooLarge || (before?.length ?? 0) + after.length > DIFF_MAX_CHARS) return { omitted: 'too_large' };
  return { regions: [{ oldStart: before === null || before === '' ? 0 : 1, newStart: after === '' ? 0 : 1, oldText: before ?? '', newText: after }] };
}

/**
 * The region an edit changed: from `first` (index of the first replaced character in `before`)
 * to `lastEnd` (index just past the last replaced character), widened to whole lines and
 * DIFF_CONTEXT_LINES around. Text outside the replacements is the same in both, so the lines
 * after the region in `before` are those after it in `after`, shifted by the change in line count.
 */
export function editRegionDiff(before: string, after: string, first: number, lastEnd: number): DiffDetails {
  const oldLines = before.split('\n');
  const newLines = after.split('\n');
  const lineAt = (i: number) => {
    let n = 0;
    for (let p = before.indexOf('\n'); p >= 0 && p < i; p = before.indexOf('\n', p + 1)) n++;
    return n;
  };
  const from = Math.max(0, lineAt(first) - DIFF_CONTEXT_LINES);
  const lastLine = lineAt(Math.max(first, lastEnd - 1));
  const oldTo = Math.min(oldLines.length - 1, lastLine + DIFF_CONTEXT_LINES);
  // Lines past oldTo are unchanged and as many in both texts.
  const newTo = newLines.length - 1 - (oldLines.length - 1 - oldTo);
  const oldText = oldLines.slice(from, oldTo + 1).join('\n');
  const newText = newLines.slice(from, newTo + 1).join('\n');
  if (oldText.length + newText.length > DIFF_MAX_CHARS) return { omitted: 'too_large' };
  return { regions: [{ oldStart: from + 1, newStart: from + 1, oldText, newText }] };
}
