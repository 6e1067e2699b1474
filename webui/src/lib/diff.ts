/**
 * What Write and Edit changed, for the diff view: their result's `details.diff` (the changed
 * regions before and after, see lib/tool-shared/diff-details.ts) turned into unified-diff
 * lines with old and new line numbers.
 */
import { structuredPatch } from 'diff';
import type { Message, ToolCallBlock, ToolResultBlock } from '../../../plugin-api.js';

export interface DiffRegion {
  oldStart: number;
  newStart: number;
  oldText: string;
  newText: string;
}
export type DiffDetails = { regions: DiffRegion[] } | { omitted: string };

export interface DiffLine {
  kind: 'add' | 'del' | 'ctx' | 'gap';
  text: string;
  oldNo?: number;
  newNo?: number;
}

export interface RenderedDiff {
  lines: DiffLine[];
  added: number;
  removed: number;
  /** Why no lines are shown ('too_large', 'binary', 'unreadable'); absent when they are. */
  omitted?: string;
}

/** The `details.diff` of a Write or Edit result, when it has a usable one. */
export function diffOf(result: ToolResultBlock | undefined): DiffDetails | undefined {
  const d = result && !result.isError ? (result.details as { diff?: unknown } | undefined)?.diff : undefined;
  if (!d || typeof d !== 'object') return undefined;
  const x = d as { regions?: unknown; omitted?: unknown };
  if (typeof x.omitted === 'string') return { omitted: x.omitted };
  if (!Array.isArray(x.regions)) return undefined;
  const regions = x.regions.filter(
    (r): r is DiffRegion => !!r && typeof r === 'object' && typeof r.oldText === 'string' && typeof r.newText === 'string' && typeof r.oldStart === 'number' && typeof r.newStart === 'number',
  );
  return { regions };
}

/** Unified-diff lines with three lines of context, numbered as in the file. */
export function renderDiff(d: DiffDetails, context = 3): RenderedDiff {
  if ('omitted' in d) return { lines: [], added: 0, removed: 0, omitted: d.omitted };
  const lines: DiffLine[] = [];
  let added = 0;
  let removed = 0;
  for (const r of d.regions) {
    const patch = structuredPatch('a', 'b', r.oldText, r.newText, '', '', { context });
    // A region starts at line oldStart of the file (0 for an empty side: new or emptied file).
    const oldBase = Math.max(0, r.oldStart - 1);
    const newBase = Math.max(0, r.newStart - 1);
    for (const h of patch.hunks) {
      if (lines.length) lines.push({ kind: 'gap', text: '⋯' });
      let o = h.oldStart + oldBase;
      let n = h.newStart + newBase;
      for (const l of h.lines) {
        const mark = l[0];
        const text = l.slice(1);
        if (mark === '+') {
          lines.push({ kind: 'add', text, newNo: n++ });
          added++;
        } else if (mark === '-') {
          lines.push({ kind: 'del', text, oldNo: o++ });
          removed++;
        } else if (mark === ' ') lines.push({ kind: 'ctx', text, oldNo: o++, newNo: n++ });
        // '\ No newline at end of file' says nothing a reader needs here.
      }
    }
  }
  return { lines, added, removed };
}

export interface FileDiff {
  callId: string;
  tool: string;
  path: string;
  diff: DiffDetails;
}

/** Every Write and Edit of a reply that has a diff, in order, with the file it changed. */
export function replyDiffs(messages: Message[], resultOf: (call: ToolCallBlock) => ToolResultBlock | undefined): FileDiff[] {
  const out: FileDiff[] = [];
  for (const m of messages) {
    for (const b of m.content) {
      if (b.type !== 'tool_call' || (b.name !== 'Write' && b.name !== 'Edit')) continue;
      const result = resultOf(b);
      const diff = diffOf(result);
      const p = (result?.details as { path?: unknown } | undefined)?.path;
      if (diff && typeof p === 'string') out.push({ callId: b.id, tool: b.name, path: p, diff });
    }
  }
  return out;
}
