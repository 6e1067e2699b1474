/**
 * A provider's `notice` event (ProviderEvent) reaches the run as a `notice` lifecycle event,
 * naming the provider, without counting as output of the reply.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { LifecycleEvent, Plugin, Provider, ProviderEvent } from '../../plugin-api.js';
import { createKernel, type Kernel } from '../../core/kernel.js';
import { collectAll } from '../helpers/streams.js';

const kernels: Kernel[] = [];
const homes: string[] = [];
afterEach(async () => {
  for (const k of kernels.splice(0)) await k.shutdown();
  for (const h of homes.splice(0)) fs.rmSync(h, { recursive: true, force: true });
});

const noticing: Provider = {
  id: 'noticing',
  displayName: 'Noticing',
  defaultModel: 'n-1',
  models: [{ id: 'n-1' }],
  isConfigured: () => true,
  async *stream(): AsyncIterable<ProviderEvent> {
    yield { type: 'notice', kind: 'api_fallback', message: 'this endpoint has no Responses API: using Chat Completions', details: { baseUrl: 'http://x' } };
    yield { type: 'block_start', index: 0, block: { type: 'text' } };
    yield { type: 'text_delta', index: 0, text: 'hi' };
    yield { type: 'block_end', index: 0, block: { type: 'text', text: 'hi' } };
    yield { type: 'done', stopReason: 'end' };
  },
} as unknown as Provider;

describe('provider notices', () => {
  it('become notice events of the run, naming the provider', async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'la-notice-'));
    homes.push(home);
    const plugin: Plugin = { name: 'p', apply: (ctx) => void ctx.registerProvider(noticing) };
    const kernel = await createKernel({ home, plugins: [plugin], settings: {}, thirdParty: false, logSink: () => undefined });
    kernels.push(kernel);
    const run = kernel.runtime.startRun({ input: [{ type: 'text', text: 'hello' }], mode: 'text', provider: 'noticing' });
    const events = await collectAll<LifecycleEvent>(run.events);
    expect((await run.result).status).toBe('completed');
    const notices = events.filter((e) => e.type === 'notice');
    expect(notices.map((e) => (e as { payload: unknown }).payload)).toEqual([{ baseUrl: 'http://x', kind: 'api_fallback', message: 'this endpoint has no Responses API: using Chat Completions', provider: 'noticing' }]);
  });
});
