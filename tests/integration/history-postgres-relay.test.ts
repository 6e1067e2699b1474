/**
 * Two processes on one PostgreSQL history: a title one stores (a rename, a generated title)
 * reaches the other's `watchConversations` listeners, which is what keeps the conversation list
 * a `serve` process shows in step with the others of a team. Skipped with one line without PostgreSQL.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createKernel, type Kernel } from '../../core/kernel.js';
import type { ConversationChange, HistoryService, Plugin } from '../../plugin-api.js';
import historyPostgres from '../../plugins/history-postgres/index.js';
import historySqlite from '../../plugins/history-sqlite/index.js';
import { HISTORY_SERVICE } from '../../plugins/history-sqlite/service.js';
import { fakeProvider } from '../helpers/fake-provider.js';
import { postgresSkip, usePostgres } from '../helpers/postgres.js';

const pg = usePostgres();
const kernels: Kernel[] = [];
const homes: string[] = [];

afterEach(async () => {
  for (const k of kernels.splice(0)) await k.shutdown();
  for (const h of homes.splice(0)) fs.rmSync(h, { recursive: true, force: true });
});

async function process(url: string) {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'la-relay-'));
  homes.push(home);
  const provider: Plugin = { name: 'p', apply: (ctx) => void ctx.registerProvider(fakeProvider([{ text: 'hi' }], 'p')) };
  const kernel = await createKernel({ home, plugins: [historySqlite, historyPostgres, provider], settings: { history: { url } }, thirdParty: false });
  kernels.push(kernel);
  return { kernel, history: kernel.services.get<HistoryService>(HISTORY_SERVICE)! };
}

function until<T>(get: () => T | undefined, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  return new Promise((resolve, reject) => {
    const look = () => {
      const v = get();
      if (v !== undefined) return resolve(v);
      if (Date.now() > deadline) return reject(new Error('timed out'));
      setTimeout(look, 20);
    };
    look();
  });
}

describe.skipIf(!!postgresSkip)('history changes between processes (PostgreSQL)', () => {
  it("a rename, a pin and a delete on one process reach the other's watchers, once, and not its own twice", async () => {
    const url = await pg.cluster().createDatabase();
    const a = await process(url);
    const b = await process(url);
    const seenA: ConversationChange[] = [];
    const seenB: ConversationChange[] = [];
    await a.history.watchConversations((c) => seenA.push(c));
    await b.history.watchConversations((c) => seenB.push(c));
    const run = a.kernel.runtime.startRun({ input: [{ type: 'text', text: 'hello' }], provider: 'p', mode: 'text' });
    const { conversationId } = await run.result;
    // B's listener connects in the background: rename until it has heard one.
    let n = 0;
    await until(() => {
      if (seenB.length) return true;
      void a.history.renameConversation(conversationId, `Renamed ${++n}`);
      return undefined;
    });
    const last = `Final name`;
    await a.history.renameConversation(conversationId, last);
    const heard = await until(() => seenB.find((c) => c.title === last));
    expect(heard).toEqual({ conversationId, kind: 'title', title: last, titleSource: 'user' });
    await new Promise((r) => setTimeout(r, 300));
    expect(seenB.filter((c) => c.title === last)).toHaveLength(1);
    // A heard its own change once, from itself, not again through the database.
    expect(seenA.filter((c) => c.title === last)).toHaveLength(1);

    // A pin and a delete travel the same way.
    await a.history.setConversationMeta(conversationId, { pinned: true });
    expect(await until(() => seenB.find((c) => c.kind === 'meta'))).toEqual({ conversationId, kind: 'meta' });
    expect(await a.kernel.runtime.deleteConversation(conversationId)).toBe(true);
    expect(await until(() => seenB.find((c) => c.kind === 'deleted'))).toEqual({ conversationId, kind: 'deleted' });
    expect(seenA.filter((c) => c.kind === 'deleted')).toHaveLength(1);
  });
});
