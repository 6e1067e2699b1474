/**
 * Cold start to the first request: `liveagent chat --mode text hi` in a fresh process, timed
 * from spawn to the moment the loopback server receives the Messages API request, against a
 * script that imports only @anthropic-ai/sdk and sends the same request. Interleaved repeats;
 * medians of wall time (the figure a user waits for).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

const REPLY = [
  ['message_start', { type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', content: [], model: 'claude-sonnet-4-6', stop_reason: null, stop_sequence: null, usage: { input_tokens: 5, output_tokens: 1 } } }],
  ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }],
  ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'hi' } }],
  ['content_block_stop', { type: 'content_block_stop', index: 0 }],
  ['message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 1 } }],
  ['message_stop', { type: 'message_stop' }],
].map(([e, d]) => `event: ${e as string}\ndata: ${JSON.stringify(d)}\n\n`).join('');

export async function benchColdStart(repeats = 7) {
  let arrived: (() => void) | undefined;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      arrived?.();
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(REPLY);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'la-bench-cold-'));
  fs.writeFileSync(path.join(home, 'settings.json'), JSON.stringify({ providers: { claude_code: { apiKey: 'bench-key', baseUrl: url } } }));
  const raw = path.join(home, 'raw.mjs');
  const sdk = new URL(import.meta.resolve('@anthropic-ai/sdk')).href;
  fs.writeFileSync(
    raw,
    `const { default: Anthropic } = await import(${JSON.stringify(sdk)});
const client = new Anthropic({ apiKey: 'bench-key', baseURL: ${JSON.stringify(url)}, maxRetries: 0 });
const stream = await client.messages.create({ model: 'claude-sonnet-4-6', max_tokens: 1024, messages: [{ role: 'user', content: 'hi' }], stream: true });
for await (const _ of stream);\n`,
  );
  const env: NodeJS.ProcessEnv = { ...process.env, LIVEAGENT_HOME: home };
  for (const k of Object.keys(env)) if (/^(ANTHROPIC|OPENAI|GEMINI)_/.test(k)) delete env[k];
  const timeToRequest = async (args: string[]) => {
    const start = performance.now();
    const got = new Promise<number>((r) => (arrived = () => r(performance.now() - start)));
    const child = spawn(process.execPath, args, { env, cwd: home, stdio: 'ignore' });
    const ms = await got;
    await new Promise((r) => child.once('exit', r));
    return ms;
  };
  const cli = [process.env.LIVEAGENT_BENCH_CLI ?? path.join(root, 'bin/liveagent.js'), 'chat', '--mode', 'text', 'hi'];
  try {
    await timeToRequest(cli);
    await timeToRequest([raw]);
    const cliMs: number[] = [];
    const rawMs: number[] = [];
    for (let i = 0; i < repeats; i++) {
      cliMs.push(await timeToRequest(cli));
      rawMs.push(await timeToRequest([raw]));
    }
    return { cliMs: median(cliMs), rawMs: median(rawMs), ratio: median(cliMs) / median(rawMs) };
  } finally {
    server.close();
    fs.rmSync(home, { recursive: true, force: true });
  }
}
