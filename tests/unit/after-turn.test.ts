/**
 * The after-turn seam (core/after-turn.ts): `turnEnd` taps run once the run is over, so a slow
 * one never holds the conversation; each is bounded, a plugin has a few in flight at most, and
 * `kernel.shutdown()` waits for them within that bound.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { LifecycleEvent, Plugin, RunResult, RuntimeErrorInfo, SessionInfo, Settings } from '../../plugin-api.js';
import { createKernel, type Kernel } from '../../core/kernel.js';
import historySqlite from '../../plugins/history-sqlite/index.js';
import { fakeProvider } from '../helpers/fake-provider.js';

const kernels: Kernel[] = [];
const homes: string[] = [];
afterEach(async () => {
  for (const k of kernels.splice(0)) await k.shutdown();
  for (const h of homes.splice(0)) fs.rmSync(h, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function boot(extra: Plugin[], settings: Settings = {}) {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'la-after-turn-'));
  homes.push(home);
  const failures: RuntimeErrorInfo[] = [];
  const provider = fakeProvider(() => ({ text: 'ok' }));
  const plugins: Plugin[] = [
    { name: 'test-fake', apply: (ctx) => void ctx.registerProvider(provider) },
    { name: 'test-failures', apply: (ctx) => void ctx.hooks.failed.tap((info) => void failures.push(info)) },
    ...extra,
  ];
  const kernel = await createKernel({ home, plugins, settings: { defaultProvider: 'fake', ...settings }, thirdParty: false });
  kernels.push(kernel);
  return { kernel, failures };
}

function send(kernel: Kernel, text: string, conversationId?: string) {
  return kernel.runtime.startRun({ input: [{ type: 'text', text }], mode: 'text', ...(conversationId ? { conversationId } : {}) });
}

/** A plugin whose turnEnd tap records its calls and waits as long as `hold` says. */
function tapPlugin(name: string, hold: (result: RunResult) => Promise<unknown>) {
  const calls: Array<{ result: RunResult; info: SessionInfo; done: boolean }> = [];
  const plugin: Plugin = {
    name,
    apply(ctx) {
      ctx.sessionHooks.turnEnd.tap(async (result, info) => {
        const call = { result, info, done: false };
        calls.push(call);
        await hold(result);
        call.done = true;
      });
    },
  };
  return { plugin, calls };
}

describe('after-turn work (turnEnd in the background)', () => {
  it('a turnEnd tap that takes 2 s does not delay a second message on the same conversation; shutdown waits for it', async () => {
    const slow = tapPlugin('slow-title', () => sleep(2000));
    const { kernel } = await boot([slow.plugin]);
    const first = await send(kernel, 'one').result;
    expect(first.status).toBe('completed');
    // Before, the run was still active while its taps ran: this threw "already has a run in progress".
    const second = await send(kernel, 'two', first.conversationId).result;
    expect(second.status).toBe('completed');
    expect(slow.calls.map((c) => c.done)).toEqual([false, false]);
    expect(kernel.runtime.activeRun(first.conversationId)).toBeUndefined();
    // Taps see the session as the run ended: with what it ran with.
    expect(slow.calls[0]!.info.run).toMatchObject({ runId: first.runId, provider: 'fake', model: 'fake-1', mode: 'text' });

    kernels.splice(kernels.indexOf(kernel), 1);
    await kernel.shutdown();
    expect(slow.calls.map((c) => c.done)).toEqual([true, true]);
  });

  it('a tap past runtime.afterTurnTimeoutMs is reported naming its plugin, and shutdown does not wait for it longer', async () => {
    const stuck = tapPlugin('stuck-memory', () => new Promise(() => undefined));
    const { kernel, failures } = await boot([stuck.plugin], { runtime: { afterTurnTimeoutMs: 150 } as Settings['runtime'] });
    await send(kernel, 'hello').result;
    await sleep(300);
    expect(failures).toEqual([expect.objectContaining({ code: 'plugin', plugin: 'stuck-memory', hook: 'turnEnd' })]);
    expect(failures[0]!.message).toMatch(/within 150 ms/);

    // Another one in flight at shutdown: the drain gives up after the bound and says so.
    await send(kernel, 'again').result;
    kernels.splice(kernels.indexOf(kernel), 1);
    const started = Date.now();
    await kernel.shutdown();
    expect(Date.now() - started).toBeLessThan(5000);
    expect(failures.filter((f) => f.plugin === 'stuck-memory').length).toBeGreaterThanOrEqual(2);
  });

  it('a throwing tap is reported with its plugin and hook; the run and the other taps are unaffected', async () => {
    const other = tapPlugin('other', async () => undefined);
    const thrower: Plugin = {
      name: 'thrower',
      apply: (ctx) =>
        void ctx.sessionHooks.turnEnd.tap(async () => {
          throw new Error('no title today');
        }),
    };
    const { kernel, failures } = await boot([thrower, other.plugin]);
    const r = await send(kernel, 'hi').result;
    expect(r.status).toBe('completed');
    await sleep(20);
    expect(failures).toEqual([expect.objectContaining({ plugin: 'thrower', hook: 'turnEnd' })]);
    expect(failures[0]!.message).toContain('no title today');
    expect(other.calls.map((c) => c.done)).toEqual([true]);
  });

  it('at most runtime.afterTurnConcurrency calls of one plugin run at once; another plugin is not held back', async () => {
    const releases: Array<() => void> = [];
    const gated = tapPlugin('gated', () => new Promise<void>((r) => releases.push(r)));
    const quick = tapPlugin('quick', async () => undefined);
    const { kernel } = await boot([gated.plugin, quick.plugin], { runtime: { afterTurnConcurrency: 1 } as Settings['runtime'] });
    for (const t of ['a', 'b', 'c']) await send(kernel, t).result;
    await sleep(10);
    expect(gated.calls.length).toBe(1);
    expect(quick.calls.map((c) => c.done)).toEqual([true, true, true]);
    releases.shift()!();
    await sleep(10);
    expect(gated.calls.length).toBe(2);
    expect(gated.calls[0]!.done).toBe(true);
    releases.shift()!();
    await sleep(10);
    expect(gated.calls.length).toBe(3);
    releases.shift()!();
    await sleep(10);
    expect(gated.calls.every((c) => c.done)).toBe(true);
  });

  it('back-to-back runs with the SQLite store keep seq contiguous (its last-seq bookkeeping is done before the next load)', async () => {
    const slow = tapPlugin('slow', () => sleep(300));
    const { kernel } = await boot([historySqlite, slow.plugin]);
    const seqs: number[] = [];
    kernel.runtime.onEvent((e: LifecycleEvent) => void seqs.push(e.seq));
    const first = await send(kernel, 'one').result;
    for (const t of ['two', 'three']) expect((await send(kernel, t, first.conversationId).result).status).toBe('completed');
    expect(seqs.every((s, i) => i === 0 || s === seqs[i - 1]! + 1)).toBe(true);
  });
});
