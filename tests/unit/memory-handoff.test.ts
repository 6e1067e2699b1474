/**
 * Turns still waiting for extraction when a host stops are handed to the next host on the same
 * home (plugins/memory/handoff.ts): saved at shutdown (waiting ones, and one whose extraction
 * the shutdown cut short), claimed by exactly one process at start and extracted at once.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { CompletionOptions, CompletionResult, Message, SessionInfo } from '../../plugin-api.js';
import { Extractor } from '../../plugins/memory/extractor.js';
import { ExtractionHandoff } from '../../plugins/memory/handoff.js';
import { MEMORY_DEFAULTS, type MemorySettings } from '../../plugins/memory/settings.js';
import { UnreviewedList } from '../../plugins/memory/unreviewed.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});
const silent = { debug() {}, info() {}, warn() {}, error() {} };
const tick = (ms = 20) => new Promise((r) => setTimeout(r, ms));

/** An extractor on `dir`; `answer` decides what the model replies (never: it hangs until aborted). */
function host(dir: string, settings: Partial<MemorySettings>, answer: 'reply' | 'hang' = 'reply') {
  const calls: CompletionOptions[] = [];
  const list = new UnreviewedList(dir);
  const extractor = new Extractor({
    runtime: {
      complete: (o: CompletionOptions) => {
        calls.push(o);
        if (answer === 'hang') return new Promise<CompletionResult>((_, reject) => o.signal?.addEventListener('abort', () => reject(new Error('cancelled')), { once: true }));
        const text = JSON.stringify({ memories: [{ text: 'The user deploys on Fridays', scope: 'user', file: 'preferences.md' }] });
        return Promise.resolve({ text, message: { id: 'm', role: 'assistant', content: [{ type: 'text', text }], createdAt: 0 } });
      },
    },
    logger: silent,
    settings: () => ({ ...MEMORY_DEFAULTS, ...settings }),
    list,
    files: async () => [],
    reportFailure: () => {},
    handoff: new ExtractionHandoff(dir, () => {}),
  });
  let n = 0;
  const turn = (conversationId: string, text: string) => {
    const runId = `run-${conversationId}-${++n}`;
    const session: SessionInfo = { conversationId, lastSeq: 0, run: { runId, mode: 'tools', provider: 'fake', model: 'fake-1', workdir: dir } };
    const user: Message = { id: `user-${n}`, role: 'user', content: [{ type: 'text', text }], createdAt: 0 };
    extractor.userMessage(user, session);
    extractor.turnEnded({ status: 'completed', conversationId, runId, messages: [{ id: `a-${n}`, role: 'assistant', content: [{ type: 'text', text: 'noted' }], createdAt: 0 }], usage: { inputTokens: 0, outputTokens: 0 } }, session);
  };
  return { extractor, calls, list, turn };
}

const pendingFile = (dir: string) => path.join(dir, '.pending-extractions.json');

describe('extraction handoff between hosts', () => {
  it('a host that stops before the quiet time is over leaves the turns; the next host extracts them at once', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'la-memhand-'));
    dirs.push(dir);
    const first = host(dir, { idleMs: 60_000 });
    first.turn('c1', 'Please remember that I deploy on Fridays');
    await first.extractor.shutdown();
    expect(first.calls).toHaveLength(0);
    expect(fs.statSync(pendingFile(dir)).mode & 0o777).toBe(0o600);

    const next = host(dir, { idleMs: 60_000 });
    expect(await next.extractor.resume()).toBe(1);
    await next.extractor.whenIdle();
    expect(next.calls).toHaveLength(1);
    expect(JSON.stringify(next.calls[0]!.messages)).toContain('deploy on Fridays');
    expect((await next.list.list()).map((p) => [p.text, p.source.conversationId])).toEqual([['The user deploys on Fridays', 'c1']]);
    expect(fs.existsSync(pendingFile(dir))).toBe(false);
    await next.extractor.shutdown();
    expect(fs.existsSync(pendingFile(dir))).toBe(false);
  });

  it('an extraction the shutdown cut short is handed off too, and two hosts starting together take it once', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'la-memhand-'));
    dirs.push(dir);
    const first = host(dir, { idleMs: 0, timeoutMs: 100 }, 'hang');
    first.turn('c2', 'Please remember that I use tabs everywhere');
    await tick(30);
    expect(first.calls).toHaveLength(1);
    await first.extractor.shutdown();
    const [a, b] = [host(dir, {}), host(dir, {})];
    const taken = await Promise.all([a.extractor.resume(), b.extractor.resume()]);
    expect(taken.sort()).toEqual([0, 1]);
    await Promise.all([a.extractor.whenIdle(), b.extractor.whenIdle()]);
    expect(a.calls.length + b.calls.length).toBe(1);
  });

  it('saving merges with what another host left meanwhile, newest kept within the bound', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'la-memhand-'));
    dirs.push(dir);
    const handoff = new ExtractionHandoff(dir, () => {});
    const batch = (i: number) => ({ conversationId: `c${i}`, turns: [{ runId: `r${i}`, userText: `text ${i}`, assistantText: 'ok' }], provider: 'p', model: 'm', workdir: dir, savedAt: Date.now() + i });
    // Hosts stopping at the same moment: every batch survives.
    await Promise.all(Array.from({ length: 8 }, (_, i) => handoff.save([batch(i), batch(i + 100)])));
    expect((await handoff.claim()).map((b) => b.conversationId).sort()).toEqual(Array.from({ length: 8 }, (_, i) => [`c${i}`, `c${i + 100}`]).flat().sort());
    // Bounded: the newest 50.
    for (let i = 0; i < 60; i++) await handoff.save([batch(i)]);
    const all = await handoff.claim();
    expect(all).toHaveLength(50);
    expect(all.at(-1)!.conversationId).toBe('c59');
    // A file that is not ours to read is dropped with a warning, not a crash.
    fs.writeFileSync(pendingFile(dir), 'not json');
    expect(await handoff.claim()).toEqual([]);
  });
});
