import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import type { LifecycleEvent, Plugin, ToolResultBlock } from '../../plugin-api.js';
import { createKernel, type Kernel } from '../../core/kernel.js';
import mcpPlugin from '../../plugins/mcp/index.js';
import { mapCallResult } from '../../plugins/mcp/content.js';
import { parseServerEntry } from '../../plugins/mcp/config.js';
import { serverSegments, toolNames } from '../../plugins/mcp/names.js';
import type { McpServerInfo, McpService } from '../../plugins/mcp/service.js';
import { fakeProvider, type FakeStep } from '../helpers/fake-provider.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const EVERYTHING = path.join(root, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
const FILESYSTEM = path.join(root, 'node_modules/@modelcontextprotocol/server-filesystem/dist/index.js');
const DYNAMIC = path.join(root, 'tests/fixtures/mcp/dynamic-server.mjs');
const FAST = { restartBaseDelayMs: 50, restartMaxDelayMs: 200, maxRestarts: 3, connectTimeoutMs: 15_000, callTimeoutMs: 15_000, shutdownGraceMs: 300 };

const everything = { command: process.execPath, args: [EVERYTHING, 'stdio'] };

const kernels: Kernel[] = [];
const children: ChildProcess[] = [];
const dirs: string[] = [];

afterEach(async () => {
  for (const k of kernels.splice(0)) await k.shutdown();
  for (const c of children.splice(0)) {
    if (c.exitCode === null && c.signalCode === null) {
      const exited = new Promise((r) => c.once('exit', r));
      c.kill('SIGKILL');
      await exited;
    }
  }
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function tmpDir(prefix: string): string {
  const d = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), prefix)));
  dirs.push(d);
  return d;
}

async function boot(mcpServers: Record<string, unknown>, steps: FakeStep[] = [], mcp: Record<string, unknown> = FAST) {
  const provider = fakeProvider(steps);
  const fake: Plugin = { name: 'test-fake', apply: (ctx) => void ctx.registerProvider(provider) };
  const kernel = await createKernel({ home: tmpDir('la-mcp-'), plugins: [mcpPlugin, fake], settings: { mcpServers, mcp }, thirdParty: false });
  kernels.push(kernel);
  const service = kernel.services.get<McpService>('mcp')!;
  return { kernel, provider, service };
}

/** Resolve once `predicate` holds for the service's servers (checked now and on every change). */
function waitFor(service: McpService, predicate: (servers: McpServerInfo[]) => boolean, what: string, ms = 15_000): Promise<McpServerInfo[]> {
  return new Promise((resolve, reject) => {
    if (predicate(service.servers())) return resolve(service.servers());
    const timer = setTimeout(() => {
      sub.dispose();
      reject(new Error(`timed out waiting for ${what}: ${JSON.stringify(service.servers())}`));
    }, ms);
    const sub = service.onChange((servers) => {
      if (!predicate(servers)) return;
      clearTimeout(timer);
      sub.dispose();
      resolve(servers);
    });
  });
}

const server = (servers: McpServerInfo[], name: string) => servers.find((s) => s.name === name)!;
const connected = (name: string, tool?: string) => (servers: McpServerInfo[]) =>
  server(servers, name)?.state === 'connected' && (!tool || server(servers, name).tools.includes(tool));

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function runTools(kernel: Kernel, mode: 'tools' | 'text' = 'tools') {
  const run = kernel.runtime.startRun({ input: [{ type: 'text', text: 'go' }], mode });
  const events: LifecycleEvent[] = [];
  for await (const e of run.events) events.push(e);
  return { result: await run.result, events };
}

function toolResults(events: LifecycleEvent[]): ToolResultBlock[] {
  return events.flatMap((e) => (e.type === 'tool_execution_end' ? [e.result] : []));
}

async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as net.AddressInfo).port;
  await new Promise((r) => srv.close(r));
  return port;
}

/** server-everything in Streamable HTTP mode (it reads its port from PORT), ready to accept. */
async function startHttpEverything(port: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, [EVERYTHING, 'streamableHttp'], { env: { ...process.env, PORT: String(port) }, stdio: ['ignore', 'ignore', 'pipe'] });
  children.push(child);
  await new Promise<void>((resolve, reject) => {
    let err = '';
    child.stderr!.on('data', (d: Buffer) => {
      err += d.toString();
      if (err.includes('listening on port')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`server-everything (HTTP) exited (${code}): ${err}`)));
  });
  return child;
}

describe('mcp plugin: server-everything over stdio', () => {
  it('registers its tools as mcp__everything__*, and a tools-mode run calling echo gets the text back', async () => {
    const { kernel, provider, service } = await boot({ everything }, [
      { toolCalls: [{ id: 't1', name: 'mcp__everything__echo', input: { message: 'hello mcp' } }] },
      { text: 'done' },
    ]);
    const servers = await waitFor(service, connected('everything', 'mcp__everything__echo'), 'everything to connect');
    const info = server(servers, 'everything');
    expect(info.transport).toBe('stdio');
    expect(info.pid).toBeGreaterThan(0);
    expect(info.tools).toEqual(expect.arrayContaining(['mcp__everything__echo', 'mcp__everything__get-tiny-image']));
    const echo = kernel.runtime.tools().find((t) => t.name === 'mcp__everything__echo')!;
    expect(echo.concurrency).toBe('parallel');
    expect(echo.modes).toEqual(['tools', 'agent-dev']);

    const { result } = await runTools(kernel);
    expect(result.status).toBe('completed');
    const spec = provider.requests[0]!.tools.find((t) => t.name === 'mcp__everything__echo')!;
    expect(spec.inputSchema).toMatchObject({ type: 'object', properties: { message: { type: 'string' } }, required: ['message'] });
    const toolMsg = provider.requests[1]!.messages.at(-1)!;
    const block = toolMsg.content[0] as ToolResultBlock;
    expect(block.type).toBe('tool_result');
    expect(block.isError).toBe(false);
    expect(block.content).toEqual([{ type: 'text', text: 'Echo: hello mcp' }]);
  });

  it('maps an image result to an image block', async () => {
    const { kernel, provider, service } = await boot({ everything }, [
      { toolCalls: [{ id: 't1', name: 'mcp__everything__get-tiny-image', input: {} }] },
      { text: 'done' },
    ]);
    await waitFor(service, connected('everything', 'mcp__everything__get-tiny-image'), 'everything to connect');
    await runTools(kernel);
    const block = provider.requests[1]!.messages.at(-1)!.content[0] as ToolResultBlock;
    const image = block.content.find((c) => c.type === 'image');
    expect(image).toMatchObject({ type: 'image', mimeType: 'image/png' });
    expect(image?.type === 'image' && Buffer.from(image.data!, 'base64').subarray(1, 4).toString()).toBe('PNG');
    expect(block.content[0]).toEqual({ type: 'text', text: "Here's the image you requested:" });
  });

  it('text mode sends no MCP tools', async () => {
    const { kernel, provider, service } = await boot({ everything }, [{ text: 'plain answer' }]);
    await waitFor(service, connected('everything', 'mcp__everything__echo'), 'everything to connect');
    const { result } = await runTools(kernel, 'text');
    expect(result.status).toBe('completed');
    expect(provider.requests[0]!.tools).toEqual([]);
  });

  it('enforces the call timeout, and a stopped run cancels the call without dropping the server', async () => {
    const longCall = { toolCalls: [{ id: 't1', name: 'mcp__everything__trigger-long-running-operation', input: { duration: 5, steps: 5 } }] };
    const { kernel, provider, service } = await boot({ everything }, [longCall, { text: 'done' }, longCall], { ...FAST, callTimeoutMs: 300 });
    await waitFor(service, connected('everything', 'mcp__everything__trigger-long-running-operation'), 'everything to connect');
    const { events } = await runTools(kernel);
    const timedOut = toolResults(events)[0]!;
    expect(timedOut.isError).toBe(true);
    expect((timedOut.content[0] as { text: string }).text).toContain('timed out after 300 ms');
    expect(provider.requests).toHaveLength(2);

    // Third scripted step: the same slow call (5 s), stopped from outside while it runs.
    const run = kernel.runtime.startRun({ input: [{ type: 'text', text: 'again' }], mode: 'tools' });
    const abortWhenRunning = kernel.runtime.onEvent((e) => e.type === 'tool_execution_start' && e.runId === run.runId && setTimeout(() => run.abort('test'), 50));
    const stopped: LifecycleEvent[] = [];
    for await (const e of run.events) stopped.push(e);
    abortWhenRunning.dispose();
    expect((await run.result).status).toBe('aborted');
    // Had the signal not reached callTool, the call would have finished normally, not cancelled.
    const cancelled = toolResults(stopped)[0]!;
    expect(cancelled).toMatchObject({ isError: true, details: { cancelled: true } });
    expect(server(service.servers(), 'everything').state).toBe('connected');
  });

  it('withdraws the tools of a killed server, restarts it with backoff and restores them', async () => {
    const { kernel, service } = await boot({ everything });
    const before = server(await waitFor(service, connected('everything', 'mcp__everything__echo'), 'everything to connect'), 'everything');
    const seen: Array<{ state: string; mcpTools: number }> = [];
    service.onChange((servers) => {
      seen.push({ state: server(servers, 'everything').state, mcpTools: kernel.runtime.tools().filter((t) => t.name.startsWith('mcp__everything__')).length });
    });
    process.kill(before.pid!, 'SIGKILL');
    const restarting = server(await waitFor(service, (s) => server(s, 'everything').state === 'restarting', 'restarting'), 'everything');
    expect(restarting.tools).toEqual([]);
    expect(restarting.error).toContain('exited');
    expect(kernel.runtime.tools().some((t) => t.name.startsWith('mcp__everything__'))).toBe(false);

    const after = server(await waitFor(service, connected('everything', 'mcp__everything__echo'), 'everything to come back'), 'everything');
    expect(after.pid).not.toBe(before.pid);
    expect(after.restarts).toBe(1);
    expect(kernel.runtime.tools().some((t) => t.name === 'mcp__everything__echo')).toBe(true);
    const states = seen.map((s) => s.state);
    expect(states.indexOf('restarting')).toBeLessThan(states.lastIndexOf('connected'));
    expect(seen.filter((s) => s.state === 'restarting').every((s) => s.mcpTools === 0)).toBe(true);
    expect(isAlive(before.pid!)).toBe(false);
  });

  it('shutdown leaves no child process behind', async () => {
    const { kernel, service } = await boot({ a: everything, b: everything, fs: { command: process.execPath, args: [FILESYSTEM, tmpDir('la-mcp-fs-')] } });
    const servers = await waitFor(service, (s) => s.every((x) => x.state === 'connected'), 'all servers to connect');
    const pids = servers.map((s) => s.pid!);
    expect(pids.every((p) => p > 0 && isAlive(p))).toBe(true);
    await kernel.shutdown();
    expect(pids.filter(isAlive)).toEqual([]);
    expect(service.servers().map((s) => s.state)).toEqual(['stopped', 'stopped', 'stopped']);
    expect(kernel.runtime.tools().filter((t) => t.name.startsWith('mcp__'))).toEqual([]);
  });

  it('a bad entry fails only that server, with an error naming the server and field', async () => {
    const { service } = await boot({ broken: { command: 'x', args: 'not-an-array' }, nothing: {}, everything });
    const servers = await waitFor(service, connected('everything'), 'everything to connect');
    expect(server(servers, 'broken')).toMatchObject({ state: 'failed', tools: [] });
    expect(server(servers, 'broken').error).toMatch(/^mcpServers\.broken\.args: .*expected array/);
    expect(server(servers, 'nothing').error).toContain('mcpServers.nothing: needs "command"');
  });

  it('a command that cannot start ends failed with the reason after maxRestarts', async () => {
    const { service } = await boot({ missing: { command: path.join(os.tmpdir(), 'no-such-mcp-server-binary') } }, [], { ...FAST, maxRestarts: 1 });
    const servers = await waitFor(service, (s) => server(s, 'missing').state === 'failed', 'the server to fail');
    expect(server(servers, 'missing').error).toMatch(/ENOENT.*gave up after 1 restart/);
    expect(server(servers, 'missing').restarts).toBe(1);
  });
});

describe('mcp plugin: other servers and transports', () => {
  it('server-everything over Streamable HTTP: tools work', async () => {
    const port = await freePort();
    await startHttpEverything(port);
    const { kernel, provider, service } = await boot({ remote: { url: `http://127.0.0.1:${port}/mcp` } }, [
      { toolCalls: [{ id: 't1', name: 'mcp__remote__echo', input: { message: 'over http' } }] },
      { text: 'done' },
    ]);
    const servers = await waitFor(service, connected('remote', 'mcp__remote__echo'), 'remote to connect');
    expect(server(servers, 'remote')).toMatchObject({ transport: 'http' });
    expect(server(servers, 'remote').pid).toBeUndefined();
    await runTools(kernel);
    const block = provider.requests[1]!.messages.at(-1)!.content[0] as ToolResultBlock;
    expect(block.content).toEqual([{ type: 'text', text: 'Echo: over http' }]);
  });

  it('an HTTP server that goes away is noticed, its tools withdrawn, and they return when it is back', async () => {
    const port = await freePort();
    const first = await startHttpEverything(port);
    const { kernel, service } = await boot({ remote: { url: `http://127.0.0.1:${port}/mcp` } }, [], {
      ...FAST,
      restartBaseDelayMs: 100,
      restartMaxDelayMs: 500,
      maxRestarts: 30,
    });
    await waitFor(service, connected('remote', 'mcp__remote__echo'), 'remote to connect');
    first.kill('SIGKILL');
    await waitFor(service, (s) => server(s, 'remote').state === 'restarting', 'remote to be noticed gone');
    expect(kernel.runtime.tools().some((t) => t.name.startsWith('mcp__remote__'))).toBe(false);
    await startHttpEverything(port);
    await waitFor(service, connected('remote', 'mcp__remote__echo'), 'remote to come back');
    expect(kernel.runtime.tools().some((t) => t.name === 'mcp__remote__echo')).toBe(true);
  });

  it('server-filesystem reads a file in its allowed directory', async () => {
    const dir = tmpDir('la-mcp-fs-');
    const file = path.join(dir, 'hello.txt');
    fs.writeFileSync(file, 'hello from the filesystem\n');
    const { kernel, provider, service } = await boot({ fs: { command: process.execPath, args: [FILESYSTEM, dir] } }, [
      { toolCalls: [{ id: 't1', name: 'mcp__fs__read_text_file', input: { path: file } }] },
      { text: 'done' },
    ]);
    await waitFor(service, connected('fs', 'mcp__fs__read_text_file'), 'fs to connect');
    await runTools(kernel);
    const block = provider.requests[1]!.messages.at(-1)!.content[0] as ToolResultBlock;
    expect(block.isError).toBe(false);
    expect(JSON.stringify(block.content)).toContain('hello from the filesystem');
  });

  it('follows notifications/tools/list_changed, and names long or unclean tools deterministically', async () => {
    const { kernel, service } = await boot({ 'dyn.server': { command: process.execPath, args: [DYNAMIC] } }, [
      { toolCalls: [{ id: 't1', name: 'mcp__dyn_server__add-tool', input: { name: 'fresh' } }] },
      { text: 'added' },
      { toolCalls: [{ id: 't2', name: 'mcp__dyn_server__remove-tool', input: { name: 'fresh' } }] },
      { text: 'removed' },
    ]);
    const servers = await waitFor(service, connected('dyn.server', 'mcp__dyn_server__add-tool'), 'dyn to connect');
    const names = server(servers, 'dyn.server').tools;
    expect(names.every((n) => /^[A-Za-z0-9_-]{1,64}$/.test(n))).toBe(true);
    expect(names).toContain('mcp__dyn_server__dotted_name');
    expect(names.filter((n) => n.startsWith('mcp__dyn_server__dotted_name_'))).toHaveLength(1);
    const long = names.filter((n) => n.startsWith('mcp__dyn_server__very_long'));
    expect(long).toHaveLength(2);
    expect(new Set(long).size).toBe(2);
    expect(long.every((n) => n.length === 64)).toBe(true);

    await runTools(kernel);
    await waitFor(service, connected('dyn.server', 'mcp__dyn_server__fresh'), 'the added tool');
    expect(kernel.runtime.tools().some((t) => t.name === 'mcp__dyn_server__fresh')).toBe(true);
    await runTools(kernel);
    await waitFor(service, (s) => !server(s, 'dyn.server').tools.includes('mcp__dyn_server__fresh'), 'the removed tool');
    expect(kernel.runtime.tools().some((t) => t.name === 'mcp__dyn_server__fresh')).toBe(false);
  });

  it('restart(name) reconnects a server and rejects unknown names', async () => {
    const { service } = await boot({ dyn: { command: process.execPath, args: [DYNAMIC] } });
    const first = server(await waitFor(service, connected('dyn'), 'dyn to connect'), 'dyn');
    const again = await service.restart('dyn');
    expect(again).toMatchObject({ state: 'connected', restarts: 1 });
    expect(again.pid).not.toBe(first.pid);
    expect(isAlive(first.pid!)).toBe(false);
    await expect(service.restart('nope')).rejects.toThrow('no MCP server named "nope"');
  });
});

describe('mcp plugin: pure parts', () => {
  it('maps every MCP content kind', () => {
    const r = mapCallResult(
      {
        content: [
          { type: 'text', text: 'plain' },
          { type: 'image', mimeType: 'image/png', data: 'AAAA' },
          { type: 'audio', mimeType: 'audio/wav', data: 'UklGRg==' },
          { type: 'resource', resource: { uri: 'file:///notes.txt', mimeType: 'text/plain', text: 'note body' } },
          { type: 'resource_link', uri: 'file:///big.bin', name: 'big.bin' },
        ],
        structuredContent: { answer: 42 },
        isError: true,
      },
      'srv',
      'tool',
    );
    expect(r.isError).toBe(true);
    expect(r.content).toEqual([
      { type: 'text', text: 'plain' },
      { type: 'image', mimeType: 'image/png', data: 'AAAA' },
      { type: 'text', text: expect.stringMatching(/^\[audio: audio\/wav, 4 bytes/) },
      { type: 'text', text: '[resource: file:///notes.txt]\nnote body' },
      { type: 'text', text: '[resource link: big.bin <file:///big.bin>]' },
    ]);
    expect(r.details).toEqual({ mcp: { server: 'srv', tool: 'tool' }, structuredContent: { answer: 42 } });
    expect(mapCallResult({ content: [], structuredContent: { a: 1 } }, 's', 't').content).toEqual([{ type: 'text', text: '{"a":1}' }]);
  });

  it('names are cleaned, capped at 64 characters and disambiguated the same way every time', () => {
    const long = 'x'.repeat(80);
    const a = toolNames('srv', 'srv', [`${long}1`, `${long}2`, 'a.b', 'a_b', 'ok']);
    const b = toolNames('srv', 'srv', ['ok', 'a_b', 'a.b', `${long}2`, `${long}1`]);
    expect([...a.entries()].sort()).toEqual([...b.entries()].sort());
    expect(a.get('ok')).toBe('mcp__srv__ok');
    expect(a.get('a_b')).toBe('mcp__srv__a_b');
    expect(a.get('a.b')).toMatch(/^mcp__srv__a_b_[0-9a-f]{8}$/);
    expect(a.get(`${long}1`)).toHaveLength(64);
    expect(a.get(`${long}1`)).not.toBe(a.get(`${long}2`));
    expect(toolNames('srv', 'srv', ['ok'], new Set(['mcp__srv__ok'])).get('ok')).toMatch(/^mcp__srv__ok_[0-9a-f]{8}$/);
    const segs = serverSegments(['my server', 'my_server', 'fs']);
    expect(segs.get('my_server')).toBe('my_server');
    expect(segs.get('my server')).toMatch(/^my_server_[0-9a-f]{6}$/);
    expect(segs.get('fs')).toBe('fs');
  });

  it('parses both entry shapes and names bad fields', () => {
    expect(parseServerEntry('s', { command: 'node', args: ['x'], env: { A: '1' }, cwd: '/tmp' })).toEqual({
      ok: true,
      config: { kind: 'stdio', command: 'node', args: ['x'], env: { A: '1' }, cwd: '/tmp' },
    });
    expect(parseServerEntry('h', { type: 'sse', url: 'https://example.com/sse', headers: { Authorization: 'Bearer x' } })).toEqual({
      ok: true,
      config: { kind: 'http', url: 'https://example.com/sse', headers: { Authorization: 'Bearer x' }, sseOnly: true },
    });
    expect(parseServerEntry('h', { url: 'ftp://example.com' })).toEqual({ ok: false, error: 'mcpServers.h.url: must be an http(s) URL' });
    expect(parseServerEntry('my.server', { command: 'x', env: { A: 1 } })).toMatchObject({ ok: false, error: expect.stringContaining('mcpServers["my.server"].env.A:') });
  });
});
