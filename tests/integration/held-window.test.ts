/**
 * Turn start on a conversation this process just ran goes on from the window the last run
 * ended with (the store answers `unchanged`), so its cost does not grow with what is stored and
 * the provider's per-message conversion stays cached (same message objects). Anything another
 * writer changed (a message appended by another kernel on the same file, a truncation) makes the
 * store send the stored window again.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { LifecycleEvent, Message, Plugin, Provider } from '../../plugin-api.js';
import { createKernel, type Kernel } from '../../core/kernel.js';
import historySqlite from '../../plugins/history-sqlite/index.js';
import { fakeProvider } from '../helpers/fake-provider.js';
import { collectAll } from '../helpers/streams.js';

const kernels: Kernel[] = [];
const homes: string[] = [];
afterEach(async () => {
  for (const k of kernels.splice(0)) await k.shutdown();
  for (const h of homes.splice(0)) fs.rmSync(h, { recursive: true, force: true });
});

/** Records what each request's messages hook saw. */
function observer() {
  const seen: Message[][] = [];
  const plugin: Plugin = {
    name: 'observer',
    apply(ctx) {
      ctx.sessionHooks.messages.tap((messages) => {
        seen.push(messages);
        return messages;
      });
    },
  };
  return { seen, plugin };
}

async function boot(home: string, provider: Provider, extra: Plugin[] = []) {
  const providerPlugin: Plugin = { name: 'test-provider', apply: (ctx) => void ctx.registerProvider(provider) };
  const kernel = await createKernel({ home, plugins: [historySqlite, providerPlugin, ...extra], settings: {}, thirdParty: false, logSink: () => undefined });
  kernels.push(kernel);
  return kernel;
}

async function send(kernel: Kernel, text: string, conversationId?: string) {
  const run = kernel.runtime.startRun({ input: [{ type: 'text', text }], mode: 'tools', provider: 'fake', ...(conversationId ? { conversationId } : {}) });
  await collectAll<LifecycleEvent>(run.events);
  const result = await run.result;
  expect(result.status).toBe('completed');
  return run.conversationId;
}

describe('the held window', () => {
  it('the next turn goes on from the same message objects, and another writer\'s change is read again', async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'la-held-'));
    homes.push(home);
    const obs = observer();
    const kernel = await boot(home, fakeProvider(() => ({ text: 'ok' })), [obs.plugin]);

    const id = await send(kernel, 'one');
    await send(kernel, 'two', id);
    // The second turn's first messages are the very objects the first turn ended with.
    const [first, second] = [obs.seen[0]!, obs.seen[1]!];
    expect(second.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    expect(second[0]).toBe(first[0]);

    // Another kernel on the same file continues the conversation: this one must read it again.
    const other = await boot(home, fakeProvider(() => ({ text: 'from elsewhere' })));
    await send(other, 'three', id);
    await send(kernel, 'four', id);
    const fourth = obs.seen.at(-1)!;
    expect(fourth.map((m) => m.content.map((b) => (b.type === 'text' ? b.text : '')).join(''))).toEqual(['one', 'ok', 'two', 'ok', 'three', 'from elsewhere', 'four']);
    expect(fourth[0]).not.toBe(first[0]);

    // Edit and resend truncates: the turn after it starts from what is stored, not a stale hold.
    const truncateAt = fourth[2]!.id;
    const edit = kernel.runtime.startRun({ conversationId: id, input: [{ type: 'text', text: 'two, edited' }], mode: 'tools', provider: 'fake', truncateFromMessageId: truncateAt });
    await collectAll<LifecycleEvent>(edit.events);
    expect((await edit.result).status).toBe('completed');
    await send(kernel, 'five', id);
    expect(obs.seen.at(-1)!.map((m) => m.content.map((b) => (b.type === 'text' ? b.text : '')).join(''))).toEqual(['one', 'ok', 'two, edited', 'ok', 'five']);
  });
});
