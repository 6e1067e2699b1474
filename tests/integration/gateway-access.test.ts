import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import os from 'node:os';
import { startServer } from '../../hosts/server/start-server.js';
import { afterEach, describe, expect, it } from 'vitest';
import { TestClient, boot, cleanup, refusedStatus } from './gateway-harness.js';

afterEach(cleanup);

describe('gateway access (checked before the upgrade)', () => {
  it('refuses a socket without the token, or with a wrong one, with 401', async () => {
    const b = await boot();
    expect(await refusedStatus(b.wsUrl)).toBe(401);
    expect(await refusedStatus(`${b.wsUrl}?token=nope`)).toBe(401);
    expect(await refusedStatus(`${b.wsUrl}?token=${b.server.token}x`)).toBe(401);
    expect(b.gateway.stats().clients).toHaveLength(0);
  });

  it('refuses a foreign Origin and a foreign Host with 403, even with the right token', async () => {
    const b = await boot();
    const url = `${b.wsUrl}?token=${b.server.token}`;
    expect(await refusedStatus(url, { headers: { Origin: 'https://evil.example' } })).toBe(403);
    expect(await refusedStatus(url, { headers: { Origin: 'null' } })).toBe(403);
    // DNS rebinding: a foreign name that resolves to us.
    expect(await refusedStatus(url, { headers: { Host: `evil.example:${b.server.port}` } })).toBe(403);
    // The page's Origin matching a foreign Host does not help either.
    expect(await refusedStatus(url, { headers: { Host: 'evil.example', Origin: 'http://evil.example' } })).toBe(403);
    // Any other path is not the gateway.
    expect(await refusedStatus(`${b.server.url.replace('http', 'ws')}/other?token=${b.server.token}`)).toBe(404);
  });

  it('accepts the server’s own origin and localhost origins; configured origins and hosts pass too', async () => {
    const b = await boot({ settings: { gateway: { allowedOrigins: ['https://app.example'], allowedHosts: ['gw.example'] } } });
    for (const headers of <Array<Record<string, string>>>[
      { Origin: b.server.url },
      { Origin: 'http://localhost:5173' },
      { Origin: 'https://app.example' },
      { Host: `gw.example:${b.server.port}`, Origin: `http://gw.example:${b.server.port}` },
    ]) {
      const c = await TestClient.connect(b, { headers });
      await c.close();
    }
  });

  it('takes the token as a subprotocol and selects the app protocol, never echoing the token', async () => {
    const b = await boot();
    const c = await TestClient.connect(b, { protocols: ['liveagent.v1', `liveagent.token.${b.server.token}`] });
    expect(c.ws.protocol).toBe('liveagent.v1');
    expect(await refusedStatus(b.wsUrl, { protocols: ['liveagent.v1', 'liveagent.token.wrong'] })).toBe(401);
  });

  it('stores the token under the home with mode 0600, reuses it, and prints the URL with it in the hash', async () => {
    const b = await boot();
    const file = path.join(b.home, 'gateway-token');
    expect(fs.readFileSync(file, 'utf8').trim()).toBe(b.server.token);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(b.lines).toEqual([`LiveAgent is running at http://127.0.0.1:${b.server.port}/#token=${b.server.token}`]);
  });

  it('without any configured provider, the start says where to set one up', async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'la-gw-noprov-'));
    const lines: string[] = [];
    const server = await startServer({ port: 0, home, builtins: [], settings: {}, thirdParty: false, log: (l) => lines.push(l), webuiDir: path.join(home, 'no-webui') });
    try {
      expect(lines[0]).toMatch(/^LiveAgent is running at http:\/\/127\.0\.0\.1:\d+\/#token=/);
      expect(lines.slice(1)).toEqual([expect.stringMatching(/^No model provider is set up yet: open that address to connect one .*ANTHROPIC_API_KEY/)]);
    } finally {
      await server.close();
      fs.rmSync(home, { recursive: true, force: true });
    }
  });

  it('serves /api/health, the no-build page, and the built WebUI with content types and the SPA fallback', async () => {
    const b = await boot();
    const health = await fetch(`${b.server.url}/api/health`);
    expect(await health.json()).toEqual({ ok: true });
    const page = await fetch(`${b.server.url}/`);
    expect(page.headers.get('content-type')).toContain('text/html');
    expect(await page.text()).toContain('npm run build');

    const dist = path.join(b.home, 'dist');
    fs.mkdirSync(path.join(dist, 'assets'), { recursive: true });
    fs.writeFileSync(path.join(dist, 'index.html'), '<!doctype html><title>app</title>');
    fs.writeFileSync(path.join(dist, 'assets', 'app.js'), 'console.log(1)');
    fs.writeFileSync(path.join(dist, 'assets', 'app.css'), 'body{}');
    fs.writeFileSync(path.join(b.home, 'secret.txt'), 'secret');
    await b.server.close();
    const b2 = await boot({ webuiDir: dist });
    const js = await fetch(`${b2.server.url}/assets/app.js`);
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect((await fetch(`${b2.server.url}/assets/app.css`)).headers.get('content-type')).toBe('text/css; charset=utf-8');
    const spa = await fetch(`${b2.server.url}/conversations/abc`);
    expect(await spa.text()).toContain('<title>app</title>');
    expect((await fetch(`${b2.server.url}/assets/missing.js`)).status).toBe(404);
    expect(await (await fetch(`${b2.server.url}/..%2Fsecret.txt`)).text()).not.toContain('secret');
    // fetch cannot set Host; a raw request can.
    const status = await new Promise<number>((resolve, reject) => {
      http.get(`${b2.server.url}/api/health`, { headers: { Host: 'evil.example' } }, (res) => (res.resume(), resolve(res.statusCode ?? 0))).on('error', reject);
    });
    expect(status).toBe(403);
  });
});
