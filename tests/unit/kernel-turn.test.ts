import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { LifecycleEvent, Plugin } from '../../plugin-api.js';
import { createKernel, type Kernel } from '../../core/kernel.js';
import { fakeProvider, type FakeStep } from '../helpers/fake-provider.js';
import { collectAll } from '../helpers/streams.js';

const kernels: Kernel[] = [];
afterEach(async () => {
  for (const k of kernels.splice(0)) await k.shutdown();
});

function tmpHome() {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'la-kernel-'));
}

async function boot(steps: FakeStep[], extra: Plugin[] = [], settings = {}) {
  const provider = fakeProvider(steps);
  const plugin: Plugin = { name: 'test-fake', apply: (ctx) => void ctx.registerProvider(provider) };
  const kernel = await createKernel({ home: tmpHome(), plugins: [plugin, ...extra], settings, thirdParty: false });
  kernels.push(kernel);
  return { kernel, provider };
}

const collect = collectAll<LifecycleEvent>;

const echoTool: Plugin = {
  name: 'tool-echo',
  apply(ctx) {
    ctx.registerTool({
      name: 'Echo',
      description: 'Echo text back',
      parameters: z.object({ text: z.string() }),
      concurrency: 'parallel',
      promptRules: ['Echo only what the user asked for.'],
      async execute(args: { text: string }) {
        return { content: [{ type: 'text', text: `echo:${args.text}` }] };
      },
    });
  },
};

describe('kernel turn', () => {
  it('text mode streams one reply with no tools and emits events in order', async () => {
    const { kernel, provider } = await boot([{ text: ['Hel', 'lo'] }], [echoTool]);
    const run = kernel.runtime.startRun({ input: [{ type: 'text', text: 'hi' }], mode: 'text' });
    const events = await collect(run.events);
    const result = await run.result;
    expect(result.status).toBe('completed');
    expect(provider.requests[0]!.tools).toEqual([]);
    const types = events.map((e) => e.type);
    expect(types[0]).toBe('agent_start');
    expect(types.slice(1, 3)).toEqual(['turn_start', 'message_start']);
    expect(types.slice(-3)).toEqual(['message_end', 'turn_end', 'agent_end']);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
  });

  it('tool loop runs tools until the model stops, and the next request carries the results', async () => {
    const { kernel, provider } = await boot(
      [{ toolCalls: [{ id: 't1', name: 'Echo', input: { text: 'a' } }, { id: 't2', name: 'Echo', input: { text: 'b' } }] }, { text: 'finished' }],
      [echoTool],
    );
    const run = kernel.runtime.startRun({ input: [{ type: 'text', text: 'go' }], mode: 'tools' });
    const events = await collect(run.events);
    expect((await run.result).status).toBe('completed');
    const second = provider.requests[1]!;
    const toolMsg = second.messages.at(-1)!;
    expect(toolMsg.role).toBe('tool');
    expect(toolMsg.content.map((b) => (b.type === 'tool_result' ? b.content[0] : null))).toEqual([
      { type: 'text', text: 'echo:a' },
      { type: 'text', text: 'echo:b' },
    ]);
    expect(provider.requests[0]!.system.at(-1)!.text).toContain('Echo only what the user asked for.');
    const firstTurnEnd = events.findIndex((e) => e.type === 'turn_end');
    const lastToolEnd = events.map((e) => e.type).lastIndexOf('tool_execution_end');
    expect(lastToolEnd).toBeLessThan(firstTurnEnd);
  });

  it('invalid tool arguments go back to the model as an error result', async () => {
    const { kernel, provider } = await boot([{ toolCalls: [{ id: 't1', name: 'Echo', input: { nope: 1 } }] }, { text: 'ok' }], [echoTool]);
    const run = kernel.runtime.startRun({ input: [{ type: 'text', text: 'go' }] });
    await run.result;
    const res = provider.requests[1]!.messages.at(-1)!.content[0]!;
    expect(res.type === 'tool_result' && res.isError).toBe(true);
    expect(JSON.stringify(res)).toContain('Invalid arguments for Echo');
  });

  it('stops at the round limit with an error', async () => {
    const loop = Array.from({ length: 5 }, (_, i) => ({ toolCalls: [{ id: `t${i}`, name: 'Echo', input: { text: 'x' } }] }));
    const { kernel } = await boot(loop, [echoTool], { runtime: { maxRounds: 3 } });
    const result = await kernel.runtime.startRun({ input: [{ type: 'text', text: 'go' }] }).result;
    expect(result.status).toBe('error');
    expect(result.error?.message).toContain('tool loop limit');
  });

  it('abort mid-stream ends the run as aborted with exactly one agent_end', async () => {
    const { kernel } = await boot([{ hang: true, afterText: 'partial' }]);
    const run = kernel.runtime.startRun({ input: [{ type: 'text', text: 'go' }] });
    setTimeout(() => run.abort(), 50);
    const events = await collect(run.events);
    const result = await run.result;
    expect(result.status).toBe('aborted');
    expect(events.filter((e) => e.type === 'agent_end')).toHaveLength(1);
  });

  it('retries a retryable error before output, and seq keeps rising across runs', async () => {
    const { kernel } = await boot([{ error: { message: 'overloaded', retryable: true, retryAfterMs: 1 } }, { text: 'ok' }, { text: 'again' }], [], {
      runtime: { retryBaseDelayMs: 1 },
    });
    const run = kernel.runtime.startRun({ input: [{ type: 'text', text: 'go' }] });
    const first = await collect(run.events);
    expect((await run.result).status).toBe('completed');
    expect(first.some((e) => e.type === 'notice')).toBe(true);
    const run2 = kernel.runtime.startRun({ conversationId: run.conversationId, input: [{ type: 'text', text: 'more' }] });
    const second = await collect(run2.events);
    expect(second[0]!.seq).toBe(first.at(-1)!.seq + 1);
  });

  it('a throwing notification tap is reported and the run goes on; a throwing transform tap fails the run naming the plugin', async () => {
    const noisy: Plugin = { name: 'noisy', apply: (ctx) => void ctx.sessionHooks.event.tap(() => { throw new Error('boom'); }) };
    const { kernel } = await boot([{ text: 'ok' }], [noisy]);
    expect((await kernel.runtime.startRun({ input: [{ type: 'text', text: 'go' }] }).result).status).toBe('completed');
    const bad: Plugin = { name: 'bad-prompt', apply: (ctx) => void ctx.sessionHooks.systemPrompt.tap(() => { throw new Error('nope'); }) };
    const { kernel: k2 } = await boot([{ text: 'ok' }], [bad]);
    const r = await k2.runtime.startRun({ input: [{ type: 'text', text: 'go' }] }).result;
    expect(r.status).toBe('error');
    expect(r.error?.plugin).toBe('bad-prompt');
    expect(r.error?.message).toContain('systemPrompt');
  });

  it('boot fails clearly on a missing requirement or a cycle', async () => {
    const a: Plugin = { name: 'a', requires: ['missing'], apply() {} };
    await expect(createKernel({ home: tmpHome(), plugins: [a], thirdParty: false })).rejects.toThrow(/plugin "a" requires "missing"/);
    const x: Plugin = { name: 'x', requires: ['y'], apply() {} };
    const y: Plugin = { name: 'y', requires: ['x'], apply() {} };
    await expect(createKernel({ home: tmpHome(), plugins: [x, y], thirdParty: false })).rejects.toThrow(/cycle among: x, y/);
  });

  it('a plugin that throws in apply is named and the host keeps running', async () => {
    const broken: Plugin = { name: 'broken', apply() { throw new Error('kaput'); } };
    const { kernel } = await boot([{ text: 'ok' }], [broken]);
    expect(kernel.failures[0]!.message).toContain('broken');
    expect((await kernel.runtime.startRun({ input: [{ type: 'text', text: 'go' }] }).result).status).toBe('completed');
  });

  it('a watchdog ends a stream that stays silent, with a clear error', async () => {
    const { kernel } = await boot([{ hang: true, afterText: 'partial' }], [], { runtime: { streamIdleTimeoutMs: 100, retryMaxAttempts: 1 } });
    const started = Date.now();
    const result = await kernel.runtime.startRun({ input: [{ type: 'text', text: 'go' }] }).result;
    expect(Date.now() - started).toBeLessThan(5000);
    expect(result.status).toBe('error');
    expect(result.error?.message).toMatch(/silent for more than 100 ms/);
    const reply = result.messages[0]!;
    expect(reply.content).toEqual([{ type: 'text', text: 'partial' }]);
    expect(reply.meta).toEqual({ partial: true });
  });

  it('an abort during a retry backoff ends the run at once', async () => {
    const { kernel, provider } = await boot([{ error: { message: 'overloaded', retryable: true, retryAfterMs: 60_000 } }], [], { runtime: { retryMaxDelayMs: 60_000 } });
    const run = kernel.runtime.startRun({ input: [{ type: 'text', text: 'go' }] });
    for await (const e of run.events) if (e.type === 'notice') break;
    const t = Date.now();
    run.abort();
    const result = await run.result;
    expect(Date.now() - t).toBeLessThan(1000);
    expect(result.status).toBe('aborted');
    expect(provider.requests).toHaveLength(1);
  });

  it('non-retryable errors are not retried, and an error after output is surfaced with the partial text kept', async () => {
    const { kernel, provider } = await boot([{ error: { message: '401 invalid key', retryable: false, status: 401 } }]);
    const r1 = await kernel.runtime.startRun({ input: [{ type: 'text', text: 'go' }] }).result;
    expect(r1.status).toBe('error');
    expect(provider.requests).toHaveLength(1);
    const { kernel: k2, provider: p2 } = await boot([{ error: { message: 'overloaded', retryable: true }, afterText: 'half an answ' }], [], { runtime: { retryBaseDelayMs: 1 } });
    const r2 = await k2.runtime.startRun({ input: [{ type: 'text', text: 'go' }] }).result;
    expect(r2.status).toBe('error');
    expect(p2.requests).toHaveLength(1);
    expect(r2.messages[0]!.content).toEqual([{ type: 'text', text: 'half an answ' }]);
    expect(r2.messages[0]!.meta).toEqual({ partial: true });
  });

  it('forgetConversation stops the active run and forgets the conversation', async () => {
    const { kernel } = await boot([{ hang: true, afterText: 'x' }]);
    const run = kernel.runtime.startRun({ input: [{ type: 'text', text: 'go' }] });
    await new Promise((r) => setTimeout(r, 20));
    await kernel.runtime.forgetConversation(run.conversationId);
    expect((await run.result).status).toBe('aborted');
    const again = await kernel.runtime.startRun({ conversationId: run.conversationId, input: [{ type: 'text', text: 'more' }] }).result;
    expect(again.error).toMatchObject({ code: 'usage' });
    expect(again.error?.message).toContain('unknown conversation');
  });

  it('reportFailure reaches the failed hook with the plugin named, and the plugin stays loaded', async () => {
    const seen: string[] = [];
    const watcher: Plugin = { name: 'watcher', apply: (ctx) => void ctx.hooks.failed.tap((info) => seen.push(`${info.plugin}: ${info.message}`)) };
    const reporter: Plugin = { name: 'reporter', apply: (ctx) => ctx.reportFailure('server "x" gave up', { server: 'x' }) };
    const { kernel } = await boot([], [watcher, reporter]);
    expect(seen).toEqual(['reporter: plugin "reporter": server "x" gave up']);
    expect(kernel.loaded.find((p) => p.name === 'reporter')?.status).toBe('active');
  });

  it('request options carry the provider settings but never its key', async () => {
    const { kernel, provider } = await boot([{ text: 'ok' }], [], { providers: { fake: { apiKey: 'sk-secret', apiKeyEnv: 'X', flavour: 'mild' } } });
    await kernel.runtime.startRun({ input: [{ type: 'text', text: 'go' }] }).result;
    expect(provider.requests[0]!.options).toEqual({ flavour: 'mild' });
  });

  it('persistence taps learn what the run is running with (SessionInfo.run)', async () => {
    const seen: unknown[] = [];
    const store: Plugin = { name: 'store-spy', apply: (ctx) => void ctx.sessionHooks.saveUserMessage.tap((_m, info) => void seen.push(info.run)) };
    const { kernel } = await boot([{ text: 'ok' }], [store]);
    const run = kernel.runtime.startRun({ input: [{ type: 'text', text: 'go' }], mode: 'text', workdir: '/tmp' });
    await run.result;
    expect(seen).toEqual([{ runId: run.runId, mode: 'text', provider: 'fake', model: 'fake-1', workdir: '/tmp' }]);
  });

  it('unloading a plugin undoes its tools, providers and taps, and unloads what requires it first', async () => {
    const calls: string[] = [];
    const base: Plugin = {
      name: 'base',
      apply(ctx) {
        ctx.registerTool({ name: 'BaseTool', description: 'x', parameters: z.object({}), execute: async () => ({ content: [] }) });
        ctx.sessionHooks.event.tap(() => void calls.push('base-tap'));
      },
    };
    const child: Plugin = { name: 'child', requires: ['base'], apply: (ctx) => void ctx.registerProvider(fakeProvider([], 'child-provider')) };
    const { kernel } = await boot([{ text: 'ok' }], [base, child]);
    expect(kernel.runtime.tools().map((t) => t.name)).toContain('BaseTool');
    expect(kernel.unload('base')).toEqual(['child', 'base']);
    expect(kernel.runtime.tools().map((t) => t.name)).not.toContain('BaseTool');
    expect(kernel.runtime.provider('child-provider')).toBeUndefined();
    expect(kernel.loaded.find((p) => p.name === 'base')?.status).toBe('unloaded');
    await kernel.runtime.startRun({ input: [{ type: 'text', text: 'go' }] }).result;
    expect(calls).toEqual([]);
  });

  it('a run started with keepEvents: false keeps no log, and its events still reach onEvent listeners', async () => {
    const { kernel } = await boot([{ text: ['a', 'b'] }]);
    const seen: string[] = [];
    kernel.runtime.onEvent((e) => seen.push(e.type));
    const run = kernel.runtime.startRun({ input: [{ type: 'text', text: 'go' }], keepEvents: false });
    expect(() => run.events[Symbol.asyncIterator]()).toThrow(/keepEvents: false/);
    expect((await run.result).status).toBe('completed');
    expect(seen.at(-1)).toBe('agent_end');
  });

  it('a registration disposed by its plugin leaves its subscriptions, so tools that come and go never pile up', async () => {
    let subs: unknown[] = [];
    let register: () => { dispose(): void } = () => ({ dispose() {} });
    const flaky: Plugin = {
      name: 'flaky',
      apply(ctx) {
        subs = ctx.subscriptions;
        register = () => ctx.registerTool({ name: 'Flaky', description: 'x', parameters: z.object({}), execute: async () => ({ content: [] }) });
      },
    };
    const { kernel } = await boot([], [flaky]);
    const before = subs.length;
    for (let i = 0; i < 5; i++) register().dispose();
    expect(subs.length).toBe(before);
    const kept = register();
    expect(subs.length).toBe(before + 1);
    expect(kernel.runtime.tools().map((t) => t.name)).toContain('Flaky');
    kept.dispose();
    expect(kernel.runtime.tools().map((t) => t.name)).not.toContain('Flaky');
  });
  it('a quick tool round is written once (saveRound), with no progress save before it', async () => {
    const writes: string[] = [];
    const store: Plugin = {
      name: 'counting-store',
      apply(ctx) {
        ctx.sessionHooks.saveProgress.tap(() => void writes.push('progress'));
        ctx.sessionHooks.saveRound.tap(() => void writes.push('round'));
      },
    };
    const steps: FakeStep[] = Array.from({ length: 20 }, (_, i) => ({ toolCalls: [{ id: `t${i}`, name: 'Echo', input: { text: 'a' } }] }));
    const { kernel } = await boot([...steps, { toolCalls: [] }], [echoTool, store]);
    const r = await kernel.runtime.startRun({ input: [{ type: 'text', text: 'go' }], mode: 'tools' }).result;
    expect(r.status).toBe('completed');
    expect(writes).toEqual(Array.from({ length: 21 }, () => 'round'));
  });
  it('a run asks its provider to prepare (start its SDK import) before the history loads', async () => {
    const order: string[] = [];
    const provider = { ...fakeProvider([{ text: 'ok' }], 'prep'), prepare: () => void order.push('prepare') };
    const probe: Plugin = {
      name: 'probe',
      apply(ctx) {
        ctx.registerProvider(provider);
        ctx.sessionHooks.loadHistory.tap(() => void order.push('loadHistory'));
      },
    };
    const { kernel } = await boot([], [probe]);
    await kernel.runtime.startRun({ input: [{ type: 'text', text: 'hi' }], provider: 'prep' }).result;
    expect(order).toEqual(['prepare', 'loadHistory']);
  });
});

