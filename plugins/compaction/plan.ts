/**
 * What a compaction covers and keeps: the boundary (recent history kept verbatim, never between
 * a tool call and its result, never past the newest user message), the file ledger of what the
 * covered part did, and which old tool outputs a prune may cut.
 */
import type { FileLedger, Message, ToolCallBlock, ToolResultBlock } from '../../plugin-api.js';
import type { MessageCounter } from './tokens.js';

/**
 * Index of the first kept message: walk back from the end until `keepTokens` are kept, then
 * move to a message that is not a tool result (its call stays with it), and back to the user
 * message that opened that turn when there is one (else, with `allowSplit`, between rounds of
 * that one long turn). `latest` is the
 * highest index the boundary may take (the newest user message, which is never covered).
 * 0 means nothing can be covered.
 */
export function chooseBoundary(window: Message[], counter: MessageCounter, keepTokens: number, latest: number, allowSplit = true): number {
  let at = window.length;
  let kept = 0;
  while (at > 0 && kept < keepTokens) {
    at--;
    kept += counter.tokensOf(window[at]!);
  }
  at = Math.min(at, latest);
  while (at > 0 && window[at]?.role === 'tool') at--;
  // Prefer a turn boundary: keep the user message together with the replies to it.
  if (at >= window.length) return at; // everything is covered (a manual compaction keeping nothing)
  let turn = at;
  while (turn > 0 && window[turn]!.role !== 'user') turn--;
  // Inside the first turn: only a long agent turn (allowSplit) is cut between its rounds.
  return turn > 0 || !allowSplit ? turn : at;
}

/** Index of the newest user message the user typed (synthetic turns count too: they are what the model answers). */
export function lastUserIndex(window: Message[]): number {
  for (let i = window.length - 1; i >= 0; i--) if (window[i]!.role === 'user') return i;
  return -1;
}

/** The results of a message's tool calls, by call id (they travel in the next `tool` message). */
function resultsAfter(window: Message[], i: number): Map<string, ToolResultBlock> {
  const next = window[i + 1];
  const out = new Map<string, ToolResultBlock>();
  if (next?.role === 'tool') for (const b of next.content) if (b.type === 'tool_result') out.set(b.toolCallId, b);
  return out;
}

const pathOf = (call: ToolCallBlock): string | undefined => {
  const p = call.input.file_path ?? call.input.path;
  return typeof p === 'string' && p ? p : undefined;
};

/** What the covered messages read and changed, merged into the earlier ledger. */
export function mergeLedger(previous: FileLedger | undefined, covered: Message[]): FileLedger {
  const read = new Set(previous?.read ?? []);
  const modified = new Set(previous?.modified ?? []);
  covered.forEach((m, i) => {
    if (m.role !== 'assistant') return;
    // Only successful Write / Edit / Delete results count as changes (the kernel's ledger).
    for (const e of m.editedFiles ?? []) {
      modified.delete(e.path);
      modified.add(e.path);
    }
    const results = resultsAfter(covered, i);
    for (const b of m.content) {
      if (b.type !== 'tool_call' || b.name !== 'Read') continue;
      const p = pathOf(b);
      const r = results.get(b.id);
      if (p && r && !r.isError) {
        read.delete(p);
        read.add(p);
      }
    }
  });
  for (const p of modified) read.delete(p);
  return { read: [...read], modified: [...modified] };
}

/** The most recent file paths and shell commands in `messages` (newest first), for checking a summary. */
export function recentFacts(messages: Message[], files = 3, commands = 2): { files: string[]; commands: string[] } {
  const f: string[] = [];
  const c: string[] = [];
  for (let i = messages.length - 1; i >= 0 && (f.length < files || c.length < commands); i--) {
    const m = messages[i]!;
    if (m.role !== 'assistant') continue;
    for (const e of [...(m.editedFiles ?? [])].reverse()) if (f.length < files && !f.includes(e.path)) f.push(e.path);
    const results = resultsAfter(messages, i);
    for (const b of [...m.content].reverse()) {
      if (b.type !== 'tool_call' || results.get(b.id)?.isError) continue;
      const p = pathOf(b);
      if (p && f.length < files && !f.includes(p)) f.push(p);
      const cmd = b.name === 'Bash' && typeof b.input.command === 'string' ? b.input.command.trim() : '';
      if (cmd && c.length < commands && !c.includes(cmd)) c.push(cmd);
    }
  }
  return { files: f, commands: c };
}

export interface PruneCandidate {
  toolCallId: string;
  tokens: number;
}

/**
 * Tool outputs a prune may cut, oldest first: not already pruned, not in the two newest user
 * turns (the model is working with those), and big enough to be worth a placeholder.
 */
export function pruneCandidates(window: Message[], counter: MessageCounter, already: ReadonlySet<string>): PruneCandidate[] {
  let protectFrom = window.length;
  let turns = 0;
  for (let i = window.length - 1; i >= 0 && turns < 2; i--) {
    if (window[i]!.role === 'user') {
      turns++;
      protectFrom = i;
    }
  }
  const out: PruneCandidate[] = [];
  for (let i = 0; i < protectFrom; i++) {
    const m = window[i]!;
    if (m.role !== 'tool') continue;
    for (const b of m.content) {
      if (b.type !== 'tool_result' || already.has(b.toolCallId)) continue;
      const tokens = counter.tokensOf({ id: `${m.id}/${b.toolCallId}`, role: 'tool', content: [b], createdAt: m.createdAt });
      if (tokens > 60) out.push({ toolCallId: b.toolCallId, tokens });
    }
  }
  return out;
}
