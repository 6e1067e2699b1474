/**
 * The chat store's pure parts without a browser: the optimistic bubble and wire form of a
 * message being sent, how the queue changes before the server says so (and when a run started
 * from it), approval events folded per conversation, the outcome line of compact-now, and the
 * title shown for a conversation.
 */
import { describe, expect, it } from 'vitest';
import type { LifecycleEvent, Message } from '../../plugin-api.js';
import type { QueuedItem } from '../../lib/gateway-protocol/protocol.js';
import type { ApprovalMap } from '../../webui/src/components/tool-approval/approval-model.js';
import {
  attachmentsOf,
  blocksOf,
  compactionNoticeOf,
  foldApprovalEvents,
  lastUserIndex,
  ownerOfQueueItem,
  pendingMessage,
  queueAfter,
  titleText,
  wireAttachments,
  withoutStarted,
} from '../../webui/src/lib/chat-reducers.js';
import { emptyState } from '../../webui/src/lib/conversation-state.js';
import type { UploadResult } from '../../webui/src/lib/uploads.js';

const upload = (name: string): UploadResult => ({ uploadId: `up_${name}`, name, path: `/home/u/uploads/${name}`, size: 10, mediaType: 'image/png' });
const user = (id: string, text: string, meta?: Message['meta']): Message => ({ id, role: 'user', content: [{ type: 'text', text }], createdAt: 1, ...(meta ? { meta } : {}) });
const reply = (id: string): Message => ({ id, role: 'assistant', content: [{ type: 'text', text: 'ok' }], createdAt: 2 });
const queued = (itemId: string, text: string): QueuedItem => ({ itemId, text, clientRequestId: `req-${itemId}`, createdAt: 1 });
const ev = (e: Record<string, unknown>): LifecycleEvent => ({ seq: 1, ts: 1, conversationId: 'c1', runId: 'r1', ...e }) as unknown as LifecycleEvent;
const asked = (toolCallId: string, runId = 'r1') =>
  ev({ type: 'custom', name: 'tool_approval', runId, payload: { toolCallId, conversationId: 'c1', runId, toolName: 'bash', args: {}, summary: 'ls', subject: 'command', rule: null, deadlineAt: 9 } });
const settled = (toolCallId: string) => ev({ type: 'custom', name: 'tool_approval_settled', payload: { toolCallId, conversationId: 'c1', toolName: 'bash', outcome: 'approved', approved: true } });

describe('WebUI chat: a message being sent', () => {
  it('its bubble holds the text and the staged files, marked pending under the request id', () => {
    const m = pendingMessage('req1', { text: 'look', attachments: [upload('a.png')] }, 42);
    expect(m).toMatchObject({ id: 'pending-req1', role: 'user', createdAt: 42, meta: { pending: true } });
    expect(m.content).toEqual([{ type: 'text', text: 'look' }, { type: 'attachment', uploadId: 'up_a.png', name: 'a.png', path: '/home/u/uploads/a.png', mediaType: 'image/png', size: 10 }]);
  });

  it('blank text gives no text block; files alone still make a message', () => {
    expect(blocksOf({ text: '  \n' })).toEqual([]);
    expect(blocksOf({ text: ' ', attachments: [upload('b.png')] }).map((b) => b.type)).toEqual(['attachment']);
  });

  it('the wire names files by uploadId only, and carries no attachments field without files', () => {
    expect(wireAttachments({ text: 'x', attachments: [upload('a.png'), upload('b.png')] })).toEqual({ attachments: [{ uploadId: 'up_a.png' }, { uploadId: 'up_b.png' }] });
    expect(wireAttachments({ text: 'x', attachments: [] })).toEqual({});
    expect(wireAttachments({ text: 'x' })).toEqual({});
  });

  it('a stored message gives back the files it was sent with (to resend it with them)', () => {
    const m = pendingMessage('req1', { text: 'look', attachments: [upload('a.png')] });
    expect(attachmentsOf(m)).toEqual([upload('a.png')]);
    expect(attachmentsOf(user('u1', 'plain'))).toEqual([]);
  });

  it('the last user message is the last one typed, not one the kernel added', () => {
    const msgs = [user('u1', 'one'), reply('a1'), user('u2', 'two'), reply('a2'), user('s1', 'continue', { synthetic: 'compaction' }), reply('a3')];
    expect(lastUserIndex(msgs)).toBe(2);
    expect(lastUserIndex([reply('a1')])).toBe(-1);
  });
});

describe('WebUI chat: the queue', () => {
  const q = [queued('i1', 'first'), queued('i2', 'second'), queued('i3', 'third')];

  it('remove, edit and reorder show at once; send-now leaves the queue as it is', () => {
    expect(queueAfter(q, { action: 'queue_remove', itemId: 'i2' }).map((x) => x.itemId)).toEqual(['i1', 'i3']);
    expect(queueAfter(q, { action: 'queue_edit', itemId: 'i2', text: 'changed' }).map((x) => x.text)).toEqual(['first', 'changed', 'third']);
    expect(queueAfter(q, { action: 'queue_reorder', itemIds: ['i3', 'gone', 'i1', 'i2'] }).map((x) => x.itemId)).toEqual(['i3', 'i1', 'i2']);
    expect(queueAfter(q, { action: 'queue_send_now', itemId: 'i2' })).toBe(q);
    expect(q.map((x) => x.text)).toEqual(['first', 'second', 'third']);
  });

  it('a run that started from a queued item takes the first item with its text off the queue', () => {
    const dup = [...q, queued('i4', 'second')];
    expect(withoutStarted(dup, user('u9', 'second')).map((x) => x.itemId)).toEqual(['i1', 'i3', 'i4']);
    expect(withoutStarted(q, user('u9', 'typed directly'))).toBe(q);
    expect(withoutStarted(q, undefined)).toBe(q);
  });

  it('a failed queued item is reported on the conversation whose queue holds it', () => {
    const a = emptyState('a');
    const b = emptyState('b');
    b.queue = [queued('i7', 'x')];
    expect(ownerOfQueueItem({ a, b }, 'i7')).toBe(b);
    expect(ownerOfQueueItem({ a, b }, 'nope')).toBeUndefined();
  });
});

describe('WebUI chat: approvals', () => {
  it('a request then its settlement; a new run drops the settled cards of the last one', () => {
    const map: ApprovalMap = {};
    foldApprovalEvents(map, [asked('t1'), asked('t2'), settled('t1')]);
    expect(map.t1?.settled?.outcome).toBe('approved');
    expect(map.t2?.settled).toBeUndefined();
    foldApprovalEvents(map, [ev({ type: 'agent_start', runId: 'r1' })]);
    expect(Object.keys(map)).toEqual(['t2']);
  });

  it('what a run leaves pending at its end, or in a snapshot of a conversation not running, shows as cancelled', () => {
    const ended: ApprovalMap = {};
    foldApprovalEvents(ended, [asked('t1'), ev({ type: 'agent_end' })]);
    expect(ended.t1?.settled).toMatchObject({ outcome: 'cancelled', approved: false });
    const idle: ApprovalMap = {};
    foldApprovalEvents(idle, [asked('t2')], false);
    expect(idle.t2?.settled?.outcome).toBe('cancelled');
    const live: ApprovalMap = {};
    foldApprovalEvents(live, [asked('t3')], true);
    expect(live.t3?.settled).toBeUndefined();
  });
});

describe('WebUI chat: derived values', () => {
  it('compact-now says why nothing was compacted, or that it failed; a compaction itself leaves no line', () => {
    expect(compactionNoticeOf({ status: 'skipped', reason: 'too short' })).toEqual({ kind: 'info', text: 'Nothing to compact: too short.' });
    expect(compactionNoticeOf({ status: 'skipped' })).toEqual({ kind: 'info', text: 'Nothing to compact.' });
    expect(compactionNoticeOf({ status: 'failed', reason: 'no model' })).toEqual({ kind: 'error', text: 'Compacting the context failed: no model.' });
    expect(compactionNoticeOf({ status: 'compacted' })).toBeNull();
    expect(compactionNoticeOf(undefined)).toBeNull();
  });

  it('a title is the stored one, else the first line the user typed (cut at 60), else a placeholder', () => {
    const s = emptyState('c1');
    expect(titleText(s, 'Stored')).toBe('Stored');
    expect(titleText(undefined, null)).toBe('New conversation');
    expect(titleText(s, null)).toBe('New conversation');
    s.messages = [user('s0', 'continue', { synthetic: 'compaction' }), user('u1', '  Fix the build\nand more'), reply('a1')];
    expect(titleText(s, null)).toBe('Fix the build');
    s.messages = [user('u1', 'x'.repeat(80))];
    expect(titleText(s, undefined)).toBe(`${'x'.repeat(57)}…`);
  });

  it('the pending bubble names a new chat; with older pages not loaded the first message held is not the first', () => {
    const s = emptyState('c1');
    s.pendingUser = pendingMessage('r', { text: 'Hello there' });
    expect(titleText(s, null)).toBe('Hello there');
    s.hasMore = true;
    s.messages = [user('u5', 'a later message')];
    expect(titleText(s, null)).toBe('New conversation');
  });
});
