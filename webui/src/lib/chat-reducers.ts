/**
 * The chat store's pure parts: what a message being sent looks like (its optimistic bubble and
 * its wire form), how the queue changes before the server says so, how approval events fold in,
 * and the few derived values (a title, a compaction's outcome line). No client, no store here.
 */
import type { CompactionOutcome, ContentBlock, LifecycleEvent, Message } from '../../../plugin-api.js';
import type { QueuedItem } from '../../../lib/gateway-protocol/protocol.js';
import { applyApprovalEvent, settleLeftovers, type ApprovalMap } from '../components/tool-approval/approval-model.js';
import type { CompactionNotice, ConversationState } from './conversation-state.js';
import { attachmentBlock, isAttachmentBlock } from './media.js';
import { isSynthetic, userText } from './transcript.js';
import type { UploadResult } from './uploads.js';

export interface SendInput {
  text: string;
  /** Files staged with `POST /api/uploads`; the message names them by uploadId. */
  attachments?: UploadResult[];
}

/** The files of a message as the server takes them. */
export interface WireAttachments {
  attachments?: Array<{ uploadId: string }>;
}

/** The content blocks a message will have, for the optimistic bubble. */
export function blocksOf(input: SendInput): ContentBlock[] {
  const blocks: ContentBlock[] = [];
  if (input.text.trim()) blocks.push({ type: 'text', text: input.text });
  for (const a of input.attachments ?? []) blocks.push(attachmentBlock(a));
  return blocks;
}

/** The bubble shown for a message the server has not echoed yet. */
export function pendingMessage(clientRequestId: string, input: SendInput, now = Date.now()): Message {
  return { id: `pending-${clientRequestId}`, role: 'user', content: blocksOf(input), createdAt: now, meta: { pending: true } };
}

/** The staged files a stored user message carries, to resend it with them. */
export function attachmentsOf(m: Message): UploadResult[] {
  return (m.content as unknown[]).flatMap((b): UploadResult[] =>
    isAttachmentBlock(b) ? [{ uploadId: b.uploadId, name: b.name, path: b.path, mediaType: b.mediaType, size: b.size }] : [],
  );
}

/** The wire form of a message's files: `{ uploadId }` each (the server knows the rest). */
export function wireAttachments(input: SendInput): WireAttachments {
  return input.attachments?.length ? { attachments: input.attachments.map((a) => ({ uploadId: a.uploadId })) } : {};
}

/** Index of the last message the user typed (not a synthetic one), or -1. */
export function lastUserIndex(messages: readonly Message[]): number {
  return messages.findLastIndex((m) => m.role === 'user' && !isSynthetic(m));
}

/**
 * The queue once a run started with `userMessage`: the queued item it came from leaves. The
 * server's `queue` message says so too, but that message is not replayed after a reconnect, so
 * the run itself is the evidence. The same array when no item matches.
 */
export function withoutStarted(queue: QueuedItem[], userMessage: Message | undefined): QueuedItem[] {
  if (!userMessage || !queue.length) return queue;
  const text = userText(userMessage);
  const at = queue.findIndex((q) => q.text === text);
  return at >= 0 ? queue.filter((_, i) => i !== at) : queue;
}

export type QueueAction =
  | { action: 'queue_remove' | 'queue_send_now'; itemId: string }
  | { action: 'queue_edit'; itemId: string; text: string }
  | { action: 'queue_reorder'; itemIds: string[] };

/**
 * The queue as it will be once the server applied `item`, shown at once (the server's `queue`
 * broadcast is the truth and overwrites it). Send-now changes nothing until the run starts.
 */
export function queueAfter(queue: QueuedItem[], item: QueueAction): QueuedItem[] {
  if (item.action === 'queue_remove') return queue.filter((q) => q.itemId !== item.itemId);
  if (item.action === 'queue_edit') return queue.map((q) => (q.itemId === item.itemId ? { ...q, text: item.text } : q));
  if (item.action === 'queue_reorder') return item.itemIds.map((x) => queue.find((q) => q.itemId === x)!).filter(Boolean);
  return queue;
}

/** The conversation whose queue holds `itemId`. */
export function ownerOfQueueItem(states: Record<string, ConversationState>, itemId: string): ConversationState | undefined {
  return Object.values(states).find((x) => x.queue.some((q) => q.itemId === itemId));
}

/**
 * Fold approval events into `map`. A run's end settles what it left pending, and so does a
 * conversation that is not running (a snapshot's pending events of a run that is over).
 */
export function foldApprovalEvents(map: ApprovalMap, events: readonly LifecycleEvent[], running = true): void {
  for (const ev of events) {
    applyApprovalEvent(map, ev);
    if (ev.type === 'agent_end') settleLeftovers(map);
  }
  if (!running) settleLeftovers(map);
}

/** The line a compact-now outcome leaves: nothing when it compacted (its events show that). */
export function compactionNoticeOf(out: Pick<CompactionOutcome, 'status' | 'reason'> | undefined | null): CompactionNotice | null {
  if (out?.status === 'skipped') return { kind: 'info', text: `Nothing to compact${out.reason ? `: ${out.reason}` : ''}.` };
  if (out?.status === 'failed') return { kind: 'error', text: `Compacting the context failed${out.reason ? `: ${out.reason}` : ''}.` };
  return null;
}

/** A title for display: the stored one, else the first thing the user said, else a placeholder. */
export function titleText(s: ConversationState | undefined, stored: string | null | undefined): string {
  if (stored) return stored;
  // With older pages not loaded, the first user message held is not the conversation's first.
  const first = s?.hasMore ? undefined : (s?.messages.find((m) => m.role === 'user' && !isSynthetic(m)) ?? s?.pendingUser);
  const text = first ? userText(first).trim().split('\n')[0] : '';
  return text ? (text.length > 60 ? `${text.slice(0, 57)}…` : text) : 'New conversation';
}
