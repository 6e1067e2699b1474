/**
 * Groups a conversation's messages into what the transcript shows: each user message, then one
 * reply bubble holding every assistant round up to the next user message, with each tool call
 * paired to its result (tool results travel in separate `tool` messages, matched by toolCallId).
 * Context checkpoints sit right before the first message they kept (or at the end; those whose
 * place is in an older page not loaded yet are left out), and the kernel's "continue" turn after
 * a mid-stream compaction is a note, not a user bubble.
 */
import type { EditedFile, Message, ToolResultBlock } from '../../../plugin-api.js';
import type { CheckpointView } from '../../../lib/gateway-protocol/protocol.js';

export interface ReplyRound {
  message: Message;
  live: boolean;
}

export type TranscriptItem =
  /** `covered`: a checkpoint summarized it, so it can no longer be edited and resent. */
  | { kind: 'user'; key: string; message: Message; pending: boolean; covered: boolean }
  | { kind: 'reply'; key: string; rounds: ReplyRound[]; results: Record<string, ToolResultBlock>; editedFiles: EditedFile[]; last: boolean }
  | { kind: 'checkpoint'; key: string; checkpoint: CheckpointView }
  | { kind: 'synthetic'; key: string; message: Message };

/** A user turn the kernel added (after a mid-stream compaction), not something the user typed. */
export function isSynthetic(m: Message): boolean {
  return m.role === 'user' && typeof m.meta?.synthetic === 'string';
}

/**
 * Where a checkpoint goes: before its first kept message; a live one whose kept message is not
 * known yet, after the message it came after; else at the end.
 */
type Placed = CheckpointView & { afterMessageId?: string };

export function buildTranscript(messages: Message[], live: Message | null, pendingUser: Message | null, checkpoints: Placed[] = []): TranscriptItem[] {
  const items: TranscriptItem[] = [];
  let reply: Extract<TranscriptItem, { kind: 'reply' }> | null = null;
  const ids = new Map(messages.map((m, i) => [m.id, i]));
  /** Index of the message each checkpoint goes before (messages.length: at the end). */
  const slot = (c: Placed) =>
    c.beforeMessageId && ids.has(c.beforeMessageId) ? ids.get(c.beforeMessageId)! : c.afterMessageId && ids.has(c.afterMessageId) ? ids.get(c.afterMessageId)! + 1 : messages.length;
  const before = new Map<number, Placed[]>();
  // A card whose place is in an older page not loaded yet waits for that page.
  const shown = checkpoints.filter((c) => !c.inOlderPage);
  for (const c of shown) {
    const at = slot(c);
    before.set(at, [...(before.get(at) ?? []), c]);
  }
  // Everything before the newest checkpoint's place is covered by it (nothing held, when that place is older still).
  const newest = checkpoints[checkpoints.length - 1];
  const coveredUpTo = newest && !newest.inOlderPage ? slot(newest) : 0;
  const card = (c: CheckpointView) => {
    reply = null;
    items.push({ kind: 'checkpoint', key: `checkpoint-${c.segmentId}`, checkpoint: c });
  };
  const openReply = (key: string) => {
    if (!reply) {
      reply = { kind: 'reply', key: `reply-${key}`, rounds: [], results: {}, editedFiles: [], last: false };
      items.push(reply);
    }
    return reply;
  };
  messages.forEach((m, i) => {
    for (const c of before.get(i) ?? []) card(c);
    if (isSynthetic(m)) {
      reply = null;
      items.push({ kind: 'synthetic', key: m.id, message: m });
    } else if (m.role === 'user') {
      reply = null;
      items.push({ kind: 'user', key: m.id, message: m, pending: false, covered: i < coveredUpTo });
    } else if (m.role === 'assistant') {
      const r = openReply(m.id);
      r.rounds.push({ message: m, live: false });
      if (m.editedFiles) r.editedFiles = mergeEdited(r.editedFiles, m.editedFiles);
    } else {
      const r = openReply(m.id);
      for (const b of m.content) if (b.type === 'tool_result') r.results[b.toolCallId] = b;
    }
  });
  for (const c of before.get(messages.length) ?? []) card(c);
  if (pendingUser) {
    reply = null;
    items.push({ kind: 'user', key: pendingUser.id, message: pendingUser, pending: true, covered: false });
  }
  if (live) openReply(live.id).rounds.push({ message: live, live: true });
  const lastReply = [...items].reverse().find((i) => i.kind === 'reply');
  if (lastReply && lastReply.kind === 'reply') lastReply.last = true;
  return items;
}

/** Merge edited-file lists by path; the latest action wins. */
export function mergeEdited(a: EditedFile[], b: EditedFile[]): EditedFile[] {
  const map = new Map(a.map((f) => [f.path, f]));
  for (const f of b) map.set(f.path, f);
  return [...map.values()];
}

const FILE_BLOCK = /^<file name="([^"]*)">\n([\s\S]*)\n<\/file>$/;

/** An attached text file as the gateway stores it: `<file name="...">\n...\n</file>`. */
export function parseFileBlock(text: string): { name: string; content: string } | null {
  const m = FILE_BLOCK.exec(text);
  return m ? { name: m[1]!, content: m[2]! } : null;
}

/** The typed text of a user message (its text blocks, attached files left out). */
export function userText(m: Message): string {
  return m.content
    .flatMap((b) => (b.type === 'text' && !parseFileBlock(b.text) ? [b.text] : []))
    .join('\n');
}
