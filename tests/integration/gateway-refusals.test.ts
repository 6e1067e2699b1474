/**
 * Refused gateway connections are logged rate-limited: a real gateway (the plugin in a kernel,
 * attached to a real HTTP server) and real `ws` clients with a wrong token or a foreign Origin,
 * counting the log lines. The first refusal is logged in full, the rest are summarized at most
 * once per interval with counts by kind, and a quiet interval ends the burst.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { refusedStatus } from './gateway-harness.js';
import { createKernel, type Kernel } from '../../core/kernel.js';
import gatewayPlugin, { GATEWAY_SERVICE, type GatewayHostService as GatewayService } from '../../plugins/gateway/index.js';

const TOKEN = 'refusal-test-token-0123456789abcdefghijklmnop';
const running: Array<{ kernel: Kernel; server: http.Server; home: string }> = [];

afterEach(async () => {
  for (const r of running.splice(0)) {
    await r.kernel.shutdown();
    r.server.closeAllConnections();
    await new Promise((resolve) => r.server.close(resolve));
    fs.rmSync(r.home, { recursive: true, force: true });
  }
});

async function start(refusalLogIntervalMs?: number) {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'la-refusals-'));
  const lines: string[] = [];
  const kernel = await createKernel({
    home,
    plugins: [gatewayPlugin],
    settings: {},
    thirdParty: false,
    logSink: (level, source, message) => void (source === 'gateway' && level === 'warn' && lines.push(message)),
  });
  const server = http.createServer((_req, res) => res.end());
  running.push({ kernel, server, home });
  const gateway = kernel.services.get<GatewayService>(GATEWAY_SERVICE)!;
  await gateway.attach(server, { token: TOKEN, path: '/ws', bindHost: '127.0.0.1', ...(refusalLogIntervalMs !== undefined ? { refusalLogIntervalMs } : {}) });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}/ws`;
  const refusals = () => lines.filter((l) => l.startsWith('refused '));
  return { kernel, url, lines, refusals };
}


const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function eventually(check: () => boolean, what: string, ms = 5000): Promise<void> {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await wait(10);
  }
}

const SUMMARY = /^refused (\d+) more gateway connections? in the last [\d.]+ s \((.*); from (\d+\+?) address(?:es)?\)$/;

/** Refusals counted by the summary lines, by kind label. */
function summarized(lines: string[]): { total: number; kinds: Record<string, number> } {
  const kinds: Record<string, number> = {};
  let total = 0;
  for (const l of lines) {
    const m = SUMMARY.exec(l);
    if (!m) continue;
    total += Number(m[1]);
    for (const part of m[2]!.split(', ')) {
      const [k, n] = part.split(': ');
      kinds[k!] = (kinds[k!] ?? 0) + Number(n);
    }
  }
  return { total, kinds };
}

describe('refused gateway connections are logged rate-limited', () => {
  it('57 refusals: the first in full, then summaries with counts by kind, far fewer lines than refusals', async () => {
    const interval = 1000;
    const g = await start(interval);
    const began = Date.now();
    const statuses = await Promise.all([
      ...Array.from({ length: 50 }, (_, i) => refusedStatus(i % 2 ? `${g.url}?token=wrong-${i}` : g.url)),
      ...Array.from({ length: 7 }, () => refusedStatus(`${g.url}?token=${TOKEN}`, { headers: { Origin: 'https://evil.example' } })),
    ]);
    expect(statuses.filter((s) => s === 401)).toHaveLength(50);
    expect(statuses.filter((s) => s === 403)).toHaveLength(7);
    await eventually(() => 1 + summarized(g.refusals()).total === 57, 'the summary of all 57 refusals');
    const elapsed = Date.now() - began;
    const lines = g.refusals();
    expect(lines[0]).toMatch(/^refused a gateway connection from 127\.0\.0\.1: (missing or wrong token|Origin not allowed)$/);
    const summaries = lines.slice(1);
    expect(summaries.every((l) => SUMMARY.test(l))).toBe(true);
    // At most one summary per interval (plus the one that closes the last interval).
    expect(summaries.length).toBeLessThanOrEqual(Math.floor(elapsed / interval) + 1);
    const first = lines[0]!.endsWith('token') ? 'bad token' : 'origin';
    const { kinds } = summarized(summaries);
    expect(kinds).toEqual(first === 'bad token' ? { 'bad token': 49, origin: 7 } : { 'bad token': 50, origin: 6 });
    expect(summaries[0]).toMatch(/; from 1 address\)$/);
  });

  it('a quiet interval ends the burst: the next refusal is logged in full again', async () => {
    const g = await start(150);
    await refusedStatus(g.url);
    await refusedStatus(g.url);
    await eventually(() => g.refusals().length === 2, 'the summary');
    expect(g.refusals()[1]).toMatch(/^refused 1 more gateway connection in the last [\d.]+ s \(bad token: 1; from 1 address\)$/);
    // One interval with nothing to report closes the burst.
    await wait(400);
    await refusedStatus(`${g.url}?token=${TOKEN}`, { headers: { Host: 'evil.example' } });
    await eventually(() => g.refusals().length === 3, 'the next full line');
    expect(g.refusals()[2]).toBe('refused a gateway connection from 127.0.0.1: Host not allowed');
  });

  it('the default interval is a minute; shutting down writes the pending summary', async () => {
    const g = await start();
    for (let i = 0; i < 5; i++) await refusedStatus(g.url);
    await wait(100);
    expect(g.refusals()).toEqual(['refused a gateway connection from 127.0.0.1: missing or wrong token']);
    await running[0]!.kernel.shutdown();
    expect(g.refusals()).toHaveLength(2);
    expect(g.refusals()[1]).toMatch(/^refused 4 more gateway connections in the last [\d.]+ s \(bad token: 4; from 1 address\)$/);
  });

  it('the token never reaches the log, even a wrong one', async () => {
    const g = await start(100);
    await refusedStatus(`${g.url}?token=secret-wrong-token-value`);
    await refusedStatus(`${g.url}?token=secret-wrong-token-value`);
    await eventually(() => g.refusals().length === 2, 'the summary');
    expect(g.lines.join('\n')).not.toContain('secret-wrong-token-value');
  });
});
