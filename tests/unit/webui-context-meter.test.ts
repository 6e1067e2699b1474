import { describe, expect, it } from 'vitest';
import type { Message } from '../../plugin-api.js';
import { meterOf } from '../../webui/src/lib/context-meter.js';
import { emptyState } from '../../webui/src/lib/conversation-state.js';

const reply = (id: string, costUsd?: number): Message => ({ id, role: 'assistant', content: [{ type: 'text', text: 'x' }], createdAt: 1, provider: 'p', model: 'm', usage: { inputTokens: 100, outputTokens: 10, ...(costUsd !== undefined ? { costUsd } : {}) } });

describe('context meter cost', () => {
  it("sums the loaded replies' own cost, and says so when older pages are not loaded", () => {
    const s = emptyState('c');
    s.messages = [reply('a', 0.001), reply('b', 0.002)];
    s.hasMore = true;
    const m = meterOf(s, []);
    expect(m?.cost).toBeCloseTo(0.003, 10);
    expect(m?.costLoadedOnly).toBe(true);
  });

  it("uses the server's whole-conversation sum when it has one (older pages and truncated replies count)", () => {
    const s = emptyState('c');
    s.messages = [reply('a', 0.001)];
    s.hasMore = true;
    s.spent = { rounds: 40, costUsd: 0.5, unpricedRounds: 2 };
    const m = meterOf(s, []);
    expect(m).toMatchObject({ cost: 0.5, costLoadedOnly: false, costPartial: true });
  });
});
