/**
 * Opening a long conversation: the newest 100 of 10k messages, and all 10k, through the history
 * service (what the gateway's `conversations.load` calls), against the floor of the same rows read
 * with one prepared SELECT and JSON.parse of their content, in the same process.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { createKernel } from '../core/kernel.js';
import historySqlite from '../plugins/history-sqlite/index.js';
import { HISTORY_SERVICE, type HistoryService } from '../plugins/history-sqlite/service.js';
import { conversation } from './compaction-decision.js';

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

function time(fn: () => unknown, repeats: number): number {
  const xs: number[] = [];
  for (let i = 0; i < repeats; i++) {
    const t = performance.now();
    fn();
    xs.push(performance.now() - t);
  }
  return median(xs);
}

async function timeAsync(fn: () => Promise<unknown>, repeats: number): Promise<number> {
  const xs: number[] = [];
  for (let i = 0; i < repeats; i++) {
    const t = performance.now();
    await fn();
    xs.push(performance.now() - t);
  }
  return median(xs);
}

export async function benchHistoryPages(messages = 10_000) {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'la-bench-pages-'));
  const kernel = await createKernel({ home, builtins: [historySqlite], settings: {}, thirdParty: false });
  try {
    const id = 'c_bench_pages';
    const info = { conversationId: id, lastSeq: 0 };
    const hooks = kernel.sessionHooks;
    const all = conversation(messages);
    await hooks.saveUserMessage.promise(all[0]!, info);
    for (let i = 1; i < all.length; i += 2) {
      await hooks.saveRound.promise({ conversationId: id, runId: 'r', round: 1, assistant: all[i]!, provider: 'bench', model: 'bench-1', lastSeq: 0 });
      if (all[i + 1]) await hooks.saveUserMessage.promise(all[i + 1]!, info);
    }
    const history = kernel.services.get<HistoryService>(HISTORY_SERVICE)!;
    const db = new Database(path.join(home, 'liveagent.db'), { readonly: true });
    const last100 = db.prepare('SELECT * FROM messages WHERE conversation_id = ? ORDER BY ordinal DESC LIMIT 100');
    const full = db.prepare('SELECT * FROM messages WHERE conversation_id = ? ORDER BY ordinal');
    const parse = (rows: Array<{ content: string }>) => rows.map((r) => JSON.parse(r.content) as unknown);
    // Warm both paths.
    parse(full.all(id) as never);
    await history.getConversation(id);
    const pageFloor = time(() => parse(last100.all(id) as never), 51);
    const pageMs = await timeAsync(async () => {
      const c = await history.getConversation(id, { limit: 100 });
      if (c?.messages.length !== 100 || !c.hasMore) throw new Error('bad page');
    }, 51);
    const fullFloor = time(() => parse(full.all(id) as never), 9);
    const fullMs = await timeAsync(async () => {
      const c = await history.getConversation(id);
      if (c?.messages.length !== messages) throw new Error('bad full open');
    }, 9);
    // Turn start: the store's load of the window, as a run does it, with and without the window
    // the kernel still holds from the last run (SessionInfo.held: the store then skips the read).
    const snapshot = (await hooks.loadHistory.promise(info))!;
    const held = { stamp: snapshot.stamp ?? '', count: snapshot.messages.length, lastMessageId: snapshot.messages.at(-1)!.id };
    const reloadMs = await timeAsync(async () => {
      if ((await hooks.loadHistory.promise(info))?.messages.length !== messages) throw new Error('bad load');
    }, 9);
    const heldMs = await timeAsync(async () => {
      if (!(await hooks.loadHistory.promise({ ...info, held }))?.unchanged) throw new Error('the held window was not recognized');
    }, 51);
    db.close();
    return { messages, pageMs, pageFloor, pageRatio: pageMs / pageFloor, fullMs, fullFloor, fullRatio: fullMs / fullFloor, reloadMs, heldMs };
  } finally {
    await kernel.shutdown();
    fs.rmSync(home, { recursive: true, force: true });
  }
}
