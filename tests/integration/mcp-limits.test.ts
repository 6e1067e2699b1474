/**
 * What one MCP tool result may carry, against a real stdio MCP server (tests/fixtures/mcp/
 * big-output-server.mjs) inside a kernel: text is capped head + tail with a marker, an oversized
 * image becomes a text note, oversized structured content leaves `details`, and a reply over the
 * SDK's stdio read buffer is reported as what it is (not as a crash) before the server restarts.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import type { LifecycleEvent, Plugin, ToolResultBlock } from '../../plugin-api.js';
import { createKernel, type Kernel } from '../../core/kernel.js';
import mcpPlugin from '../../plugins/mcp/index.js';
import type { McpServerInfo, McpService } from '../../plugins/mcp/service.js';
import { fakeProvider, type FakeStep } from '../helpers/fake-provider.js';

const BIG = fileURLToPath(new URL('../fixtures/mcp/big-output-server.mjs', import.meta.url));
const FAST = { restartBaseDelayMs: 50, restartMaxDelayMs: 200, maxRestarts: 3, connectTimeoutMs: 15_000, callTimeoutMs: 15_000, shutdownGraceMs: 300 };

const kernels: Kernel[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const k of kernels.splice(0)) await k.shutdown();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

type Log = Array<{ level: string; message: string }>;

async function boot(steps: FakeStep[], mcp: Record<string, unknown> = {}) {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'la-mcp-limits-'));
  dirs.push(home);
  const provider = fakeProvider(steps);
  const fake: Plugin = { name: 'test-fake', apply: (ctx) => void ctx.registerProvider(provider) };
  const log: Log = [];
  const kernel = await createKernel({
    home,
    plugins: [mcpPlugin, fake],
    settings: { mcpServers: { big: { command: process.execPath, args: [BIG] } }, mcp: { ...FAST, ...mcp } },
    thirdParty: false,
    logSink: (level, source, message) => void (source === 'mcp' && log.push({ level, message })),
  });
  kernels.push(kernel);
  const service = kernel.services.get<McpService>('mcp')!;
  await until(service, (s) => s[0]?.state === 'connected', 'the server to connect');
  return { kernel, provider, service, log };
}

function until(service: McpService, predicate: (servers: McpServerInfo[]) => boolean, what: string, ms = 15_000): Promise<void> {
  return new Promise((resolve, reject) => {
    if (predicate(service.servers())) return resolve();
    const timer = setTimeout(() => (sub.dispose(), reject(new Error(`timed out waiting for ${what}: ${JSON.stringify(service.servers())}`))), ms);
    const sub = service.onChange((servers) => {
      if (!predicate(servers)) return;
      clearTimeout(timer);
      sub.dispose();
      resolve();
    });
  });
}

/** Run one call of `tool`; the tool result as the kernel stored it and as the next request carried it. */
async function callOnce(kernel: Kernel, provider: ReturnType<typeof fakeProvider>, from: number) {
  const handle = kernel.runtime.startRun({ input: [{ type: 'text', text: 'go' }], mode: 'tools', provider: 'fake' });
  const events: LifecycleEvent[] = [];
  for await (const e of handle.events) events.push(e);
  const result = await handle.result;
  const end = events.find((e): e is Extract<LifecycleEvent, { type: 'tool_execution_end' }> => e.type === 'tool_execution_end')!;
  const next = provider.requests[from + 1]!;
  const sent = next.messages.at(-1)!.content.find((b): b is ToolResultBlock => b.type === 'tool_result')!;
  return { result, block: end.result, sent };
}

const call = (name: string, input: Record<string, unknown>): FakeStep => ({ toolCalls: [{ id: 't1', name: `mcp__big__${name}`, input }] });
const textOf = (b: ToolResultBlock) => b.content.map((c) => (c.type === 'text' ? c.text : `<${c.type}>`)).join('');

describe('MCP result limits', () => {
  it('an 8 MB text result is cut to mcp.maxResultBytes (default 100 KB): head, tail and a marker saying how much was left out', async () => {
    const { kernel, provider } = await boot([call('emit_text', { bytes: 8_000_000 }), { text: 'done' }]);
    const { result, block, sent } = await callOnce(kernel, provider, 0);
    expect(result.status).toBe('completed');
    const text = textOf(sent);
    expect(Buffer.byteLength(text)).toBeLessThan(101_000);
    expect(text.startsWith('[block 0]HEAD>')).toBe(true);
    expect(text.endsWith('<TAIL')).toBe(true);
    expect(text).toContain(`[... ${8_000_009 - 100_000} bytes of MCP output omitted (over mcp.maxResultBytes) ...]`);
    // The stored result (what the gateway sends and history keeps) is the same capped one.
    expect(textOf(block)).toBe(text);
    expect(block.details).toMatchObject({ mcp: { server: 'big', tool: 'emit_text' }, truncated: { omittedBytes: 8_000_009 - 100_000 } });
  });

  it('the cap spans text blocks: the first and last keep their ends, blocks in the middle go, one marker', async () => {
    const { kernel, provider } = await boot([call('emit_text', { bytes: 3000, blocks: 5 }), { text: 'done' }], { maxResultBytes: 4096 });
    const { sent } = await callOnce(kernel, provider, 0);
    const texts = sent.content.map((c) => (c.type === 'text' ? c.text : ''));
    expect(texts[0]!.startsWith('[block 0]HEAD>')).toBe(true);
    expect(texts.at(-1)!.endsWith('<TAIL')).toBe(true);
    expect(texts.join('').match(/bytes of MCP output omitted/g)).toHaveLength(1);
    expect(Buffer.byteLength(texts.join(''))).toBeLessThan(4096 + 200);
  });

  it('a result under the limits passes unchanged', async () => {
    const { kernel, provider } = await boot([call('emit_text', { bytes: 2000 }), { text: 'done' }], { maxResultBytes: 4096 });
    const { block } = await callOnce(kernel, provider, 0);
    expect(textOf(block)).toBe(`[block 0]HEAD>${'.'.repeat(1990)}<TAIL`);
    expect(block.details?.truncated).toBeUndefined();
  });

  it('an image over mcp.maxImageBytes is replaced by a text note; one under it stays an image', async () => {
    const { kernel, provider } = await boot([call('emit_image', { bytes: 300_000 }), { text: 'done' }, call('emit_image', { bytes: 1000 }), { text: 'done' }], { maxImageBytes: 100_000 });
    const big = await callOnce(kernel, provider, 0);
    expect(big.sent.content).toEqual([
      { type: 'text', text: 'an image follows' },
      { type: 'text', text: '[image/png image of 293 KB left out: larger than the 98 KB mcp.maxImageBytes allows]' },
    ]);
    expect(big.block.details).toMatchObject({ truncated: { droppedImages: 1 } });
    const small = await callOnce(kernel, provider, 2);
    expect(small.sent.content[1]).toMatchObject({ type: 'image', mimeType: 'image/png' });
  });

  it('structured content over the limit leaves details; its text mirror is capped like any text', async () => {
    const { kernel, provider } = await boot([call('emit_structured', { bytes: 50_000 }), { text: 'done' }], { maxResultBytes: 4096 });
    const { block } = await callOnce(kernel, provider, 0);
    expect(block.details?.structuredContent).toBeUndefined();
    expect(block.details).toMatchObject({ truncated: { structuredContentBytes: 50_011 } });
    expect(Buffer.byteLength(textOf(block))).toBeLessThan(4096 + 200);
  });
});

describe('a reply over the stdio read buffer', () => {
  it('over the SDK default (10 MiB): a tool error and a log line that say so, then the server restarts and works', async () => {
    const { kernel, provider, service, log } = await boot([call('emit_text', { bytes: 11 * 1024 * 1024 }), { text: 'done' }, call('emit_text', { bytes: 100 }), { text: 'done' }]);
    const { result, block } = await callOnce(kernel, provider, 0);
    expect(result.status).toBe('completed');
    expect(block.isError).toBe(true);
    expect(textOf(block)).toContain('MCP server "big" sent a reply larger than 10.0 MB (mcp.maxReplyBytes) and the connection was reset');
    const line = log.find((l) => l.message.includes('sent a reply larger than'));
    expect(line?.message).toMatch(/^MCP server "big": sent a reply larger than 10\.0 MB \(mcp\.maxReplyBytes\) and the connection was reset; restarting in \d+ ms/);
    expect(log.some((l) => l.message.includes('exited'))).toBe(false);
    await until(service, (s) => s[0]?.state === 'connected' && s[0].restarts === 1, 'the server to come back');
    const again = await callOnce(kernel, provider, 2);
    expect(again.block.isError).toBe(false);
  });

  it('mcp.maxReplyBytes sets the buffer: a smaller limit resets on a smaller reply', async () => {
    const { kernel, provider, service } = await boot([call('emit_text', { bytes: 200_000 }), { text: 'done' }], { maxReplyBytes: 65_536 });
    const { block } = await callOnce(kernel, provider, 0);
    expect(block.isError).toBe(true);
    expect(textOf(block)).toContain('sent a reply larger than 64 KB (mcp.maxReplyBytes) and the connection was reset');
    await until(service, (s) => s[0]?.state === 'connected' && s[0].restarts === 1, 'the server to come back');
  });
});
