/**
 * The memory overview placed in the system prompt (stage MEMORY): an index of the memory files
 * of both scopes (path, size, first line) within a line and byte budget, so the model knows
 * what it remembers and views a file when it needs the details. Contents are not inlined: the
 * index stays small however much is remembered (Claude Code loads 200 lines / 25 KB of its
 * MEMORY.md index; ours is generated, so it cannot drift from the files).
 */
import { neutralizeClosingTag } from '../../core/define-plugin.js';
import { humanSize, type MemoryFileInfo } from './files.js';

export interface OverviewBudget {
  maxLines: number;
  maxBytes: number;
}

/** The overview text, or undefined when nothing is remembered. `tool`: the Memory tool is offered. */
export function overviewText(files: Array<Pick<MemoryFileInfo, 'path' | 'size' | 'firstLine'>>, budget: OverviewBudget, tool: boolean): string | undefined {
  if (!files.length) return undefined;
  const head = [
    '<memory>',
    tool
      ? 'Your long-term memory: files kept with the Memory tool (the user\'s under /memories, this project\'s under /memories/project). Each line gives a file, its size and its first line. View a file with the Memory tool before relying on its details; keep memories current (fix or delete what is wrong).'
      : 'Your long-term memory (files under /memories; this project\'s under /memories/project), each with its size and first line. The Memory tool is not available in this mode.',
  ];
  const tail = '</memory>';
  let bytes = Buffer.byteLength(head.join('\n')) + Buffer.byteLength(tail) + 2;
  const lines: string[] = [];
  let shown = 0;
  for (const f of files) {
    const line = `- ${f.path} (${humanSize(f.size)})${f.firstLine ? `: ${f.firstLine}` : ''}`;
    const cost = Buffer.byteLength(line) + 1;
    // Room for the "more files" note is kept back whenever a line would not fit.
    if (lines.length + head.length + 2 >= budget.maxLines || bytes + cost + 80 > budget.maxBytes) break;
    lines.push(line);
    bytes += cost;
    shown++;
  }
  if (shown < files.length) lines.push(`- ... and ${files.length - shown} more files: view /memories to see them all.`);
  // First lines are the files' own words: none may close the wrapper early.
  return [...head, neutralizeClosingTag(lines.join('\n'), 'memory'), tail].join('\n');
}
