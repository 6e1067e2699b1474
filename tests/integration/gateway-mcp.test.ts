/**
 * MCP server state reaches clients: `mcp.status` lists each server with its state and tools,
 * and a crash and restart are broadcast as `mcp` messages.
 */
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import mcpPlugin from '../../plugins/mcp/index.js';
import type { McpService } from '../../plugins/mcp/service.js';
import type { McpServerSummary, ServerMessage } from '../../lib/gateway-protocol/protocol.js';
import { TestClient, boot, cleanup } from './gateway-harness.js';

afterEach(cleanup);

const server = path.resolve(import.meta.dirname, '../fixtures/mcp/dynamic-server.mjs');
type McpMsg = Extract<ServerMessage, { type: 'mcp' }>;

describe('gateway: MCP server state', () => {
  it('lists servers with their state, and broadcasts a crash and the recovery', async () => {
    const b = await boot({
      extra: [mcpPlugin],
      settings: { mcpServers: { dyn: { command: process.execPath, args: [server] } }, mcp: { restartBaseDelayMs: 50, restartMaxDelayMs: 200 } } as never,
    });
    const c = await TestClient.connect(b);
    const mcp = b.server.kernel.services.get<McpService>('mcp')!;
    const connected = (servers: McpServerSummary[]) => servers.find((s) => s.name === 'dyn')?.state === 'connected';
    let status = await c.ok<{ servers: McpServerSummary[] }>({ type: 'mcp.status' });
    if (!connected(status.servers)) {
      await c.waitFor((m) => m.type === 'mcp' && connected((m as McpMsg).servers), 10_000);
      status = await c.ok<{ servers: McpServerSummary[] }>({ type: 'mcp.status' });
    }
    const dyn = status.servers.find((s) => s.name === 'dyn')!;
    expect(dyn).toMatchObject({ state: 'connected', transport: 'stdio' });
    expect(dyn.tools).toContain('mcp__dyn__add-tool');

    const pid = mcp.servers().find((s) => s.name === 'dyn')!.pid!;
    const before = c.messages.length;
    process.kill(pid, 'SIGKILL');
    await c.waitFor((m) => c.messages.indexOf(m) >= before && m.type === 'mcp' && (m as McpMsg).servers[0]?.state === 'restarting', 10_000);
    await c.waitFor((m) => c.messages.indexOf(m) >= before && m.type === 'mcp' && connected((m as McpMsg).servers), 10_000);
  });

  it('refuses a bad mcpServers entry before saving, naming the server and field, and restarts a server on request', async () => {
    const b = await boot({
      extra: [mcpPlugin],
      settings: { mcpServers: { dyn: { command: process.execPath, args: [server] } } } as never,
    });
    const c = await TestClient.connect(b);
    const bad = await c.request({ type: 'settings.set', settings: { mcpServers: { dyn: { command: process.execPath, args: [server] }, oops: { command: 'x', args: 'not-a-list' } } } });
    expect(bad.ok).toBe(false);
    expect(!bad.ok && bad.error.message).toMatch(/mcpServers\.oops\.args/);
    const mcp = b.server.kernel.services.get<McpService>('mcp')!;
    expect(Object.keys((b.server.kernel.settings.get() as { mcpServers: object }).mcpServers)).toEqual(['dyn']);
    await expect.poll(() => mcp.servers()[0]!.state, { timeout: 10_000 }).toBe('connected');
    const pidBefore = mcp.servers()[0]!.pid;
    const restarted = await c.ok<{ servers: McpServerSummary[] }>({ type: 'mcp.restart', name: 'dyn' });
    expect(restarted.servers.find((s) => s.name === 'dyn')?.state).toBe('connected');
    // A new process: the restart really reconnected.
    expect(mcp.servers()[0]!.pid).not.toBe(pidBefore);
    const unknown = await c.request({ type: 'mcp.restart', name: 'nope' });
    expect(!unknown.ok && unknown.error.code).toBe('not_found');
  });
});

