/**
 * Compaction end to end: the real compaction plugin, history-sqlite and the claude_code
 * provider's SDK against the wire mock, with a 4000-token context window. Each trigger compacts
 * once per crossing, the next request carries the summary and only the uncovered window, and the
 * chat goes on (also after a restart).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { HistoryService } from '../../plugins/history-sqlite/service.js';
import { anthropicError, anthropicReply } from '../fixtures/mock-anthropic.js';
import { compactions, contexts, isSummaryRequest, lastUserText, sized, startHarness, systemOf, turn, WINDOW, type Harness } from './compaction-harness.js';

const harnesses: Harness[] = [];
afterEach(async () => {
  for (const h of harnesses.splice(0)) await h.close();
});
async function harness(...args: Parameters<typeof startHarness>) {
  const h = await startHarness(...args);
  harnesses.push(h);
  return h;
}

describe('compaction with the wire mock', () => {
  it('pre-send: compacts once per crossing; the next request carries the summary and only the kept window; reopening continues from it', async () => {
    const h = await harness();
    let id: string | undefined;
    const perRun: Array<Array<Record<string, unknown>>> = [];
    for (let n = 1; n <= 14; n++) {
      const r = await h.send(turn(n), id);
      expect(r.status).toBe('completed');
      id = r.conversationId;
      perRun.push(compactions(r.events));
      const ctx = contexts(r.events)[0]!;
      expect(ctx).toMatchObject({ contextWindow: WINDOW, thresholdTokens: WINDOW - 500 });
      if (compactions(r.events).some((p) => p.phase === 'end')) expect(ctx.usedTokens as number).toBeLessThan(WINDOW - 500);
    }
    const runsThatCompacted = perRun.map((p, i) => (p.length ? i : -1)).filter((i) => i >= 0);
    expect(runsThatCompacted.length).toBeGreaterThanOrEqual(1);
    // Once per crossing: never two runs in a row, each a start then an end, all pre-send.
    for (let k = 1; k < runsThatCompacted.length; k++) expect(runsThatCompacted[k]! - runsThatCompacted[k - 1]!).toBeGreaterThan(1);
    for (const i of runsThatCompacted) expect(perRun[i]!.map((p) => [p.phase, p.trigger])).toEqual([['start', 'pre-send'], ['end', 'pre-send']]);

    const first = runsThatCompacted[0]!;
    const end = perRun[first]!.find((p) => p.phase === 'end')!;
    expect(end).toMatchObject({ kind: 'summary', provider: 'tiny', model: 'tiny-1' });
    expect(end.tokensAfter as number).toBeLessThan(end.tokensBefore as number);
    // The request right after the first summary: summary in the system prompt, the new user turn last, old turns gone.
    const summaryAt = h.mock.requests.findIndex(isSummaryRequest);
    const next = h.mock.requests[summaryAt + 1]!;
    expect(systemOf(next.body)).toContain('<context-checkpoint>');
    expect(systemOf(next.body)).toContain('Keep counting turns (checkpoint 1)');
    expect(lastUserText(next.body)).toBe(turn(first + 1));
    expect(JSON.stringify(next.body.messages)).not.toContain('turn 1:');
    // The summarizer saw the covered turns as a transcript, not as conversation turns.
    const summaryReq = h.mock.requests[summaryAt]!;
    expect(summaryReq.body.messages).toHaveLength(1);
    expect(lastUserText(summaryReq.body)).toContain('<transcript>');
    expect(lastUserText(summaryReq.body)).toContain('[user] turn 1:');

    const history = h.kernel.services.get<HistoryService>('history')!;
    const stored = (await history.getConversation(id!))!;
    expect(stored.segments.length).toBe(runsThatCompacted.length + 1);
    expect(stored.segments[1]!.checkpoint).toMatchObject({ kind: 'summary', trigger: 'pre-send', provider: 'tiny', model: 'tiny-1' });
    expect(stored.messages).toHaveLength(28); // nothing is deleted: covered messages stay in their segment
    // The summaries' own tokens count with the conversation's usage (round 0: not a model round).
    const spent = (await history.getUsage(id!)).filter((u) => u.round === 0);
    expect(spent).toHaveLength(runsThatCompacted.length);
    expect(spent[0]).toMatchObject({ provider: 'tiny', model: 'tiny-1', messageId: null, inputTokens: 500, outputTokens: 120 });

    await h.restart();
    const before = h.chatRequests().length;
    const again = await h.send('after the restart', id);
    expect(again.status).toBe('completed');
    const resumed = h.chatRequests()[before]!;
    expect(systemOf(resumed.body)).toContain('<context-checkpoint>');
    expect(JSON.stringify(resumed.body.messages)).not.toContain('turn 1:');
  });

  it('overflow: the provider refuses the prompt, the run compacts once and the retried request succeeds; a second overflow is a clear error', async () => {
    const h = await harness();
    let id: string | undefined;
    for (let n = 1; n <= 4; n++) id = (await h.send(turn(n), id)).conversationId;
    const r = await h.send('/overflow please', id);
    expect(r.status).toBe('completed');
    expect(compactions(r.events).map((p) => [p.phase, p.trigger])).toEqual([['start', 'overflow'], ['end', 'overflow']]);
    // The provider's count (5200) is what the checkpoint reports as before.
    expect(compactions(r.events)[1]).toMatchObject({ tokensBefore: 5200 });
    expect(r.events.filter((e) => e.type === 'message_start')).toHaveLength(1);

    const requestsBefore = h.mock.requests.length;
    const stuck = await h.send('/always-overflow', id);
    expect(stuck.status).toBe('error');
    expect(stuck.error).toMatch(/prompt is too long: 9000 tokens > 4000 maximum.*does not fit the context window of tiny-1/);
    // One request, one compaction attempt (it may summarize or find nothing), one retry: never a loop.
    expect(h.chatRequests().length).toBeLessThanOrEqual(requestsBefore + 2);
    expect(h.mock.requests.length - requestsBefore).toBeLessThanOrEqual(3);
    // And the chat is still usable.
    const still = await h.send('still there?', id);
    expect(still.status, still.error).toBe('completed');
  });

  it('mid-stream: a reply that outgrows the window is stopped, kept marked, compacted, and continued', async () => {
    const h = await harness({
      reply: (req, user) => {
        if (user.startsWith('/long')) return sized(req, 'long answer '.repeat(1500), 150);
        if (user.startsWith('Your previous reply was cut off')) return sized(req, 'and that is the end.');
        return undefined;
      },
    });
    let id: string | undefined;
    for (let n = 1; n <= 3; n++) id = (await h.send(turn(n), id)).conversationId;
    const r = await h.send('/long story', id);
    expect(r.status).toBe('completed');
    expect(compactions(r.events).map((p) => [p.phase, p.trigger])).toEqual([['start', 'mid-stream'], ['end', 'mid-stream']]);
    const ends = r.events.flatMap((e) => (e.type === 'message_end' ? [e.message] : []));
    expect(ends).toHaveLength(2);
    expect(ends[0]!.meta).toMatchObject({ partial: true, interrupted: 'compaction' });
    const partialText = ends[0]!.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
    expect(partialText.length).toBeGreaterThan(1000);
    expect(partialText.length).toBeLessThan('long answer '.repeat(1500).length);
    const continuation = h.chatRequests().at(-1)!;
    expect(lastUserText(continuation.body)).toMatch(/^Your previous reply was cut off/);
    expect(systemOf(continuation.body)).toContain('<context-checkpoint>');
    expect(JSON.stringify(continuation.body.messages)).toContain(partialText.slice(0, 200));
  });

  it('post-tool: tool results that push the context over compact before the next round', async () => {
    const workdir = fs.mkdtempSync(path.join(os.tmpdir(), 'la-compaction-wd-'));
    fs.writeFileSync(path.join(workdir, 'big.txt'), Array.from({ length: 900 }, (_, i) => `line ${i} of a long file with words`).join('\n'));
    const h = await harness(
      {
        reply: (req, user) => {
          const last = req.body.messages.at(-1);
          const sawResult = Array.isArray(last?.content) && last.content.some((b: { type: string }) => b.type === 'tool_result');
          if (user.startsWith('/read') && !sawResult) return { kind: 'sse', events: anthropicReply({ toolUses: [{ id: 'toolu_01Read', name: 'Read', input: { file_path: 'big.txt' } }], stopReason: 'tool_use', usage: { input_tokens: 900, output_tokens: 20 } }) };
          return undefined;
        },
      },
      // The tool definitions alone take ~3k tokens: give this model a 12k window.
      { compaction: { keepRecentTokens: 600, models: { 'tiny/tiny-1': { contextWindow: 12_000 } } } },
      workdir,
    );
    let id: string | undefined;
    for (let n = 1; n <= 3; n++) id = (await h.send(turn(n), id, 'tools')).conversationId;
    const r = await h.send('/read big.txt and tell me', id, 'tools');
    expect(r.status).toBe('completed');
    const triggers = compactions(r.events).map((p) => [p.phase, p.trigger]);
    expect(triggers).toEqual([['start', 'post-tool'], ['end', 'post-tool']]);
    const after = h.chatRequests().at(-1)!;
    expect(systemOf(after.body)).toContain('<context-checkpoint>');
    expect(systemOf(after.body)).toContain('Tool rules:');
    expect(JSON.stringify(after.body.messages)).toContain('line 899 of a long file');
  });

  it('a failing summary leaves the history as it was and the chat usable; an unusable one gets one repair round', async () => {
    let mode: 'down' | 'repair' = 'down';
    let repairModeCalls = 0;
    const h = await harness({
      summary: () => {
        if (mode === 'down') return anthropicError(500, 'api_error', 'Internal server error');
        return ++repairModeCalls === 1 ? { kind: 'sse', events: anthropicReply({ text: 'Sure! They talked about turns.' }) } : undefined;
      },
    });
    let id: string | undefined;
    let failedAt = -1;
    for (let n = 1; n <= 10 && failedAt < 0; n++) {
      const r = await h.send(turn(n), id);
      id = r.conversationId;
      expect(r.status).toBe('completed');
      if (compactions(r.events).some((p) => p.phase === 'error')) failedAt = n;
    }
    expect(failedAt).toBeGreaterThan(0);
    const history = h.kernel.services.get<HistoryService>('history')!;
    expect((await history.getConversation(id!))!.segments).toHaveLength(1);
    // The failed request did not lose anything: it carried every turn.
    expect(JSON.stringify(h.chatRequests().at(-1)!.body.messages)).toContain('turn 1:');

    mode = 'repair';
    let compacted = false;
    for (let n = failedAt + 1; n <= failedAt + 8 && !compacted; n++) {
      const r = await h.send(turn(n), id);
      compacted = compactions(r.events).some((p) => p.phase === 'end');
    }
    expect(compacted).toBe(true);
    const repairs = h.summaryRequests().filter((r) => JSON.stringify(r.body.messages).includes('cannot be used yet'));
    expect(repairs).toHaveLength(1);
    expect(lastUserText(repairs[0]!.body)).toMatch(/these sections are missing: "## Task"/);
  });

  it('manual: runtime.compact summarizes everything but the recent window, even under the threshold', async () => {
    const h = await harness();
    let id: string | undefined;
    for (let n = 1; n <= 3; n++) id = (await h.send(turn(n), id)).conversationId;
    const outcome = await h.kernel.runtime.compact(id!);
    expect(outcome.status).toBe('compacted');
    expect(outcome.checkpoint).toMatchObject({ kind: 'summary', trigger: 'manual', provider: 'tiny' });
    expect(outcome.checkpoint!.coveredMessageCount).toBeGreaterThan(0);
    await h.send('next', id);
    expect(systemOf(h.chatRequests().at(-1)!.body)).toContain('<context-checkpoint>');
  });
  it('a threshold changed in settings applies to the next request, and compaction.model names who summarizes', async () => {
    const h = await harness();
    const a = await h.send(turn(1));
    await h.send(turn(2), a.conversationId);
    expect(h.summaryRequests()).toHaveLength(0);
    await h.kernel.settings.update({ compaction: { thresholdPercent: 10, model: 'tiny/tiny-summarizer', keepRecentTokens: 100 } });
    const r = await h.send(turn(3), a.conversationId);
    expect(contexts(r.events)[0]).toMatchObject({ thresholdTokens: 400 });
    expect(compactions(r.events).map((p) => p.phase)).toEqual(['start', 'end']);
    expect(compactions(r.events)[1]).toMatchObject({ provider: 'tiny', model: 'tiny-summarizer' });
    expect(h.summaryRequests().map((q) => q.body.model)).toEqual(['tiny-summarizer']);
    // A bad value is refused by the store and the previous settings stay in force.
    await expect(h.kernel.settings.update({ compaction: { thresholdPercent: 500 } })).rejects.toThrow(/settings: compaction\.thresholdPercent: must be at most 100/);
    expect(h.kernel.settings.get().compaction).toMatchObject({ thresholdPercent: 10 });
  });
});
