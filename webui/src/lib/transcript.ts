/**
 * Groups a conversation's messages into what the transcript shows: each user message, then one
 * reply bubble holding every assistant round up to the next user message, with each tool call
 * paired to its result (tool results travel in separate `tool` messages, matched by toolCallId).
 */
import type { EditedFile, Message, ToolResultBlock } from '../../../plugin-api.js';

export interface ReplyRound {
  message: Message;
  live: boolean;
}

export type TranscriptItem =
  | { kind: 'user'; key: string; message: Message; pending: boolean }
  | { kind: 'reply'; key: string; rounds: ReplyRound[]; results: Record<string, ToolResultBlock>; editedFiles: EditedFile[]; last: boolean };

export function buildTranscript(messages: Message[], live: Message | null, pendingUser: Message | null): TranscriptItem[] {
  const items: TranscriptItem[] = [];
  let reply: Extract<TranscriptItem, { kind: 'reply' }> | null = null;
  const openReply = (key: string) => {
    if (!reply) {
      reply = { kind: 'reply', key: `reply-${key}`, rounds: [], results: {}, editedFiles: [], last: false };
      items.push(reply);
    }
    return reply;
  };
  for (const m of messages) {
    if (m.role === 'user') {
      reply = null;
      items.push({ kind: 'user', key: m.id, message: m, pending: false });
    } else if (m.role === 'assistant') {
      const r = openReply(m.id);
      r.rounds.push({ message: m, live: false });
      if (m.editedFiles) r.editedFiles = mergeEdited(r.editedFiles, m.editedFiles);
    } else {
      const r = openReply(m.id);
      for (const b of m.content) if (b.type === 'tool_result') r.results[b.toolCallId] = b;
    }
  }
  if (pendingUser) {
    reply = null;
    items.push({ kind: 'user', key: pendingUser.id, message: pendingUser, pending: true });
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

/** Names and sizes of text files attached to a user message. */
export function userFiles(m: Message): Array<{ name: string; chars: number }> {
  return m.content.flatMap((b) => {
    const f = b.type === 'text' ? parseFileBlock(b.text) : null;
    return f ? [{ name: f.name, chars: f.content.length }] : [];
  });
}
