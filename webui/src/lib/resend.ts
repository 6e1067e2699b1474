/**
 * Edit-and-resend truncates history at a user message: what goes is everything after it. Counted
 * the way the transcript shows it (a reply of several rounds and tool results is one message),
 * from the loaded messages: the newest page always holds the chosen message and all after it.
 */
import type { Message } from '../../../plugin-api.js';
import { isSynthetic } from './transcript.js';

export interface LaterMessages {
  /** Messages the user sees after the chosen one: `yours` + `replies`. */
  total: number;
  /** Later messages the user typed. */
  yours: number;
  /** Later replies (each reply bubble once). */
  replies: number;
}

/** What resending `messageId` removes, or null when the message is not loaded. */
export function laterMessages(messages: readonly Message[], messageId: string): LaterMessages | null {
  const at = messages.findIndex((m) => m.id === messageId);
  if (at < 0) return null;
  let yours = 0;
  let replies = 0;
  let inReply = false;
  for (const m of messages.slice(at + 1)) {
    if (m.role === 'user') {
      inReply = false;
      if (!isSynthetic(m)) yours++;
    } else if (!inReply) {
      inReply = true;
      replies++;
    }
  }
  return { total: yours + replies, yours, replies };
}

/**
 * Ask first when the resend takes more than the message's own reply: replacing that reply is
 * what a resend is for, losing later turns is not.
 */
export function needsConfirm(later: LaterMessages | null): boolean {
  return !!later && later.yours > 0;
}

export function confirmText(later: LaterMessages): string {
  const n = later.total;
  const parts = [later.yours ? `${later.yours} of yours` : '', later.replies ? `${later.replies} ${later.replies === 1 ? 'reply' : 'replies'}` : ''].filter(Boolean);
  return `Resending removes the ${n} later ${n === 1 ? 'message' : 'messages'} (${parts.join(', ')}).`;
}
