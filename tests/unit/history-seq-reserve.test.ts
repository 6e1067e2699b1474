/**
 * Round commits write no conversation row; the seq reservation a run took at its start is what
 * keeps numbers from repeating after a kill -9. A run that goes past half its reservation has it
 * extended by the round commit, so even a run longer than one reservation never lets the next
 * run (after a crash, no turn end) start below a number it already emitted.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Message, SessionInfo } from '../../plugin-api.js';
import { openDatabase, type HistoryDatabase } from '../../plugins/history-sqlite/database.js';
import { SEQ_RESERVE } from '../../lib/history-shared/store-rules.js';
import { HistoryStore } from '../../plugins/history-sqlite/store.js';

const open: HistoryDatabase[] = [];
const dirs: string[] = [];
afterEach(() => {
  for (const d of open.splice(0)) d.db.close();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

async function store(file: string) {
  const hdb = await openDatabase(file, { busyTimeoutMs: 5000, migrationLockTimeoutMs: 10_000 });
  open.push(hdb);
  return new HistoryStore(hdb.db);
}

const msg = (id: string, role: Message['role']): Message => ({ id, role, content: [{ type: 'text', text: id }], createdAt: Date.now() });
const run = (lastSeq: number): SessionInfo => ({ conversationId: 'c1', lastSeq, run: { runId: 'r1', mode: 'tools', provider: 'p', model: 'm', workdir: '/' } });

/** A fresh database with conversation c1's user message stored and its run's history loaded (the reservation taken). */
async function startedRun() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'la-seq-reserve-'));
  dirs.push(dir);
  const file = path.join(dir, 'history.db');
  const s1 = await store(file);
  s1.saveUserMessage(msg('u1', 'user'), run(0));
  return { file, s1, start: s1.loadHistory(run(0))!.lastSeq };
}

describe('seq reservation across round commits', () => {
  it('a run past half its reservation extends it, so a restart after a crash starts above every number emitted', async () => {
    const { file, s1, start } = await startedRun();
    // A round committed well inside the reservation leaves it as it is ...
    s1.saveRound({ conversationId: 'c1', runId: 'r1', round: 1, assistant: msg('a1', 'assistant'), provider: 'p', model: 'm', lastSeq: start + 10 });
    // ... one past its middle pushes it a whole reservation ahead of that round.
    const far = start + SEQ_RESERVE - 5;
    s1.saveRound({ conversationId: 'c1', runId: 'r1', round: 2, assistant: msg('a2', 'assistant'), provider: 'p', model: 'm', lastSeq: far });
    // The run goes on past its first reservation.
    const beyond = start + SEQ_RESERVE + 1000;
    s1.saveRound({ conversationId: 'c1', runId: 'r1', round: 3, assistant: msg('a3', 'assistant'), provider: 'p', model: 'm', lastSeq: beyond });
    // The process dies: no turn end gives the reservation back. The next run starts above it.
    open.pop()!.db.close();
    const s2 = await store(file);
    const next = s2.loadHistory(run(0))!;
    expect(next.lastSeq).toBeGreaterThan(beyond);
    expect(next.messages.map((m) => m.id)).toEqual(['u1', 'a1', 'a2', 'a3']);
  });

  it('a round whose conversation another connection deleted meanwhile makes its row again (the commit looks nothing up first)', async () => {
    const { file, s1, start } = await startedRun();
    // Another process deletes the conversation while the run goes on.
    const other = await openDatabase(file, { busyTimeoutMs: 5000, migrationLockTimeoutMs: 10_000 });
    open.push(other);
    other.db.prepare("DELETE FROM conversations WHERE id = 'c1'").run();
    const usage = { inputTokens: 3, outputTokens: 2 };
    s1.saveRound({ conversationId: 'c1', runId: 'r1', round: 1, assistant: { ...msg('a1', 'assistant'), usage }, toolResults: msg('t1', 'tool'), provider: 'p', model: 'm', lastSeq: start + 10, usage });
    const again = s1.loadHistory(run(0))!;
    expect(again.messages.map((m) => m.id)).toEqual(['a1', 't1']);
    expect(other.db.prepare("SELECT run_id, round FROM messages WHERE id = 'a1'").get()).toEqual({ run_id: 'r1', round: 1 });
  });
});
