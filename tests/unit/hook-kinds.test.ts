/**
 * Hooks are told apart by the kind recorded where they are declared, never by
 * `constructor.name`: a minifier (an Electron or bundled build) renames `SyncHook` to `e`, and
 * tapping a renamed sync hook must still work.
 */
import { describe, expect, it } from 'vitest';
import tapable from 'tapable';
import type { Disposable, KernelHookTaps, LifecycleEvent, SessionHookTaps } from '../../plugin-api.js';
import { createKernelHooks, createSessionHooks, facadeFor, hookInfo, tapAs, type HookKind } from '../../core/hooks.js';

/** What tapable class each kind is built from (checked through behaviour, not names). */
const expectedKinds: Record<string, HookKind> = {
  ready: 'series',
  shutdown: 'series',
  sessionCreated: 'sync',
  failed: 'sync',
  conversationDeleted: 'sync',
  loadHistory: 'bail',
  saveUserMessage: 'series',
  saveProgress: 'series',
  saveRound: 'series',
  truncateHistory: 'series',
  deleteConversation: 'bail',
  renameConversation: 'bail',
  saveCheckpoint: 'series',
  systemPrompt: 'waterfall',
  messages: 'waterfall',
  tools: 'waterfall',
  providerRequest: 'waterfall',
  compaction: 'bail',
  providerEvent: 'sync',
  beforeToolCall: 'bail',
  executeTool: 'bail',
  afterToolCall: 'waterfall',
  event: 'sync',
  turnEnd: 'parallel',
};

/** Make a hook look minified: its constructor renamed, and every read of it counted. */
function mangle(hook: object): { reads: () => number } {
  let reads = 0;
  const renamed = function e() {};
  Object.defineProperty(hook, 'constructor', {
    configurable: true,
    get() {
      reads++;
      return renamed;
    },
  });
  return { reads: () => reads };
}

const noReport = () => {};

describe('hook kinds', () => {
  it('every hook is declared with its kind and an error policy', () => {
    const all = { ...createKernelHooks(), ...createSessionHooks() };
    expect(Object.keys(all).sort()).toEqual(Object.keys(expectedKinds).sort());
    for (const [name, hook] of Object.entries(all)) {
      const info = hookInfo(hook);
      expect(info, name).toBeDefined();
      expect(info!.kind, name).toBe(expectedKinds[name]);
      expect(['fail-run', 'tool-result', 'compaction', 'report', 'plugin-failed', 'log', 'reject']).toContain(info!.onThrow);
    }
  });

  it('the declared kinds match how the hooks really run (sync hooks refuse tapPromise)', () => {
    for (const [name, hook] of Object.entries({ ...createKernelHooks(), ...createSessionHooks() })) {
      const sync = hookInfo(hook)!.kind === 'sync';
      const tryPromise = () => (hook as unknown as { tapPromise(o: object, f: () => Promise<void>): void }).tapPromise({ name: 'probe' }, async () => {});
      if (sync) expect(tryPromise, name).toThrow(/not supported/);
      else expect(tryPromise, name).not.toThrow();
    }
  });

  it('a sync hook whose constructor name is mangled still takes taps, and its name is never read', async () => {
    const hooks = createSessionHooks();
    const spy = mangle(hooks.event);
    const seen: string[] = [];
    const subs: Disposable[] = [];
    const facade = facadeFor<typeof hooks, SessionHookTaps>('minified-plugin', hooks, subs, noReport);
    facade.event.tap((e) => void seen.push(e.type));
    hooks.event.call({ type: 'agent_start', conversationId: 'c', runId: 'r', seq: 1, ts: 0, mode: 'text', provider: 'p', model: 'm' } as LifecycleEvent);
    expect(seen).toEqual(['agent_start']);
    expect(spy.reads()).toBe(0);
    // Async hooks renamed the same way keep working too.
    const w = mangle(hooks.systemPrompt);
    facade.systemPrompt.tap((parts) => [...parts, { id: 'x', text: 'X' }]);
    expect(await hooks.systemPrompt.promise([], {} as never)).toEqual([{ id: 'x', text: 'X' }]);
    expect(w.reads()).toBe(0);
  });

  it('a renamed sync kernel hook (sessionCreated) notifies, and a throw in it is still only reported', () => {
    const hooks = createKernelHooks();
    mangle(hooks.sessionCreated);
    const reported: string[] = [];
    const facade = facadeFor<typeof hooks, KernelHookTaps>('minified-plugin', hooks, [], (info) => void reported.push(info.message));
    facade.sessionCreated.tap(() => {
      throw new Error('boom');
    });
    expect(() => hooks.sessionCreated.call({ conversationId: 'c', lastSeq: 0 })).not.toThrow();
    expect(reported).toEqual(['plugin "minified-plugin" failed in hook sessionCreated: boom']);
  });

  it('refuses a hook that was not declared with a kind, saying so', () => {
    const raw = new tapable.SyncHook<[number]>(['n']);
    expect(() => tapAs('p', 'raw', raw as never, () => {}, {}, noReport)).toThrow(/was not declared with a kind/);
  });
});
