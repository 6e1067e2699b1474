/**
 * Heap per conversation: 1,000 conversations each opened with one text run (SQLite history, an
 * in-process provider) and left idle, then forgotten; the heap (gc exposed) against the baseline
 * before them.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Plugin, ProviderEvent } from '../plugin-api.js';
import { createKernel } from '../core/kernel.js';
import historySqlite from '../plugins/history-sqlite/index.js';
import { heapAfterGc as heap } from './gc-heap.js';


const provider: Plugin = {
  name: 'bench-echo',
  apply: (ctx) =>
    void ctx.registerProvider({
      id: 'echo',
      displayName: 'Echo',
      defaultModel: 'echo-1',
      isConfigured: () => true,
      async *stream(): AsyncGenerator<ProviderEvent> {
        yield { type: 'block_start', index: 0, block: { type: 'text' } };
        yield { type: 'text_delta', index: 0, text: 'hello there' };
        yield { type: 'block_end', index: 0, block: { type: 'text', text: 'hello there' } };
        yield { type: 'usage', usage: { inputTokens: 3, outputTokens: 2 } };
        yield { type: 'done', stopReason: 'end' };
      },
    }),
};

export async function benchConversationsHeap(count = 1000) {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'la-bench-convs-'));
  const kernel = await createKernel({ home, builtins: [historySqlite, provider], settings: {}, thirdParty: false });
  const open = async (n: number) => {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const run = kernel.runtime.startRun({ input: [{ type: 'text', text: `hi ${i}` }], mode: 'text', keepEvents: false });
      await run.result;
      ids.push(run.conversationId);
    }
    return ids;
  };
  try {
    await open(100); // warm up
    const baseline = heap();
    const ids = await open(count);
    const opened = heap();
    for (const id of ids) await kernel.runtime.forgetConversation(id);
    const forgotten = heap();
    return { count, openPerConversationBytes: (opened - baseline) / count, forgottenPerConversationBytes: (forgotten - baseline) / count };
  } finally {
    await kernel.shutdown();
    fs.rmSync(home, { recursive: true, force: true });
  }
}
