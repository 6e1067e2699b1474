/**
 * `liveagent compact --conversation ID` through the real CLI against the Anthropic wire mock:
 * it compacts a stored conversation, `--json` shows the compaction events and the outcome, bad
 * usage exits 2, the next `chat --conversation` carries the checkpoint, and a kill -9 while the
 * summary is being written loses nothing.
 */
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKernel } from '../../core/kernel.js';
import historySqlite from '../../plugins/history-sqlite/index.js';
import { HISTORY_SERVICE, type HistoryService } from '../../plugins/history-sqlite/service.js';
import { anthropicReply, startMockAnthropic, type MockAnthropicServer } from '../fixtures/mock-anthropic.js';
import { BIN, jsonLines, runCli, tempHome } from '../helpers/cli.js';
import { goodSummary, isSummaryRequest, lastUserText, providerSettings, sized, systemOf, turn } from './compaction-harness.js';

let mock: MockAnthropicServer;
let holdSummaries = false;
let summaryArrived: (() => void) | undefined;
const held: Array<() => void> = [];

beforeAll(async () => {
  mock = await startMockAnthropic({
    script: async (req) => {
      if (!isSummaryRequest(req)) return sized(req, `ok ${lastUserText(req.body).slice(0, 10)} ${'words '.repeat(40)}`);
      if (holdSummaries) {
        summaryArrived?.();
        await new Promise<void>((r) => held.push(r));
      }
      return anthropicReply({ text: goodSummary(lastUserText(req.body), 1) });
    },
  });
});

afterAll(async () => {
  for (const r of held.splice(0)) r();
  await mock.close();
});

async function conversation(home: string, turns: number): Promise<string> {
  let id = '';
  for (let n = 1; n <= turns; n++) {
    const r = await runCli(['chat', '--mode', 'text', ...(id ? ['--conversation', id] : []), '--json', turn(n)], { home });
    expect(r.code, r.stderr).toBe(0);
    id = jsonLines(r.stdout)[0]!.conversationId;
  }
  return id;
}

describe('liveagent compact', () => {
  it('compacts a stored conversation; --json shows the events; the next chat carries the checkpoint', async () => {
    const home = tempHome(providerSettings(mock.url));
    const id = await conversation(home, 4);
    const r = await runCli(['compact', '--conversation', id], { home });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^compacted ${id}: \\d+ messages summarized by tiny · tiny-1; context \\d+ → \\d+ tokens\\n$`));

    // Right after it there is nothing left to compact; two turns later there is.
    const nothing = await runCli(['compact', '--conversation', id], { home });
    expect(nothing.code, nothing.stderr).toBe(0);
    expect(nothing.stdout).toMatch(/^nothing to compact: /);
    for (const n of [5, 6]) expect((await runCli(['chat', '--mode', 'text', '--conversation', id, turn(n)], { home })).code).toBe(0);
    const again = await runCli(['compact', '--conversation', id, '--json'], { home });
    expect(again.code, again.stderr).toBe(0);
    const lines = jsonLines(again.stdout);
    expect(lines.filter((l) => l.type === 'compaction').map((l) => l.payload.phase)).toEqual(['start', 'end']);
    expect(lines.every((l) => l.type === 'compaction_outcome' || (l.conversationId === id && typeof l.seq === 'number'))).toBe(true);
    expect(lines.at(-1)).toMatchObject({ type: 'compaction_outcome', status: 'compacted', checkpoint: { trigger: 'manual' } });

    const before = mock.requests.length;
    const chat = await runCli(['chat', '--mode', 'text', '--conversation', id, '--json', 'and now?'], { home });
    expect(chat.code, chat.stderr).toBe(0);
    const sent = mock.requests.slice(before).find((q) => !isSummaryRequest(q))!;
    expect(systemOf(sent.body)).toContain('<context-checkpoint>');
    expect(JSON.stringify(sent.body.messages)).not.toContain('turn 1:');
    const events = jsonLines(chat.stdout);
    expect(events.find((e) => e.type === 'context')).toMatchObject({ payload: { contextWindow: 4000 } });
    // seq rises across the runs and the compactions in between
    expect(events[0]!.seq).toBeGreaterThan(lines.filter((l) => l.seq).at(-1)!.seq);
  }, 90_000); // six CLI processes: slow on a loaded 2-core machine

  it('bad usage and unknown conversations exit 2 with one line', async () => {
    const home = tempHome(providerSettings(mock.url));
    const missing = await runCli(['compact'], { home });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/--conversation ID is required/);
    const bad = await runCli(['compact', '--conversation', '../x'], { home });
    expect(bad.code).toBe(2);
    const unknown = await runCli(['compact', '--conversation', 'c_nope'], { home });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr.trim()).toMatch(/^liveagent: unknown conversation "c_nope"$/);
  });

  it('kill -9 while the summary is written loses nothing: the history is as it was and the chat goes on', async () => {
    const home = tempHome(providerSettings(mock.url));
    const id = await conversation(home, 4);
    holdSummaries = true;
    const arrived = new Promise<void>((r) => (summaryArrived = r));
    const env: NodeJS.ProcessEnv = { ...process.env, LIVEAGENT_HOME: home };
    for (const k of Object.keys(env)) if (/^(ANTHROPIC|OPENAI|GEMINI)_/.test(k)) delete env[k];
    const child = spawn(process.execPath, [BIN, 'compact', '--conversation', id], { env, cwd: home, stdio: 'ignore' });
    await arrived;
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    holdSummaries = false;
    for (const r of held.splice(0)) r();

    const kernel = await createKernel({ home, builtins: [historySqlite], thirdParty: false });
    const history = kernel.services.get<HistoryService>(HISTORY_SERVICE)!;
    const stored = (await history.getConversation(id))!;
    expect(stored.segments).toHaveLength(1);
    expect(stored.messages).toHaveLength(8);
    await kernel.shutdown();

    const chat = await runCli(['chat', '--mode', 'text', '--conversation', id, 'still here?'], { home });
    expect(chat.code, chat.stderr).toBe(0);
    expect(chat.stdout).toContain('ok still here');
  });
});
