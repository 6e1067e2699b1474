/**
 * The replay window against a plain list of serialized events: after any mix of deltas (runs of
 * one block, block changes, gaps in seq), other events, count and byte bounds and global
 * shedding, `since(lastSeq)` gives exactly the events a plain list would, and the byte
 * accounting (per window and shared) returns to zero when cleared.
 */
import { describe, expect, it } from 'vitest';
import type { LifecycleEvent } from '../../plugin-api.js';
import { ReplayWindow, type ReplayBudget } from '../../plugins/gateway/replay-window.js';
import { deltaPayload, estimateDelta, serializeEvent } from '../../plugins/gateway/wire.js';

type Delta = Extract<LifecycleEvent, { type: 'message_update' }>;

/** A seeded PRNG, so a failure replays. */
function rng(seed: number) {
  let s = seed >>> 0;
  return () => ((s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32);
}

describe('replay window', () => {
  for (const seed of [1, 2, 3, 4, 5]) {
    it(`replays exactly what a plain list holds (seed ${seed})`, () => {
      const rand = rng(seed);
      const limits = { replayWindow: 40 + Math.floor(rand() * 200), replayWindowBytes: 5_000 + Math.floor(rand() * 40_000) };
      const budget: ReplayBudget = { bytes: 0 };
      const w = new ReplayWindow(() => limits, budget);
      // The reference: every event with its size, oldest dropped first under the same bounds.
      let ref: Array<{ seq: number; json: string; size: number }> = [];
      let seq = 0;
      let msg = 'm1';
      let index = 0;
      let kind: 'text' | 'thinking' | 'tool_input' = 'text';
      const bounded = () => {
        let bytes = ref.reduce((n, r) => n + r.size, 0);
        while (ref.length > 0 && (ref.length > limits.replayWindow || bytes > limits.replayWindowBytes)) bytes -= ref.shift()!.size;
      };
      for (let step = 0; step < 3000; step++) {
        const r = rand();
        seq += rand() < 0.02 ? 2 + Math.floor(rand() * 3) : 1; // a store may skip numbers
        if (r < 0.05) {
          const e = { type: 'notice', payload: { n: step }, conversationId: 'c1', runId: 'r1', seq, ts: 1000 + step } as unknown as LifecycleEvent;
          const json = serializeEvent(e);
          w.pushSerialized(seq, json);
          ref.push({ seq, json, size: json.length });
        } else {
          if (r < 0.1) {
            msg = `m${step}`;
            index = 0;
          } else if (r < 0.13) index++;
          else if (r < 0.15) kind = kind === 'text' ? 'thinking' : kind === 'thinking' ? 'tool_input' : 'text';
          const piece = `p${step}${'x'.repeat(Math.floor(rand() * 30))}${rand() < 0.05 ? '"é\n' : ''}`;
          const delta = kind === 'tool_input' ? { kind, index, json: piece } : { kind, index, text: piece };
          const e = { type: 'message_update', messageId: msg, delta, conversationId: 'c1', runId: 'r1', seq, ts: 1000 + Math.floor(step / 3) } as Delta;
          const payload = deltaPayload(e)!;
          const size = estimateDelta(e, payload);
          w.pushDelta(e, payload, size);
          ref.push({ seq, json: serializeEvent(e), size });
        }
        bounded();
        if (rand() < 0.01) {
          // Global shedding down to some total.
          const total = Math.floor(budget.bytes * rand());
          w.shed(total);
          let bytes = ref.reduce((n, x) => n + x.size, 0);
          while (ref.length > 0 && bytes > total) bytes -= ref.shift()!.size;
        }
        expect(w.size).toBe(ref.length);
        expect(w.bytes).toBe(ref.reduce((n, x) => n + x.size, 0));
        expect(budget.bytes).toBe(w.bytes);
        if (step % 37 === 0 && ref.length > 0) {
          expect(w.firstSeq).toBe(ref[0]!.seq);
          for (const back of [0, 1, 2, Math.floor(ref.length / 2), ref.length - 1].filter((b) => b < ref.length)) {
            const lastSeq = ref[ref.length - 1 - back]!.seq;
            expect(w.since(lastSeq, seq, serializeEvent)).toEqual(ref.filter((x) => x.seq > lastSeq).map((x) => x.json));
          }
          // Reaching back before the first one held: not covered.
          if (ref[0]!.seq > 2) expect(w.since(ref[0]!.seq - 2, seq, serializeEvent)).toBeUndefined();
          expect(w.since(seq, seq, serializeEvent)).toEqual([]);
        }
      }
      w.clear();
      ref = [];
      expect([w.size, w.bytes, budget.bytes]).toEqual([0, 0, 0]);
    });
  }
});
