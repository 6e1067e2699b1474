/**
 * The compaction plugin's pieces: the per-model budget, token accounting from the last usage,
 * the boundary (never splitting a call from its result), the file ledger and summary checks.
 */
import { describe, expect, it } from 'vitest';
import type { Message, ProviderRequest } from '../../plugin-api.js';
import { overflowTokens } from '../../plugins/compaction/compactor.js';
import { chooseBoundary, lastUserIndex, mergeLedger, pruneCandidates, recentFacts } from '../../plugins/compaction/plan.js';
import { budgetFor } from '../../plugins/compaction/settings.js';
import { SECTIONS, fitTranscript, summaryProblems } from '../../plugins/compaction/summary.js';
import { MessageCounter, estimateRequest, loadTokenizer, textTokens } from '../../plugins/compaction/tokens.js';

let n = 0;
const msg = (role: Message['role'], content: Message['content'], extra: Partial<Message> = {}): Message => ({ id: `m${++n}`, role, content, createdAt: 1000 + n, ...extra });
const user = (t: string) => msg('user', [{ type: 'text', text: t }]);
const reply = (t: string, extra: Partial<Message> = {}) => msg('assistant', [{ type: 'text', text: t }], { provider: 'p', model: 'm', ...extra });
const call = (id: string, name: string, input: Record<string, string>, extra: Partial<Message> = {}) => msg('assistant', [{ type: 'tool_call', id, name, input }], { provider: 'p', model: 'm', ...extra });
const result = (id: string, name: string, text: string, isError = false) => msg('tool', [{ type: 'tool_result', toolCallId: id, toolName: name, content: [{ type: 'text', text }], isError }]);
const request = (messages: Message[]): ProviderRequest => ({ model: 'm', system: [{ id: 'base', text: 'You are a test.' }], messages, tools: [], options: {}, conversationId: 'c' });

describe('compaction budget', () => {
  it('defaults to window − reserve, and a thresholdPercent the user sets applies, higher or lower', () => {
    const facts = { contextWindow: 200_000, maxOutputTokens: 64_000 };
    expect(budgetFor({}, 'p', 'm', facts)).toMatchObject({ contextWindow: 200_000, thresholdTokens: 200_000 - 16_384, reserveTokens: 16_384, keepRecentTokens: 20_000 });
    expect(budgetFor({ thresholdPercent: 95 }, 'p', 'm', facts).thresholdTokens).toBe(190_000);
    expect(budgetFor({ thresholdPercent: 50 }, 'p', 'm', facts).thresholdTokens).toBe(100_000);
    expect(budgetFor({ models: { 'p/m': { contextWindow: 8000 } } }, 'p', 'm', facts)).toMatchObject({ contextWindow: 8000, thresholdTokens: 6000, keepRecentTokens: 1600 });
    expect(budgetFor({ models: { m: { thresholdPercent: 70 } }, reserveTokens: 1000 }, 'p', 'm', facts).thresholdTokens).toBe(140_000);
  });
});

describe('token accounting', () => {
  it('counts with the tokenizer (code costs more than chars/4) and caches per message', async () => {
    await loadTokenizer();
    const code = 'const x = foo(bar[0], { a: 1 }); // ok\n'.repeat(50);
    expect(textTokens(code)).toBeGreaterThan(code.length / 4);
  });

  it('starts from the last usage of the same model after the checkpoint, estimating only what came after', async () => {
    await loadTokenizer();
    const counter = new MessageCounter();
    const spy = { calls: 0 };
    const tokensOf = counter.tokensOf.bind(counter);
    counter.tokensOf = (m) => (spy.calls++, tokensOf(m));
    const history = [user('hello'), reply('hi', { usage: { inputTokens: 900, outputTokens: 100, cacheReadTokens: 1000 } }), user('x '.repeat(50))];
    const e = estimateRequest(request(history), counter, 'p', 0);
    expect(e.anchor).toBe(1);
    expect(e.tokens).toBe(2000 + counter.tokensOf(history[2]!));
    expect(spy.calls).toBe(2);
    // Usage from another model, or from before the checkpoint, is not trusted.
    expect(estimateRequest(request(history), counter, 'other', 0).anchor).toBe(-1);
    expect(estimateRequest(request(history), counter, 'p', history[1]!.createdAt).anchor).toBe(-1);
  });

  it('reads the prompt size out of overflow errors', () => {
    expect(overflowTokens('prompt is too long: 214093 tokens > 200000 maximum')).toBe(214093);
    expect(overflowTokens("This model's maximum context length is 128000 tokens. However, your messages resulted in 130412 tokens.")).toBe(130412);
    expect(overflowTokens('The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).')).toBe(1200000);
    expect(overflowTokens('something else')).toBe(0);
  });
});

describe('compaction plan', () => {
  it('never starts the kept window at a tool result, and never covers the newest user message', () => {
    const counter = new MessageCounter();
    const w = [user('a'), call('t1', 'Read', { file_path: 'a.txt' }), result('t1', 'Read', 'x'.repeat(4000)), reply('done'), user('b'), call('t2', 'Bash', { command: 'ls' }), result('t2', 'Bash', 'out')];
    for (let keep = 0; keep < 3000; keep += 50) {
      const at = chooseBoundary(w, counter, keep, lastUserIndex(w));
      expect(w[at]?.role).not.toBe('tool');
      expect(at).toBeLessThanOrEqual(4);
    }
    expect(chooseBoundary(w, counter, 0, lastUserIndex(w))).toBe(4);
    // A boundary inside a turn moves back to the user message that opened it.
    const turns = [user('a'), reply('x'.repeat(2000)), user('b'), reply('y'.repeat(2000)), reply('z')];
    expect(chooseBoundary(turns, counter, 10, turns.length)).toBe(2);
  });

  it('keeps a ledger of successful reads and changes, merged across checkpoints', () => {
    const w = [
      call('r1', 'Read', { file_path: 'src/a.ts' }), result('r1', 'Read', 'ok'),
      call('r2', 'Read', { file_path: 'missing.ts' }), result('r2', 'Read', 'ENOENT', true),
      call('w1', 'Write', { file_path: 'src/a.ts' }, { editedFiles: [{ path: 'src/a.ts', action: 'write' }] }), result('w1', 'Write', 'ok'),
      call('w2', 'Edit', { file_path: 'src/b.ts' }), result('w2', 'Edit', 'old_string not found', true),
    ];
    expect(mergeLedger({ read: ['README.md'], modified: ['old.md'] }, w)).toEqual({ read: ['README.md'], modified: ['old.md', 'src/a.ts'] });
    expect(recentFacts([...w, call('b1', 'Bash', { command: 'npm test -- --run' }), result('b1', 'Bash', 'ok')])).toEqual({ files: ['src/a.ts'], commands: ['npm test -- --run'] });
  });

  it('prunes only old, large tool outputs, never those of the two newest user turns', () => {
    const counter = new MessageCounter();
    const w = [user('a'), call('t1', 'Read', {}), result('t1', 'Read', 'x '.repeat(500)), user('b'), call('t2', 'Read', {}), result('t2', 'Read', 'y '.repeat(500)), user('c')];
    expect(pruneCandidates(w, counter, new Set()).map((c) => c.toolCallId)).toEqual(['t1']);
    expect(pruneCandidates(w, counter, new Set(['t1']))).toEqual([]);
  });
});

describe('summary checks', () => {
  const good = SECTIONS.map((s) => `## ${s}\n- edited \`src/app.ts\` after \`npm test\` failed`).join('\n');
  it('accepts a complete summary and names what is missing otherwise', () => {
    expect(summaryProblems(good, { files: ['/w/src/app.ts'], commands: ['npm test --silent'] })).toEqual([]);
    expect(summaryProblems('', { files: [], commands: [] })).toEqual(['the checkpoint is empty']);
    const partial = good.replace('## Dead ends', '## Something else');
    expect(summaryProblems(partial, { files: ['lib/other.ts'], commands: ['cargo build'] })).toEqual([
      'these sections are missing: "## Dead ends"',
      'it does not name these files: lib/other.ts',
      'it does not name these commands: cargo build',
    ]);
  });

  it('fits a history larger than the summarizer window by cutting tool outputs, then the oldest lines', async () => {
    await loadTokenizer();
    const history = Array.from({ length: 40 }, (_, i) => [user(`question ${i} ${'w '.repeat(100)}`), reply(`answer ${i}`)]).flat();
    const text = fitTranscript(history, 2000, 1500);
    expect(textTokens(text)).toBeLessThanOrEqual(1600);
    expect(text).toMatch(/^\(… the \d+ oldest transcript lines were left out/);
    expect(text).toContain('answer 39');
  });
});
