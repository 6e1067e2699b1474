/**
 * Silent extraction's gates and bookkeeping (plugins/memory/extractor.ts), driven directly with
 * a controllable `complete`: quiet-time folding of quick follow-ups, one extraction in flight
 * per conversation, shutdown waiting for the one in flight and dropping the waiting ones; and
 * the prompt helpers (extract-prompt.ts) and the overview budget (overview.ts).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { CompletionOptions, CompletionResult, Message, RunResult, SessionInfo } from '../../plugin-api.js';
import { Extractor } from '../../plugins/memory/extractor.js';
import { memoryFileName, parseExtraction, worthExtracting } from '../../plugins/memory/extract-prompt.js';
import { overviewText } from '../../plugins/memory/overview.js';
import { MEMORY_DEFAULTS, type MemorySettings } from '../../plugins/memory/settings.js';
import { UnreviewedList } from '../../plugins/memory/unreviewed.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

const silent = { debug() {}, info() {}, warn() {}, error() {} };

function harness(settings: Partial<MemorySettings>) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'la-memx-'));
  dirs.push(dir);
  const calls: CompletionOptions[] = [];
  const pending: Array<(text: string) => void> = [];
  const list = new UnreviewedList(dir);
  const extractor = new Extractor({
    runtime: {
      complete: (o: CompletionOptions) => {
        calls.push(o);
        return new Promise<CompletionResult>((resolve, reject) => {
          o.signal?.addEventListener('abort', () => reject(new Error('cancelled')), { once: true });
          pending.push((text) => resolve({ text, message: { id: 'm', role: 'assistant', content: [{ type: 'text', text }], createdAt: 0 } }));
        });
      },
    },
    logger: silent,
    settings: () => ({ ...MEMORY_DEFAULTS, ...settings }),
    list,
    files: async () => [],
    reportFailure: () => {},
  });
  let n = 0;
  const turn = (conversationId: string, text: string, status: RunResult['status'] = 'completed') => {
    const runId = `run-${++n}`;
    const session: SessionInfo = { conversationId, lastSeq: 0, run: { runId, mode: 'tools', provider: 'fake', model: 'fake-1', workdir: dir } };
    const user: Message = { id: `user-${n}`, role: 'user', content: [{ type: 'text', text }], createdAt: 0 };
    extractor.userMessage(user, session);
    const reply: Message = { id: `asst-${n}`, role: 'assistant', content: [{ type: 'text', text: `reply ${n}` }], createdAt: 0 };
    extractor.turnEnded({ status, conversationId, runId, messages: [reply], usage: { inputTokens: 0, outputTokens: 0 } }, session);
  };
  const tick = (ms = 20) => new Promise((r) => setTimeout(r, ms));
  return { extractor, calls, pending, list, turn, tick };
}

const userTextOf = (o: CompletionOptions) => (o.messages[0]!.content[0] as { text: string }).text;

describe('the extractor', () => {
  it('folds quick follow-ups into one extraction after the quiet time', async () => {
    const h = harness({ idleMs: 60, spacingMs: 0 });
    h.turn('c1', 'We deploy the billing service on Fridays only.');
    await h.tick(20);
    h.turn('c1', 'And the staging cluster is called blue-harbor.');
    await h.tick(20);
    expect(h.calls).toHaveLength(0);
    await h.tick(80);
    expect(h.calls).toHaveLength(1);
    const prompt = userTextOf(h.calls[0]!);
    expect(prompt).toContain('billing service on Fridays');
    expect(prompt).toContain('blue-harbor');
    h.pending.shift()!('{"memories": [{"text": "Deploys happen on Fridays.", "scope": "project", "file": "deploys"}]}');
    await h.extractor.whenIdle();
    expect(await h.list.list()).toMatchObject([{ text: 'Deploys happen on Fridays.', scope: 'project', file: 'deploys.md', source: { conversationId: 'c1', messageId: 'user-2', runId: 'run-2' } }]);
  });

  it('keeps one extraction in flight per conversation; the turn that came meanwhile is read after it', async () => {
    const h = harness({ idleMs: 0, spacingMs: 0 });
    h.turn('c1', 'The user writes all their notes in Obsidian.');
    await h.tick();
    expect(h.calls).toHaveLength(1);
    h.turn('c1', 'They also keep a daily journal in Markdown.');
    h.turn('c2', 'My laptop is a ThinkPad running Fedora Linux.');
    await h.tick();
    // c2 is independent; c1's second turn waits for the first extraction.
    expect(h.calls.map(userTextOf).map((t) => (t.includes('ThinkPad') ? 'c2' : t.includes('journal') ? 'c1-second' : 'c1-first'))).toEqual(['c1-first', 'c2']);
    h.pending.shift()!('{"memories": []}');
    await h.tick();
    expect(h.calls).toHaveLength(3);
    expect(userTextOf(h.calls[2]!)).toContain('daily journal');
    expect(userTextOf(h.calls[2]!)).not.toContain('Obsidian');
    for (const p of h.pending.splice(0)) p('not json at all');
    await h.extractor.whenIdle();
    expect(await h.list.list()).toEqual([]);
  });

  it('an aborted turn drops the turns waiting with it; shutdown waits for the one in flight and drops the rest', async () => {
    const h = harness({ idleMs: 50, spacingMs: 0 });
    h.turn('c1', 'The user prefers dark themes everywhere.');
    h.turn('c1', 'Now rewrite the whole landing page please.', 'aborted');
    await h.tick(80);
    expect(h.calls).toHaveLength(0);

    const g = harness({ idleMs: 0, spacingMs: 0 });
    g.turn('c1', 'The user prefers dark themes everywhere.');
    await g.tick();
    expect(g.calls).toHaveLength(1);
    const idle = harness({ idleMs: 10_000, spacingMs: 0 });
    idle.turn('c9', 'This one waits for quiet time that never comes.');
    let finished = false;
    const stopping = g.extractor.shutdown().then(() => (finished = true));
    await g.tick();
    expect(finished).toBe(false);
    g.pending.shift()!('{"memories": [{"text": "Prefers dark themes."}]}');
    await stopping;
    expect((await g.list.list()).map((p) => p.text)).toEqual(['Prefers dark themes.']);
    await idle.extractor.shutdown();
    expect(idle.calls).toHaveLength(0);
    await idle.extractor.whenIdle();
  });

  it('shutdown aborts an extraction that outlasts its grace period (at most timeoutMs)', async () => {
    const h = harness({ idleMs: 0, spacingMs: 0, timeoutMs: 300 });
    h.turn('c1', 'The user prefers dark themes everywhere.');
    await h.tick();
    expect(h.calls).toHaveLength(1);
    const started = Date.now();
    await h.extractor.shutdown();
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(h.calls[0]!.signal!.aborted).toBe(true);
    expect(await h.list.list()).toEqual([]);
  });
});

describe('extraction prompt helpers', () => {
  it('reads the JSON answer leniently and proposes nothing for anything else', () => {
    expect(parseExtraction('{"memories": [{"text": " Likes tea. ", "scope": "project", "file": "Drinks & Food.md"}]}')).toEqual([{ text: 'Likes tea.', scope: 'project', file: 'drinks-food.md' }]);
    expect(parseExtraction('Sure! ```json\n{"memories": [{"text": "A"}]}\n``` hope that helps')).toEqual([{ text: 'A', scope: 'user', file: 'notes.md' }]);
    expect(parseExtraction('I cannot help with that.')).toEqual([]);
    expect(parseExtraction('{"memories": "nope"}')).toEqual([]);
    expect(parseExtraction(JSON.stringify({ memories: Array.from({ length: 9 }, (_, i) => ({ text: `m${i}` })) }))).toHaveLength(5);
    expect(memoryFileName('../../etc/passwd')).toBe('etc-passwd.md');
    expect(memoryFileName('.hidden')).toBe('hidden.md');
    expect(memoryFileName(undefined)).toBe('notes.md');
  });

  it('skips greetings and short texts', () => {
    for (const t of ['hi', 'Hello there!', 'thanks', 'Thank you so much!', 'ok', 'good morning', '谢谢']) expect(worthExtracting(t, 0), t).toBe(false);
    expect(worthExtracting('short', 20)).toBe(false);
    expect(worthExtracting('I always use pnpm in my projects.', 20)).toBe(true);
  });

  it('the overview stays within its line and byte budget and says how many files it left out', () => {
    const files = Array.from({ length: 50 }, (_, i) => ({ path: `/memories/f${i}.md`, scope: 'user' as const, size: 100, mtimeMs: 0, firstLine: `fact number ${i}` }));
    const byLines = overviewText(files, { maxLines: 10, maxBytes: 100_000 }, true)!;
    expect(byLines.split('\n').length).toBeLessThanOrEqual(10);
    expect(byLines).toMatch(/\.\.\. and \d+ more files: view \/memories/);
    const byBytes = overviewText(files, { maxLines: 1000, maxBytes: 1024 }, true)!;
    expect(Buffer.byteLength(byBytes)).toBeLessThanOrEqual(1024);
    expect(overviewText(files.slice(0, 2), { maxLines: 200, maxBytes: 16384 }, false)).toContain('not available in this mode');
    expect(overviewText([], { maxLines: 200, maxBytes: 16384 }, true)).toBeUndefined();
  });
});
