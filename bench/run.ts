/**
 * `npm run bench`: every performance claim, measured as ratios against a floor in the same run.
 *   LIVEAGENT_BENCH_N=50000 (default) sets the large stream size; the small one is a tenth.
 */
import fs from 'node:fs';
import { benchStreamPipeline, startBenchServer, type BenchFormat } from './stream-pipeline.js';
import { benchStartup } from './startup.js';

const N = Number(process.env.LIVEAGENT_BENCH_N ?? 50_000);
const small = Math.max(100, Math.round(N / 10));
const only = process.env.LIVEAGENT_BENCH_ONLY?.split(',');

const formats: Array<[BenchFormat, string]> = [
  ['anthropic', 'provider-anthropic'],
  ['openai-chat', 'provider-openai'],
  ['openai-responses', 'provider-openai'],
  ['gemini', 'provider-gemini'],
];

const want = (name: string) => !only || only.includes(name);
const fmt = (x: number, d = 2) => x.toFixed(d);
let failed = false;

async function main() {
  if (want('stream')) {
    const server = await startBenchServer();
    try {
      console.log(`\nStream pipeline (provider plugin -> kernel hooks -> SQLite history) vs the raw SDK, CPU ms (median of LIVEAGENT_BENCH_REPEATS, default 5)`);
      console.log('format             deltas   raw ms  pipeline ms  ratio  us/delta');
      for (const [format, folder] of formats) {
        if (!fs.existsSync(new URL(`../plugins/${folder}/index.js`, import.meta.url))) {
          console.log(`${format.padEnd(18)} (plugin ${folder} not built; skipped)`);
          continue;
        }
        const rows = [];
        for (const n of [small, N]) {
          await server.setN(n);
          const r = await benchStreamPipeline(format, n, server.url);
          rows.push(r);
          console.log(`${format.padEnd(18)} ${String(n).padStart(6)} ${fmt(r.rawMs, 0).padStart(8)} ${fmt(r.pipelineMs, 0).padStart(12)} ${fmt(r.ratio).padStart(6)} ${fmt(r.perDeltaUs).padStart(9)}`);
        }
        const [a, b] = rows;
        // Our per-delta growth beyond the SDK's own: an SDK whose cost per delta grows with the
        // stream (Gemini's does, ~1.3x from 5k to 50k) is the floor, not ours to fix.
        const rawGrowth = (b!.rawMs / N) / (a!.rawMs / small);
        const growth = b!.perDeltaUs / a!.perDeltaUs / Math.max(1, rawGrowth);
        const ok = b!.ratio <= 1.5 && growth <= 1.2;
        if (!ok) failed = true;
        console.log(`${format.padEnd(18)} CPU ratio at ${N}: ${fmt(b!.ratio)} (target <= 1.5); per-delta cost ${N} vs ${small}, beyond the raw SDK's own growth (${fmt(rawGrowth)}x): ${fmt(growth)}x (target <= 1.2) ${ok ? 'OK' : 'OVER TARGET'}`);
      }
    } finally {
      server.close();
    }
  }
  if (want('toolloop')) {
    const server = await startBenchServer();
    try {
      const { benchToolLoop } = await import('./tool-loop.js');
      const r = await benchToolLoop(server);
      const cpuOk = r.ratio <= 1.3;
      const heapOk = r.retainedPerRoundBytes <= 1024;
      if (!cpuOk || !heapOk) failed = true;
      console.log(`\nTool loop: ${r.rounds} rounds of a no-op tool (provider-anthropic + kernel + SQLite history) vs a raw SDK loop, CPU`);
      console.log(`  runtime ${fmt(r.pipelineMs, 0)} ms vs raw ${fmt(r.rawMs, 0)} ms (medians): ratio ${fmt(r.ratio)} (median of paired runs; target <= 1.3) ${cpuOk ? 'OK' : 'OVER TARGET'}`);
      console.log(`  the same loop without the history plugin (nothing stored): ratio ${fmt(r.noHistoryRatio)} (for reference: the rest is the per-round commit)`);
      console.log(`  retained heap after the loop, over the raw loop's: ${fmt(r.retainedPerRoundBytes / 1024)} KB per round (target <= 1 KB) ${heapOk ? 'OK' : 'OVER TARGET'}`);
    } finally {
      server.close();
    }
  }
  if (want('coldstart')) {
    const { benchColdStart } = await import('./cold-start.js');
    const r = await benchColdStart();
    const ok = r.ratio <= 1.25;
    if (!ok) failed = true;
    console.log(`\nCold start to the first request: liveagent chat --mode text ${fmt(r.cliMs, 0)} ms vs a script importing only the SDK ${fmt(r.rawMs, 0)} ms: ratio ${fmt(r.ratio)} (target <= 1.25) ${ok ? 'OK' : 'OVER TARGET'}`);
  }
  if (want('startup')) {
    const s = benchStartup();
    console.log(`\nStart-up (median of 7 fresh processes): node -e 0 ${fmt(s.bareNodeMs, 0)} ms; kernel + builtins total ${fmt(s.totalMs, 0)} ms`);
    console.log(`  imports ${fmt(s.importMs, 1)} ms, boot after imports ${fmt(s.bootMs, 1)} ms (target <= 50 ms) ${s.bootMs <= 50 ? 'OK' : 'OVER TARGET'}`);
    if (s.bootMs > 50) failed = true;
  }
  if (want('gateway')) {
    const { benchGatewayFanout } = await import('./gateway-fanout.js');
    const r = await benchGatewayFanout({ log: () => {} });
    const ok = r.ratio <= 1.3;
    if (!ok) failed = true;
    console.log(`\nGateway fan-out: ${r.events} events of ${r.eventBytes} B to ${r.clients} clients, server CPU`);
    console.log(`  gateway ${fmt(r.gatewayCpuMs, 0)} ms vs raw ws loop (serialize once, send to each) ${fmt(r.rawCpuMs, 0)} ms: ratio ${fmt(r.ratio)} (target <= 1.3) ${ok ? 'OK' : 'OVER TARGET'}`);
    console.log(`  stalled client: held at most ${fmt(r.stalledMaxHeldBytes / 1048576)} MiB, dropped: ${r.stalledDropped}; the raw loop had ${fmt(r.rawStalledBufferedBytes / 1048576)} MiB buffered for it`);
  }
  if (want('conversations')) {
    const { benchConversationsHeap } = await import('./conversations-heap.js');
    const r = await benchConversationsHeap();
    const openOk = r.openPerConversationBytes <= 16 * 1024;
    const goneOk = Math.abs(r.forgottenPerConversationBytes) <= 1024;
    if (!openOk || !goneOk) failed = true;
    console.log(`\nHeap per conversation, ${r.count} opened (one run each) then forgotten, against the baseline before them`);
    console.log(`  open and idle: ${fmt(r.openPerConversationBytes / 1024)} KB each (target <= 16 KB) ${openOk ? 'OK' : 'OVER TARGET'}`);
    console.log(`  after forgetting them: ${fmt(r.forgottenPerConversationBytes / 1024)} KB each (target within +-1 KB) ${goneOk ? 'OK' : 'OVER TARGET'}`);
  }
  if (want('gateway-stream')) {
    const server = await startBenchServer();
    try {
      await server.setN(N);
      const { benchGatewayStream } = await import('./stream-pipeline.js');
      const r = await benchGatewayStream('anthropic', N, server.url);
      console.log(`\nStream CPU with the gateway plugin loaded (anthropic, ${N} deltas, SQLite history), vs raw SDK iteration ${fmt(r.rawMs, 0)} ms (median of LIVEAGENT_BENCH_REPEATS)`);
      console.log(`  without the gateway plugin: ${fmt(r.baseMs, 0)} ms, ratio ${fmt(r.baseMs / r.rawMs)} (for reference)`);
      for (const [label, ms] of [['0 clients', r.noClientMs], ['1 client ', r.oneClientMs]] as const) {
        const ratio = ms / r.rawMs;
        const ok = ratio <= 1.3;
        if (!ok) failed = true;
        console.log(`  gateway, ${label}: ${fmt(ms, 0)} ms, ratio ${fmt(ratio)} (target <= 1.3) ${ok ? 'OK' : 'OVER TARGET'}`);
      }
    } finally {
      server.close();
    }
  }
  if (want('history')) {
    const { benchHistoryPages } = await import('./history-pages.js');
    const r = await benchHistoryPages();
    const pageOk = r.pageRatio <= 1.5;
    const fullOk = r.fullRatio <= 1.5;
    if (!pageOk || !fullOk) failed = true;
    console.log(`\nHistory reads of a ${r.messages}-message conversation through the history service vs a prepared SELECT + JSON.parse of the same rows (medians)`);
    console.log(`  newest 100: ${fmt(r.pageMs, 2)} ms vs ${fmt(r.pageFloor, 2)} ms: ratio ${fmt(r.pageRatio)} (target <= 1.5) ${pageOk ? 'OK' : 'OVER TARGET'}`);
    console.log(`  all ${r.messages}: ${fmt(r.fullMs, 1)} ms vs ${fmt(r.fullFloor, 1)} ms: ratio ${fmt(r.fullRatio)} (target <= 1.5) ${fullOk ? 'OK' : 'OVER TARGET'}`);
    console.log(`  turn start's load: ${fmt(r.heldMs, 2)} ms with the window the session holds (the store finds it unchanged) vs ${fmt(r.reloadMs, 1)} ms reading it again (for reference)`);
  }
  if (want('compaction')) {
    const { benchCompactionDecision } = await import('./compaction-decision.js');
    const r = await benchCompactionDecision();
    const ok = r.anchoredMs <= 1;
    if (!ok) failed = true;
    console.log(`\nCompaction decision per turn at ${r.messages} messages (median), against one history load of them (${fmt(r.loadMs, 1)} ms)`);
    console.log(`  anchored on the last usage: ${fmt(r.anchoredMs, 3)} ms = ${fmt(r.anchoredMs / r.loadMs, 4)}x a load (target <= 1 ms) ${ok ? 'OK' : 'OVER TARGET'}`);
    console.log(`  right after a checkpoint (every message estimated, cached): ${fmt(r.unanchoredMs, 3)} ms = ${fmt(r.unanchoredMs / r.loadMs, 3)}x a load`);
  }
  if (failed) console.log('\nSome measurements are over target (see above).');
}

await main();
