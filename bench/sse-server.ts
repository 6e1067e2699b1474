/**
 * A loopback server for benchmarks, run in its own process so that its CPU never counts
 * against the consumer being measured. It serves pre-encoded streams in every provider format,
 * with the number of deltas set by `POST /__config {"n": 50000}`.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { encodeSse, type SseEvent } from '../tests/fixtures/mock-http.js';
import { anthropicReply, anthropicTextStream } from '../tests/fixtures/mock-anthropic.js';
import { chatTextStream, responsesTextStream } from '../tests/fixtures/mock-openai.js';

type Format = 'anthropic' | 'openai-chat' | 'openai-responses' | 'gemini';

let n = 5000;
/** Tool-loop mode (`{"loop": R}`): Anthropic requests get a tool call until R results came back. */
let loop = 0;
const cache = new Map<string, Buffer>();

function toolLoopReply(requestBody: string): Buffer {
  const results = requestBody.split('"tool_result"').length - 1;
  const events = results < loop
    ? anthropicReply({ toolUses: [{ id: `toolu_${String(results).padStart(6, '0')}`, name: 'Noop', input: {} }], stopReason: 'tool_use' })
    : anthropicReply({ text: 'done' });
  return Buffer.from(encodeSse(events).join(''), 'utf8');
}

async function geminiStream(count: number): Promise<SseEvent[]> {
  const mod = (await import('../tests/fixtures/mock-gemini.js')) as { geminiTextStream(n: number): SseEvent[] };
  return mod.geminiTextStream(count);
}

async function body(format: Format): Promise<Buffer> {
  const key = `${format}:${n}`;
  let b = cache.get(key);
  if (!b) {
    const events =
      format === 'anthropic' ? anthropicTextStream(n) : format === 'openai-chat' ? chatTextStream(n, { includeUsage: true }) : format === 'openai-responses' ? responsesTextStream(n) : await geminiStream(n);
    b = Buffer.from(encodeSse(events).join(''), 'utf8');
    cache.set(key, b);
  }
  return b;
}

function formatOf(url: string): Format | undefined {
  if (url.startsWith('/v1/messages')) return 'anthropic';
  if (url.startsWith('/v1/chat/completions')) return 'openai-chat';
  if (url.startsWith('/v1/responses')) return 'openai-responses';
  if (url.includes(':streamGenerateContent')) return 'gemini';
  return undefined;
}

const server = http.createServer(async (req, res) => {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  if (req.url === '/__config') {
    const config = JSON.parse(Buffer.concat(chunks).toString()) as { n?: number; loop?: number };
    if (config.n !== undefined) n = config.n;
    loop = config.loop ?? 0;
    res.end('ok');
    return;
  }
  const format = formatOf(req.url ?? '');
  if (!format) {
    res.writeHead(404).end();
    return;
  }
  const data = loop && format === 'anthropic' ? toolLoopReply(Buffer.concat(chunks).toString()) : await body(format);
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  for (let i = 0; i < data.length; i += 65536) {
    if (!res.write(data.subarray(i, i + 65536))) await new Promise((r) => res.once('drain', r));
  }
  res.end();
});

server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${(server.address() as AddressInfo).port}\n`);
});
process.on('disconnect', () => process.exit(0));
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
