/**
 * Retained memory over time (with gc exposed): a long tool loop and many conversations, opened
 * and left, must not keep memory per round or per conversation once warmed up. The bounds are
 * generous (a few times what is measured here) since they pin leaks, not performance.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createKernel, type Kernel } from '../../core/kernel.js';
import historySqlite from '../../plugins/history-sqlite/index.js';
import { echoToolPlugin } from '../helpers/echo-tool.js';
import { fakeProvider } from '../helpers/fake-provider.js';
import { heapAfterGc as heap } from '../../bench/gc-heap.js';


const kernels: Kernel[] = [];
afterAll(async () => {
  for (const k of kernels) await k.shutdown();
});

describe('no memory retained over time', () => {
  it('a tool loop keeps nothing per round, and conversations left idle are let go', async () => {
    let left = 0;
    const provider = fakeProvider(() => (left-- > 0 ? { toolCalls: [{ id: `t${left}`, name: 'Echo', input: { text: 'a' } }] } : { text: 'done' }));
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'la-leak-'));
    const kernel = await createKernel({ home, plugins: [historySqlite, { name: 'p', apply: (c) => void c.registerProvider(provider) }, echoToolPlugin], settings: { runtime: { maxRounds: 1000, heldWindowMessages: 1000 } }, thirdParty: false });
    kernels.push(kernel);
    const loop = async (conversationId: string | undefined, rounds: number) => {
      left = rounds;
      const run = kernel.runtime.startRun({ ...(conversationId ? { conversationId } : {}), input: [{ type: 'text', text: 'go' }], mode: 'tools', keepEvents: false });
      const r = await run.result;
      provider.requests.length = 0; // the fake provider records requests; that is the test's, not the runtime's
      expect(r.status).toBe('completed');
      return r.conversationId;
    };
    // The window a completed run ended with is held for the next turn (a bounded cache: at most
    // heldWindowMessages messages across the last 4 conversations); the 1800-message one here is
    // over that cap, so what stays after its loop is only what would be a leak.
    const id = await loop(undefined, 300); // warm up: JIT, prepared statements, caches
    const before = heap();
    await loop(id, 600);
    const perRound = (heap() - before) / 600;
    expect(perRound).toBeLessThan(512);

    const signal = new AbortController().signal; // a host-wide signal that outlives every run
    const open = async (n: number) => {
      for (let i = 0; i < n; i++) await kernel.runtime.startRun({ input: [{ type: 'text', text: `hello ${i}` }], mode: 'text', keepEvents: false, signal }).result;
      provider.requests.length = 0;
    };
    await open(100);
    const b2 = heap();
    await open(500);
    const perConversation = (heap() - b2) / 500;
    expect(perConversation).toBeLessThan(1024);
  }, 120_000);
});
