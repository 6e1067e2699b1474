/**
 * The compaction decision per turn on a 10k-message conversation, against one history load of
 * the same conversation (SELECT + JSON.parse through the store, which every turn start pays
 * today). The decision is the kernel asking the real compaction plugin through the `compaction`
 * hook with the built request: anchored on the last reply's usage (the usual case), and right
 * after a checkpoint (no usable usage, every message estimated, from the per-message cache).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { CompactionRequest, Message, Plugin, RequestContext } from '../plugin-api.js';
import { createKernel } from '../core/kernel.js';
import compaction from '../plugins/compaction/index.js';
import { loadTokenizer } from '../plugins/compaction/tokens.js';
import historySqlite from '../plugins/history-sqlite/index.js';
import modelCatalog from '../plugins/model-catalog/index.js';

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export function conversation(n: number): Message[] {
  const out: Message[] = [];
  for (let i = 0; i < n; i += 2) {
    out.push({ id: `m_u${i}`, role: 'user', content: [{ type: 'text', text: `question ${i}: ${'some words of a question '.repeat(8)}` }], createdAt: 1000 + i });
    out.push({
      id: `m_a${i}`,
      role: 'assistant',
      content: [{ type: 'text', text: `answer ${i}: ${'a sentence of the answer '.repeat(12)}` }],
      createdAt: 1001 + i,
      provider: 'bench',
      model: 'bench-1',
      usage: { inputTokens: 100 + i * 60, outputTokens: 80 },
    });
  }
  return out;
}

export async function benchCompactionDecision(messages = 10_000, repeats = 200) {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'la-bench-compaction-'));
  const provider: Plugin = {
    name: 'bench-provider',
    apply: (ctx) =>
      void ctx.registerProvider({ id: 'bench', displayName: 'Bench', defaultModel: 'bench-1', models: [{ id: 'bench-1', contextWindow: 10_000_000, maxOutputTokens: 8192 }], isConfigured: () => true, stream: async function* () {} }),
  };
  const kernel = await createKernel({ home, builtins: [historySqlite, modelCatalog, compaction, provider], settings: {}, thirdParty: false });
  try {
    const history = conversation(messages);
    const info = { conversationId: 'c_bench', lastSeq: 0 };
    const hooks = kernel.sessionHooks;
    await hooks.saveUserMessage.promise(history[0]!, info);
    for (let i = 1; i < history.length; i += 2) {
      await hooks.saveRound.promise({ conversationId: 'c_bench', runId: 'r', round: 1, assistant: history[i]!, provider: 'bench', model: 'bench-1', lastSeq: 0 });
      if (history[i + 1]) await hooks.saveUserMessage.promise(history[i + 1]!, info);
    }
    const loads: number[] = [];
    for (let i = 0; i < 15; i++) {
      const t = performance.now();
      const snap = await hooks.loadHistory.promise(info);
      loads.push(performance.now() - t);
      if (snap?.messages.length !== messages) throw new Error(`loaded ${snap?.messages.length} messages`);
    }
    await loadTokenizer();
    const window = (await hooks.loadHistory.promise(info))!.messages;
    window.push({ id: 'm_new', role: 'user', content: [{ type: 'text', text: 'and one more question' }], createdAt: 1e9 });
    const ctx = { conversationId: 'c_bench', runId: 'r', round: 1, mode: 'text', provider: kernel.runtime.provider('bench')!, model: 'bench-1', workdir: home, settings: {}, tools: [], signal: new AbortController().signal } as RequestContext;
    const decide = async (checkpointAt: number) => {
      const times: number[] = [];
      for (let i = 0; i < repeats; i++) {
        const t = performance.now();
        const req: CompactionRequest = {
          trigger: 'pre-send',
          force: false,
          messages: window.slice(),
          request: { model: 'bench-1', system: [{ id: 'base', text: 'You are a bench.' }], messages: window.slice(), tools: [], options: {}, conversationId: 'c_bench' },
          provider: 'bench',
          model: 'bench-1',
          signal: ctx.signal,
          begin() {},
          ...(checkpointAt ? { checkpoint: { kind: 'summary', summary: 's', coveredMessageCount: 0, prunedToolCallIds: [], ledger: { read: [], modified: [] }, trigger: 'manual', tokensBefore: 0, tokensAfter: 0, createdAt: checkpointAt } } : {}),
        };
        const answer = await hooks.compaction.promise(req, ctx);
        times.push(performance.now() - t);
        if (!answer || !('budget' in answer)) throw new Error('expected a budget answer');
      }
      return median(times);
    };
    const anchoredMs = await decide(0);
    await decide(2e9); // warm the per-message cache, as the first request after a checkpoint does
    const unanchoredMs = await decide(2e9);
    return { messages, loadMs: median(loads), anchoredMs, unanchoredMs };
  } finally {
    await kernel.shutdown();
    fs.rmSync(home, { recursive: true, force: true });
  }
}
