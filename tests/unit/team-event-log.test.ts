/**
 * team-fanout's event log keeps a cursor per conversation it hears of; bounded by
 * `team.maxTrackedConversations` (least recently active dropped first, never an open remote run).
 * No database: nothing here reaches the point of writing a batch.
 */
import { describe, expect, it } from 'vitest';
import { EventLog } from '../../plugins/team-fanout/event-log.js';

const logger = { debug() {}, info() {}, warn() {}, error() {} } as never;
const knex = { transaction: async () => undefined } as never;

function log(maxTrackedConversations: number) {
  return new EventLog({
    knex,
    self: 'me',
    logger,
    publish: () => undefined,
    // Batches never due: the appends stay buffered.
    limits: () => ({ batchDelayMs: 600_000, batchMaxRows: 10_000_000, maxBufferedEvents: 10_000_000, replayMaxEvents: 100, replayWaitMs: 100, maxTrackedConversations }),
  });
}

const ev = (conversationId: string, seq: number) => ({ type: 'turn_start', round: 1, conversationId, runId: 'r', seq, ts: 1 }) as never;

describe('team event log: bounded conversation tracking', () => {
  it('many conversations never grow the tracked set past maxTrackedConversations', async () => {
    const l = log(100);
    let peak = 0;
    for (let i = 0; i < 5000; i++) {
      l.append(ev(`c${i}`, 1));
      peak = Math.max(peak, l.tracked);
    }
    expect(peak).toBeLessThanOrEqual(100);
    expect(l.tracked).toBeGreaterThan(0);
    await l.close();
  });

  it('the least recently active go first; an open remote run is never dropped', async () => {
    const l = log(10);
    l.append(ev('pinned', 1), 'other');
    l.openRemote.set('pinned', 'r');
    l.append(ev('busy', 1));
    for (let i = 0; i < 200; i++) {
      l.append(ev(`c${i}`, 1));
      l.append(ev('busy', i + 2)); // active all along
    }
    expect(l.tracked).toBeLessThanOrEqual(10);
    const kept = (l as unknown as { cursors: Map<string, number> }).cursors;
    expect(kept.has('pinned')).toBe(true);
    expect(kept.get('busy')).toBe(201);
    expect(kept.has('c0')).toBe(false);
    expect(kept.has('c199')).toBe(true);
    await l.close();
  });
});
