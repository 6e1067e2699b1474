/**
 * The memory overview is pinned per conversation: a conversation's system prompt stays
 * byte-identical across its turns (and across a restart) however memory changes; the changes
 * reach the model as a `<memory-update>` on the newest user message only. Through the real
 * Anthropic provider, history-sqlite and the wire mock.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { LifecycleEvent, Settings } from '../../plugin-api.js';
import { createKernel, type Kernel } from '../../core/kernel.js';
import anthropicPlugin from '../../plugins/provider-anthropic/index.js';
import historyPlugin from '../../plugins/history-sqlite/index.js';
import memoryPlugin from '../../plugins/memory/index.js';
import { memoryUpdateText } from '../../plugins/memory/pinned-overview.js';
import { anthropicReply, startMockAnthropic } from '../fixtures/mock-anthropic.js';
import { collectAll } from '../helpers/streams.js';
import { trackResources } from '../helpers/cleanup.js';

const KEY = 'sk-ant-pinned-test';
const { kernels, closers, tmp } = trackResources();

async function boot(home: string, settings: Settings): Promise<Kernel> {
  const kernel = await createKernel({ home, plugins: [anthropicPlugin, historyPlugin, memoryPlugin], settings, thirdParty: false, logSink: () => undefined });
  kernels.push(kernel);
  expect(kernel.failures).toEqual([]);
  return kernel;
}

async function send(kernel: Kernel, text: string, opts: { workdir: string; conversationId?: string }) {
  const run = kernel.runtime.startRun({ input: [{ type: 'text', text }], mode: 'tools', ...opts });
  await collectAll<LifecycleEvent>(run.events);
  const result = await run.result;
  expect(result.status).toBe('completed');
  return run.conversationId;
}

const systemText = (body: { system?: Array<{ text: string }> }) => (body.system ?? []).map((b) => b.text).join('\n');
const userTexts = (body: { messages: Array<{ role: string; content: unknown }> }) =>
  body.messages.filter((m) => m.role === 'user').map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)));

describe('the pinned memory overview', () => {
  it('keeps a conversation\'s prompt byte-identical and tells the newest message what changed, across a restart', async () => {
    const home = tmp('la-memory-pin-home-');
    const workdir = tmp('la-memory-pin-wd-');
    const memDir = path.join(home, 'memory');
    fs.mkdirSync(memDir, { recursive: true });
    fs.writeFileSync(path.join(memDir, 'editor.md'), '# Uses vim\n');
    const mock = await startMockAnthropic({ apiKey: KEY, script: () => anthropicReply({ text: 'ok' }) });
    closers.push(mock);
    const settings: Settings = { providers: { claude_code: { baseUrl: mock.url, apiKey: KEY } }, memory: { autoExtract: false } };
    let kernel = await boot(home, settings);

    const conversationId = await send(kernel, 'first question about my setup', { workdir });
    const first = mock.requests.at(-1)!.body;
    expect(systemText(first)).toContain('/memories/editor.md');
    expect(JSON.stringify(first.messages)).not.toContain('memory-update');

    // Memory changes between turns: a new file, a changed one.
    fs.writeFileSync(path.join(memDir, 'shell.md'), '# Uses fish\n');
    fs.writeFileSync(path.join(memDir, 'editor.md'), '# Uses helix now\n');
    await send(kernel, 'second question', { workdir, conversationId });
    const second = mock.requests.at(-1)!.body;
    expect(systemText(second)).toBe(systemText(first));
    const users = userTexts(second);
    expect(users.at(-1)).toContain('<memory-update>');
    expect(users.at(-1)).toContain('new: /memories/shell.md: Uses fish');
    expect(users.at(-1)).toContain('changed: /memories/editor.md: Uses helix now');
    expect(users[0]).not.toContain('memory-update');

    // A new conversation starts from the files as they are now, with nothing to update.
    await send(kernel, 'another conversation', { workdir });
    const fresh = mock.requests.at(-1)!.body;
    expect(systemText(fresh)).toContain('/memories/shell.md');
    expect(JSON.stringify(fresh.messages)).not.toContain('memory-update');

    // The pin lives in history: after a restart the first conversation's prompt is still the same.
    await kernel.shutdown();
    kernels.splice(kernels.indexOf(kernel), 1);
    fs.rmSync(path.join(memDir, 'shell.md'));
    kernel = await boot(home, settings);
    await send(kernel, 'third question', { workdir, conversationId });
    const third = mock.requests.at(-1)!.body;
    expect(systemText(third)).toBe(systemText(first));
    expect(userTexts(third).at(-1)).toContain('changed: /memories/editor.md');
    expect(userTexts(third).at(-1)).not.toContain('shell.md');
    // Earlier user messages go out exactly as they were stored: the cached prefix holds.
    expect(userTexts(third).slice(0, -1).join('')).not.toContain('memory-update');
  });

  it('lists removals, caps long lists, and no first line can close the wrapper', () => {
    const now = Array.from({ length: 30 }, (_, i) => ({ path: `/memories/n${i}.md`, scope: 'user' as const, size: 3, mtimeMs: 0, firstLine: i === 0 ? 'x </memory-update> y' : 'note' }));
    const text = memoryUpdateText([{ path: '/memories/gone.md', size: 1, firstLine: 'old' }], now)!;
    expect(text.match(/<\/memory-update>/g)).toHaveLength(1);
    expect(text).toContain('... and 11 more changes');
    expect(memoryUpdateText(now.slice(0, 2), now.slice(0, 2))).toBeUndefined();
    expect(memoryUpdateText([{ path: '/memories/gone.md', size: 1, firstLine: 'old' }], [])).toContain('removed: /memories/gone.md');
  });
});
