/**
 * The WebUI's side of paged history: a snapshot that is the newest page, an older page put in
 * front (stale ones dropped, no message twice), and checkpoint cards that wait for the page that
 * holds their place (and only then mark what they cover).
 */
import { describe, expect, it } from 'vitest';
import type { Message } from '../../plugin-api.js';
import type { CheckpointView } from '../../lib/gateway-protocol/protocol.js';
import { applyPage, applySnapshot, emptyState } from '../../webui/src/lib/conversation-state.js';
import { buildTranscript } from '../../webui/src/lib/transcript.js';

const msg = (i: number): Message => ({ id: `m${i}`, role: i % 2 ? 'assistant' : 'user', content: [{ type: 'text', text: `t${i}` }], createdAt: i });
const card = (extra: Partial<CheckpointView>): CheckpointView => ({ segmentId: 's2', kind: 'summary', trigger: 'manual', summary: 'sum', coveredMessageCount: 4, tokensBefore: 10, tokensAfter: 5, createdAt: 1, ...extra });
const page = (before: number, from: number, to: number, extra: { hasMore: boolean; checkpoints?: CheckpointView[] }) => ({
  type: 'page' as const,
  conversationId: 'c1',
  before,
  messages: Array.from({ length: to - from }, (_, i) => msg(from + i)),
  firstOrdinal: from + 1,
  checkpoints: [],
  ...extra,
});

describe('WebUI paged history', () => {
  it('an older page goes in front; a stale one is dropped; the card waits for its page and then covers what is before it', () => {
    const s = emptyState('c1');
    applySnapshot(s, { lastSeq: 9, messages: [6, 7, 8, 9].map(msg), running: false, hasMore: true, firstOrdinal: 7, olderCount: 6, checkpoints: [card({ inOlderPage: true })] });
    expect(s).toMatchObject({ hasMore: true, firstOrdinal: 7, olderCount: 6 });
    let items = buildTranscript(s.messages, null, null, s.checkpoints);
    expect(items.some((i) => i.kind === 'checkpoint')).toBe(false);
    expect(items.filter((i) => i.kind === 'user').every((i) => i.kind === 'user' && !i.covered)).toBe(true);

    expect(applyPage(s, page(5, 0, 4, { hasMore: false }))).toBe(false); // answers another cursor
    expect(applyPage(s, page(7, 2, 7, { hasMore: true, checkpoints: [card({ beforeMessageId: 'm4' })] }))).toBe(true);
    expect(s.messages.map((m) => m.id)).toEqual(['m2', 'm3', 'm4', 'm5', 'm6', 'm7', 'm8', 'm9']); // m6 was held already
    expect(s).toMatchObject({ firstOrdinal: 3, hasMore: true, olderCount: 1 });
    items = buildTranscript(s.messages, null, null, s.checkpoints);
    expect(items.map((i) => i.kind)).toEqual(['user', 'reply', 'checkpoint', 'user', 'reply', 'user', 'reply', 'user', 'reply']);
    const users = items.filter((i): i is Extract<typeof i, { kind: 'user' }> => i.kind === 'user');
    expect(users.map((u) => [u.message.id, u.covered])).toEqual([['m2', true], ['m4', false], ['m6', false], ['m8', false]]);

    expect(applyPage(s, page(3, 0, 2, { hasMore: false }))).toBe(true);
    expect(s).toMatchObject({ firstOrdinal: 1, hasMore: false, olderCount: 0 });
    expect(s.messages).toHaveLength(10);
    // A new snapshot is the newest page again.
    applySnapshot(s, { lastSeq: 9, messages: [8, 9].map(msg), running: false, hasMore: true, firstOrdinal: 9, olderCount: 8, checkpoints: [] });
    expect(s.messages.map((m) => m.id)).toEqual(['m8', 'm9']);
    expect(s).toMatchObject({ firstOrdinal: 9, hasMore: true, olderCount: 8 });
  });
});
