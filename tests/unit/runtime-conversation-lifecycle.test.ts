/**
 * The runtime owns a conversation's delete and rename: the run stops first, the store answers
 * through the persistence hooks, and `conversationDeleted` tells every plugin afterwards.
 */
import { describe, expect, it } from 'vitest';
import type { ConversationDeleted, Plugin } from '../../plugin-api.js';
import { createKernel } from '../../core/kernel.js';
import historySqlite from '../../plugins/history-sqlite/index.js';
import { trackResources } from '../helpers/cleanup.js';
import { fakeProvider, type FakeStep } from '../helpers/fake-provider.js';

const res = trackResources();

async function boot(steps: FakeStep[], extra: Plugin[] = []) {
  const provider = fakeProvider(steps);
  const plugin: Plugin = { name: 'test-fake', apply: (ctx) => void ctx.registerProvider(provider) };
  const kernel = await createKernel({ home: res.tmp('h21c-life-'), plugins: [plugin, ...extra], thirdParty: false });
  res.kernels.push(kernel);
  return kernel;
}

function watcher(seen: ConversationDeleted[]): Plugin {
  return { name: 'watcher', apply: (ctx) => void ctx.hooks.conversationDeleted.tap((d) => void seen.push(d)) };
}

describe('runtime conversation lifecycle', () => {
  it('deleteConversation stops the run, asks the store, then tells plugins', async () => {
    const order: string[] = [];
    const seen: ConversationDeleted[] = [];
    let ended = false;
    const store: Plugin = {
      name: 'store-spy',
      apply(ctx) {
        ctx.sessionHooks.deleteConversation.tap(({ conversationId }) => {
          order.push(`store ${conversationId} ended=${ended}`);
          return true;
        });
      },
    };
    const kernel = await boot([{ hang: true, afterText: 'x' }], [store, watcher(seen)]);
    const run = kernel.runtime.startRun({ input: [{ type: 'text', text: 'go' }] });
    void run.result.then(() => (ended = true));
    await new Promise((r) => setTimeout(r, 20));
    expect(await kernel.runtime.deleteConversation(run.conversationId)).toBe(true);
    expect((await run.result).status).toBe('aborted');
    expect(order).toEqual([`store ${run.conversationId} ended=true`]);
    expect(seen).toEqual([{ conversationId: run.conversationId, existed: true }]);
    expect(kernel.runtime.activeRun(run.conversationId)).toBeUndefined();
  });

  it('an unknown conversation resolves false (and is still announced); a bad id is a usage error', async () => {
    const seen: ConversationDeleted[] = [];
    const kernel = await boot([], [watcher(seen)]);
    expect(await kernel.runtime.deleteConversation('c_nobody')).toBe(false);
    expect(seen).toEqual([{ conversationId: 'c_nobody', existed: false }]);
    await expect(kernel.runtime.deleteConversation('no spaces')).rejects.toThrow('deleteConversation: conversationId must be 1-128 letters, digits, _ or -');
    await expect(kernel.runtime.renameConversation('c_x', '   ')).rejects.toThrow('renameConversation: title: must not be empty');
    await expect(kernel.runtime.renameConversation('c_x', 'x'.repeat(201))).rejects.toThrow('renameConversation: title: must be at most 200 characters');
  });

  it('a store failure rejects the call, names the plugin, and nothing is announced', async () => {
    const seen: ConversationDeleted[] = [];
    const broken: Plugin = { name: 'broken-store', apply: (ctx) => void ctx.sessionHooks.deleteConversation.tap(() => Promise.reject(new Error('disk gone'))) };
    const kernel = await boot([], [broken, watcher(seen)]);
    await expect(kernel.runtime.deleteConversation('c_1')).rejects.toThrow('plugin "broken-store" failed in hook deleteConversation: disk gone');
    expect(seen).toEqual([]);
  });

  it('with the sqlite store: rename stores a trimmed title, delete removes the conversation', async () => {
    const seen: ConversationDeleted[] = [];
    const kernel = await boot([{ text: 'hello' }], [historySqlite, watcher(seen)]);
    const run = kernel.runtime.startRun({ input: [{ type: 'text', text: 'hi' }] });
    await run.result;
    const id = run.conversationId;
    expect(await kernel.runtime.renameConversation(id, '  My chat  ')).toBe(true);
    const history = kernel.services.get('history') as { getConversation(id: string): Promise<{ title: string | null } | undefined>; conversationExists(id: string): Promise<boolean> };
    expect((await history.getConversation(id))?.title).toBe('My chat');
    expect(await kernel.runtime.renameConversation('c_missing', 'x')).toBe(false);
    expect(await kernel.runtime.deleteConversation(id)).toBe(true);
    expect(await history.conversationExists(id)).toBe(false);
    expect(seen).toEqual([{ conversationId: id, existed: true }]);
    expect(await kernel.runtime.deleteConversation(id)).toBe(false);
  });

  it('without any store, rename answers false', async () => {
    const kernel = await boot([]);
    expect(await kernel.runtime.renameConversation('c_1', 'title')).toBe(false);
  });
});
