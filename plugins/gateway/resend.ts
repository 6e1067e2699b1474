/**
 * What edit-and-resend and regenerate need of the stored history: the last real user message of
 * a conversation (regenerate resends it), and how many messages a truncation at a message
 * removes (the message itself and everything after it), so a client can say so before it asks.
 * `conversations.truncate_preview { conversationId, messageId }` answers that count.
 */
import { z } from 'zod';
import type { Message } from '../../plugin-api.js';
import { ReplyError } from './chat-runs.js';
import type { GatewayHistory } from './history.js';
import { MAX_PAGE_MESSAGES } from '../../lib/gateway-protocol/protocol.js';

/** The message a client sends to learn what a truncation at `messageId` would remove. */
export const TruncatePreviewSchema = z.object({
  type: z.literal('conversations.truncate_preview'),
  id: z.string().min(1).max(200).optional(),
  conversationId: z.string().regex(/^[A-Za-z0-9_-]{1,128}$/, 'must be 1-128 letters, digits, _ or -'),
  messageId: z.string().min(1).max(200),
});

/** Its reply's `data`. */
export interface TruncatePreview {
  conversationId: string;
  messageId: string;
  /** Stored messages that go: the message itself and every later one. */
  removedCount: number;
}

/** Walk the stored messages from the newest back, a page at a time, until `stop` says so. */
async function walkBack(history: GatewayHistory, conversationId: string, stop: (m: Message, fromEnd: number) => boolean): Promise<boolean> {
  const first = await history.get(conversationId, MAX_PAGE_MESSAGES);
  if (!first) throw new ReplyError('not_found', `unknown conversation "${conversationId}"`);
  let page: { messages: Message[]; hasMore: boolean; firstOrdinal?: number } = first;
  let seen = 0;
  for (;;) {
    for (let i = page.messages.length - 1; i >= 0; i--) {
      seen++;
      if (stop(page.messages[i]!, seen)) return true;
    }
    if (!page.hasMore || !page.firstOrdinal) return false;
    const older = await history.page(conversationId, page.firstOrdinal, MAX_PAGE_MESSAGES);
    if (!older || !older.messages.length) return false;
    page = older;
  }
}

/** How many stored messages a truncation at `messageId` removes; a not_found ReplyError when it is not stored. */
export async function removedCount(history: GatewayHistory, conversationId: string, messageId: string): Promise<number> {
  let count = 0;
  const found = await walkBack(history, conversationId, (m, n) => {
    if (m.id !== messageId) return false;
    count = n;
    return true;
  });
  if (!found) throw new ReplyError('not_found', `message "${messageId}" is not in conversation "${conversationId}"`);
  return count;
}

/** The newest user message the user wrote (not a synthetic one the kernel added), with how many messages from it on are stored. */
export async function lastUserMessage(history: GatewayHistory, conversationId: string): Promise<{ message: Message; removedCount: number }> {
  let out: { message: Message; removedCount: number } | undefined;
  await walkBack(history, conversationId, (m, n) => {
    if (m.role !== 'user' || m.meta?.synthetic || m.meta?.partial) return false;
    out = { message: m, removedCount: n };
    return true;
  });
  if (!out) throw new ReplyError('not_found', `conversation "${conversationId}" has no user message to regenerate from`);
  return out;
}

/** The `conversations.truncate_preview` handler. */
export function truncatePreviewHandler(history: GatewayHistory) {
  return async (raw: unknown): Promise<TruncatePreview> => {
    const r = TruncatePreviewSchema.safeParse(raw);
    if (!r.success) {
      const issue = r.error.issues[0]!;
      throw new ReplyError('bad_request', `${issue.path.join('.') || 'message'}: ${issue.message}`);
    }
    const { conversationId, messageId } = r.data;
    return { conversationId, messageId, removedCount: await removedCount(history, conversationId, messageId) };
  };
}
