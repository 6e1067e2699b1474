/**
 * The tool loop: 200 rounds of a no-op tool through the whole runtime (provider-anthropic, the
 * kernel's hooks and dispatch, history-sqlite), against a hand-written loop over the raw
 * Anthropic SDK on the same loopback server (which runs in its own process). Reports CPU
 * (medians of interleaved repeats) and the heap each retains after a loop (gc exposed).
 *
 * For reference it also runs the same loop on a kernel without the history plugin (nothing
 * stored): the difference between the two ratios is what committing every round durably costs
 * (one SQLite write transaction per round, docs/decisions.md "Every round is committed").
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import type { Plugin, PluginModule } from '../plugin-api.js';
import { createKernel } from '../core/kernel.js';
import { compareCpu, type startBenchServer } from './stream-pipeline.js';
import { heapAfterGc as heap } from './gc-heap.js';

const KEY = 'bench-key';

const noopTool: Plugin = {
  name: 'bench-noop-tool',
  apply: (ctx) =>
    void ctx.registerTool({ name: 'Noop', description: 'Does nothing.', parameters: z.object({}), concurrency: 'parallel', execute: async () => ({ content: [{ type: 'text', text: 'ok' }] }) }),
};

/** The loop a developer would write with the SDK alone: stream, collect the tool call, answer it, repeat. */
async function rawLoop(url: string): Promise<number> {
  const { default: Anthropic } = await import('@anthropic-ai/sdk');
  const client = new Anthropic({ apiKey: KEY, baseURL: url, maxRetries: 0 });
  const tools = [{ name: 'Noop', description: 'Does nothing.', input_schema: { type: 'object' as const, properties: {} } }];
  const messages: Array<{ role: 'user' | 'assistant'; content: unknown }> = [{ role: 'user', content: 'go' }];
  let rounds = 0;
  for (;;) {
    const stream = await client.messages.create({ model: 'claude-sonnet-4-6', max_tokens: 1024, messages: messages as never, tools, stream: true });
    const blocks: Array<{ type: string; id?: string; name?: string; text?: string; json: string[] }> = [];
    let stop: string | null = null;
    for await (const ev of stream) {
      if (ev.type === 'content_block_start') blocks[ev.index] = { ...(ev.content_block as { type: string }), json: [] };
      else if (ev.type === 'content_block_delta' && ev.delta.type === 'input_json_delta') blocks[ev.index]!.json.push(ev.delta.partial_json);
      else if (ev.type === 'message_delta') stop = ev.delta.stop_reason;
    }
    rounds++;
    const calls = blocks.filter((b) => b.type === 'tool_use');
    if (stop !== 'tool_use' || calls.length === 0) return rounds;
    messages.push({ role: 'assistant', content: calls.map((c) => ({ type: 'tool_use', id: c.id, name: c.name, input: JSON.parse(c.json.join('') || '{}') })) });
    messages.push({ role: 'user', content: calls.map((c) => ({ type: 'tool_result', tool_use_id: c.id, content: 'ok' })) });
  }
}

export async function benchToolLoop(server: Awaited<ReturnType<typeof startBenchServer>>, rounds = 200, repeats = Number(process.env.LIVEAGENT_BENCH_REPEATS ?? 5)) {
  await server.setLoop(rounds);
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'la-bench-loop-'));
  fs.mkdirSync(path.join(home, 'no-history'));
  const anthropic = (await import('../plugins/provider-anthropic/index.js')).default as PluginModule;
  const history = (await import('../plugins/history-sqlite/index.js')).default as PluginModule;
  const boot = (withHistory: boolean) =>
    createKernel({
      home: withHistory ? home : path.join(home, 'no-history'),
      builtins: withHistory ? [anthropic, history, noopTool] : [anthropic, noopTool],
      // The held-window cache is off: it keeps each loop's conversation for its next turn (a bounded
      // cache, runtime.heldWindowMessages), which would read here as memory kept per round.
      settings: { providers: { claude_code: { apiKey: KEY, baseUrl: server.url } }, runtime: { maxRounds: rounds + 10, retryMaxAttempts: 1, heldWindowMessages: 0 } },
      thirdParty: false,
    });
  const kernel = await boot(true);
  const bare = await boot(false);
  const loopOn = (k: typeof kernel) => async () => {
    const run = k.runtime.startRun({ input: [{ type: 'text', text: 'go' }], mode: 'tools', provider: 'claude_code', keepEvents: false });
    const r = await run.result;
    if (r.status !== 'completed' || r.messages.length !== rounds * 2 + 1) throw new Error(`pipeline loop: ${r.status} after ${r.messages.length} messages (${r.error?.message ?? ''})`);
  };
  const pipeline = loopOn(kernel);
  const raw = async () => {
    const got = await rawLoop(server.url);
    if (got !== rounds + 1) throw new Error(`raw loop ran ${got} rounds`);
  };
  try {
    const { rawMs, pipelineMs, ratio } = await compareCpu(raw, pipeline, repeats);
    const nothingStored = await compareCpu(raw, loopOn(bare), repeats);
    // Retained heap over four loops each, after two more warm-up loops: what stays behind after a
    // loop, not what the first loops in the process leave (inline caches, caches, SQLite pages);
    // over four, one collection's timing moves the figure a quarter as much as over one.
    const LOOPS = 4;
    const retained = async (loop: () => Promise<void>) => {
      await loop();
      await loop();
      const before = heap();
      for (let i = 0; i < LOOPS; i++) await loop();
      return (heap() - before) / LOOPS;
    };
    const rawRetained = await retained(raw);
    const pipelineRetained = await retained(pipeline);
    return { rounds, rawMs, pipelineMs, ratio, noHistoryRatio: nothingStored.ratio, retainedPerRoundBytes: (pipelineRetained - rawRetained) / rounds };
  } finally {
    await server.setLoop(0);
    await kernel.shutdown();
    await bare.shutdown();
    fs.rmSync(home, { recursive: true, force: true });
  }
}
