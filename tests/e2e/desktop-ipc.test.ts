/**
 * The desktop app end to end, without Electron: the main-process logic (hosts/desktop) runs in
 * this Node process against the fake modules; the renderer is the real WebUI build in Chromium
 * with the preload's bridge emulated: `connect` makes a browser MessageChannel, hands one end to
 * the page as the preload does, and pipes the other over a WebSocket shim to the fake main-side
 * port that the gateway serves as an in-process client. So the page runs the IPC transport
 * (webui/src/transport/ipc-transport.ts) against the same gateway code path as in the app. A turn
 * streams, tools run, an AskUserQuestion is answered in the desktop window, Settings turns the
 * desktop's gateway on, and a browser on that gateway answers another one.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import type { Settings } from '../../plugin-api.js';
import { COMMAND_CHANNEL, CONNECT_CHANNEL, PORT_CHANNEL } from '../../hosts/desktop/contract.js';
import { startDesktop, type Desktop } from '../../hosts/desktop/main-process.js';
import { serveStatic } from '../../hosts/server/static-files.js';
import type { AskUserQuestionService } from '../../plugins/tool-ask-user-question/service.js';
import { startMockAnthropic, type MockAnthropicServer } from '../fixtures/mock-anthropic.js';
import { createFakeElectron, type FakeHarness, type FakePort } from '../helpers/fake-electron.js';
import { conversationItem, currentConversationId, lastReply, makePng, newChat, openApp, send, waitConnected, waitIdle } from './helpers/app.js';
import { hasChromium, launchBrowser, newContext, screenshot, tmpFile, trackErrors } from './helpers/browser.js';
import { TEST_API_KEY, TEST_RUNTIME } from './helpers/e2e-server.js';
import { createModel } from './helpers/mock-model.js';
import { ensureWebuiBuilt } from './helpers/webui-build.js';

const WEBUI = path.resolve('webui/dist');

/**
 * The WebSocket standing in for the port carries JSON; an upload chunk's (or a preview's)
 * ArrayBuffer goes as `{ __b64 }`. The page has its own copy inside emulatePreload.
 */
function encodeNode(v: unknown): unknown {
  if (v instanceof ArrayBuffer) return { __b64: Buffer.from(v).toString('base64') };
  if (ArrayBuffer.isView(v)) return { __b64: Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64') };
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, encodeNode(x)]));
  return v;
}
function decodeNode(v: unknown): unknown {
  if (v && typeof v === 'object') {
    if (typeof (v as { __b64?: unknown }).__b64 === 'string') {
      const b = Buffer.from((v as { __b64: string }).__b64, 'base64');
      return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength);
    }
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, decodeNode(x)]));
  }
  return v;
}

/** The preload, emulated in the page: the same `window.liveagent.desktop` shape, frozen like contextBridge's copy. */
function emulatePreload(): void {
  const w = window as unknown as { __desktopInvoke(channel: string, arg?: unknown): Promise<unknown>; __desktopCommand?: (c: string) => void };
  const encode = (v: unknown): unknown => {
    if (v instanceof ArrayBuffer) {
      const u = new Uint8Array(v);
      let bin = '';
      for (let i = 0; i < u.length; i += 0x8000) bin += String.fromCharCode(...u.subarray(i, i + 0x8000));
      return { __b64: btoa(bin) };
    }
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, encode(x)]));
    return v;
  };
  const decode = (v: unknown): unknown => {
    if (v && typeof v === 'object') {
      const b64 = (v as { __b64?: unknown }).__b64;
      if (typeof b64 === 'string') return Uint8Array.from(atob(b64), (c) => c.charCodeAt(0)).buffer;
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, decode(x)]));
    }
    return v;
  };
  const commandFns = new Set<(c: string) => void>();
  // The test forwards main's COMMAND_CHANNEL sends here (what ipcRenderer.on does in the app).
  w.__desktopCommand = (c: string) => commandFns.forEach((fn) => fn(c));
  const desktop = {
    version: 1,
    platform: 'test',
    connect(nonce: string) {
      const ws = new WebSocket(`ws://${location.host}/__port?nonce=${encodeURIComponent(nonce)}`);
      const ch = new MessageChannel();
      ws.onopen = () => window.postMessage({ type: 'liveagent:port', nonce }, '*', [ch.port2]);
      ws.onmessage = (e) => {
        const env = JSON.parse(e.data as string) as { s?: string; o?: unknown };
        ch.port1.postMessage(env.s !== undefined ? env.s : decode(env.o));
      };
      ch.port1.onmessage = (e) => ws.send(JSON.stringify(typeof e.data === 'string' ? { s: e.data } : { o: encode(e.data) }));
    },
    gatewayInfo: () => w.__desktopInvoke('liveagent:gateway-info'),
    setGateway: (patch: unknown) => w.__desktopInvoke('liveagent:gateway-set', patch),
    onCommand: (fn: (c: string) => void) => {
      commandFns.add(fn);
      return () => void commandFns.delete(fn);
    },
  };
  Object.defineProperty(window, 'liveagent', { value: Object.freeze({ desktop: Object.freeze(desktop) }), writable: false });
}

describe.skipIf(!hasChromium)('desktop app: the WebUI over the IPC transport (e2e)', () => {
  let home: string;
  let mock: MockAnthropicServer;
  let fake: FakeHarness;
  let desktop: Desktop;
  let shim: http.Server;
  let shimUrl: string;
  let browser: Browser;
  let contexts: BrowserContext[] = [];
  let app: Page;
  let errors: string[];

  beforeAll(async () => {
    await ensureWebuiBuilt();
    home = fs.mkdtempSync(path.join(os.tmpdir(), 'h16-e2e-'));
    const workdir = path.join(home, 'work');
    fs.mkdirSync(workdir);
    fs.mkdirSync(path.join(home, 'gates'));
    const model = createModel({ workdir, gatesDir: path.join(home, 'gates') });
    mock = await startMockAnthropic({ script: model.script });
    const settings: Settings = { runtime: TEST_RUNTIME, providers: { claude_code: { apiKey: TEST_API_KEY, baseUrl: mock.url } }, defaultProvider: 'claude_code' };
    // The desktop's gateway, when Settings turns it on, listens on loopback on a free port.
    fs.writeFileSync(path.join(home, 'desktop.json'), JSON.stringify({ gateway: { enabled: false, host: '127.0.0.1', port: 0 } }));
    fake = createFakeElectron();
    desktop = (await startDesktop({ electron: fake.electron, home, settings, thirdParty: false, webuiDir: WEBUI, log: () => undefined }))!;
    const win = fake.windows[0]!;

    // Stands in for the window: serves the same build and carries the port over a WebSocket.
    shim = http.createServer((req, res) => void serveStatic(req, res, WEBUI));
    const wss = new WebSocketServer({ server: shim, path: '/__port' });
    wss.on('connection', (ws, req) => {
      const nonce = new URL(req.url ?? '/', 'http://x').searchParams.get('nonce') ?? '';
      const onPort = (channel: string, args: unknown[], ports: FakePort[]) => {
        if (channel !== PORT_CHANNEL || args[0] !== nonce) return;
        win.webContents.off('to-renderer', onPort);
        const port = ports[0]!;
        port.on('message', (ev: { data: unknown }) => ws.send(JSON.stringify(typeof ev.data === 'string' ? { s: ev.data } : { o: encodeNode(ev.data) })));
        port.on('close', () => ws.close());
        ws.on('message', (d) => {
          const env = JSON.parse(String(d)) as { s?: string; o?: unknown };
          if (!port.closed) port.postMessage(env.s !== undefined ? env.s : decodeNode(env.o));
        });
        ws.on('close', () => port.close());
        port.start();
      };
      win.webContents.on('to-renderer', onPort);
      // What the preload's ipcRenderer.send does in the app.
      fake.ipcMain.emit(CONNECT_CHANNEL, { sender: win.webContents }, nonce);
    });
    await new Promise<void>((r) => shim.listen(0, '127.0.0.1', () => r()));
    shimUrl = `http://127.0.0.1:${(shim.address() as AddressInfo).port}/`;

    browser = await launchBrowser();
    const ctx = await newContext(browser);
    contexts.push(ctx);
    await ctx.exposeBinding('__desktopInvoke', (_src, channel: string, arg: unknown) => fake.ipcMain.invoke(channel, win.webContents, arg));
    await ctx.addInitScript(emulatePreload);
    app = await ctx.newPage();
    errors = trackErrors(app);
    // Menu, tray and notification commands: what main sends the window reaches the page's bridge.
    win.webContents.on('to-renderer', (channel: string, args: unknown[]) => {
      if (channel === COMMAND_CHANNEL) void app.evaluate((c) => (window as unknown as { __desktopCommand(c: string): void }).__desktopCommand(c), args[0] as string).catch(() => undefined);
    });
    await openApp(app, shimUrl);
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    if (desktop) {
      fake.app.quit();
      await desktop.stopped;
    }
    await new Promise<void>((r) => (shim ? shim.close(() => r()) : r()));
    await mock?.close();
    if (home) fs.rmSync(home, { recursive: true, force: true });
  });

  const service = () => desktop.kernel.services.get<AskUserQuestionService>('askUserQuestion')!;
  const card = (p: Page): Locator => lastReply(p).getByTestId('ask-user-question-card');
  const option = (c: Locator, q: string, label: string) => c.locator(`[data-testid="ask-option"][data-question-id="${q}"][data-label="${label}"]`);

  async function answer(c: Locator): Promise<void> {
    await option(c, 'q1', 'PostgreSQL').click();
    await option(c, 'q2', 'No').waitFor({ state: 'visible' });
    await option(c, 'q2', 'No').click();
    await c.getByTestId('ask-submit').click();
  }

  it('runs on the IPC transport, not a WebSocket to a gateway', async () => {
    const sockets = await app.evaluate(() => (window as unknown as { __sockets: WebSocket[] }).__sockets.map((s) => new URL(s.url).pathname));
    // The only sockets are the shim's stand-ins for the port.
    expect(sockets.length).toBeGreaterThan(0);
    expect(sockets.every((p) => p === '/__port')).toBe(true);
  });

  it('streams a reply and runs tools through the desktop', async () => {
    await newChat(app);
    await send(app, '/slow 30 15');
    // The reply grows while it streams (deltas arrive over the port, not as one message).
    await expect.poll(async () => ((await lastReply(app).textContent()) ?? '').trim().split(/\s+/).length, { timeout: 10_000 }).toBeGreaterThan(3);
    await waitIdle(app);
    expect(((await lastReply(app).textContent()) ?? '').split(/\s+/).filter(Boolean).length).toBeGreaterThanOrEqual(30);

    await newChat(app);
    await send(app, '/tools');
    await lastReply(app).getByText('All done: two echoes, one failure, one file written.').waitFor();
    await waitIdle(app);
    expect(await app.getByTestId('tool-call').count()).toBeGreaterThanOrEqual(3);
  });

  it('answers an AskUserQuestion in the desktop window', async () => {
    await newChat(app);
    await send(app, '/ask');
    await card(app).waitFor();
    const conversationId = await currentConversationId(app);
    expect(service().pending(conversationId)).toHaveLength(1);
    await answer(card(app));
    await expect.poll(() => card(app).getAttribute('data-state')).toBe('answered');
    await lastReply(app).getByText('Noted.').waitFor();
    expect(service().pending(conversationId)).toHaveLength(0);
  });

  it("turns the desktop's gateway on in Settings; a browser there sees the conversations live and answers a question", async () => {
    await app.getByTestId('open-settings').click();
    await app.getByTestId('desktop-gateway-toggle').check();
    const url = (await app.getByTestId('desktop-gateway-url').textContent())!.trim();
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/#token=[A-Za-z0-9_-]+$/);
    await app.getByTestId('desktop-gateway-qr').waitFor();
    await app.getByTestId('desktop-gateway-qr').scrollIntoViewIfNeeded();
    await screenshot(app, 'desktop-gateway-settings');
    await app.getByTestId('settings-close').click();

    const ctx = await newContext(browser);
    contexts.push(ctx);
    const remote = await ctx.newPage();
    const remoteErrors = trackErrors(remote);
    await openApp(remote, url);
    // A wrong token gets nothing (the server host's checks).
    const refused = await fetch(`${new URL(url).origin}/api/uploads?name=x`, { method: 'POST', body: 'x', headers: { Authorization: 'Bearer nope' } });
    expect(refused.status).toBe(401);

    // The desktop asks; the remote browser sees the new conversation appear and answers it.
    await newChat(app);
    await send(app, '/ask');
    await card(app).waitFor();
    const conversationId = await currentConversationId(app);
    await conversationItem(remote, conversationId).waitFor();
    await conversationItem(remote, conversationId).getByTestId('conversation-title').click();
    await card(remote).waitFor();
    expect(await card(remote).getAttribute('data-state')).toBe('open');
    await answer(card(remote));
    // Both windows show the one pending entry settled.
    await expect.poll(() => card(remote).getAttribute('data-state')).toBe('answered');
    await expect.poll(() => card(app).getAttribute('data-state')).toBe('answered');
    await lastReply(app).getByText('Noted.').waitFor();
    expect(service().pending(conversationId)).toHaveLength(0);
    await waitConnected(app);
    expect(remoteErrors).toEqual([]);
    expect(errors).toEqual([]);
  });
  it('attaches an image and a text file in the desktop window: they go over the port, the model gets both, previews come back over it', async () => {
    await newChat(app, 'tools');
    const png = makePng(40, 30, [200, 30, 30]);
    await app.getByTestId('file-input').setInputFiles([tmpFile(home, 'red.png', png), tmpFile(home, 'notes.txt', 'some desktop notes\n')]);
    await expect.poll(() => app.locator('[data-testid="attachment"][data-status="done"]').count(), { timeout: 10_000 }).toBe(2);
    await send(app, 'what did I attach');
    await lastReply(app).getByText('Echo: what did I attach [images: 1] [files: notes.txt]').waitFor();
    await waitIdle(app);
    // Staged in the desktop's uploads folder, byte for byte, by the same store as POST /api/uploads.
    const dirs = fs.readdirSync(path.join(home, 'uploads')).filter((n) => /^\d+$/.test(n));
    const stored = dirs.flatMap((d) => fs.readdirSync(path.join(home, 'uploads', d)).filter((f) => !f.startsWith('.')).map((f) => path.join(home, 'uploads', d, f)));
    expect(stored.map((f) => path.basename(f)).sort()).toEqual(['notes.txt', 'red.png']);
    expect(fs.readFileSync(stored.find((f) => f.endsWith('red.png'))!).equals(png)).toBe(true);
    // After a reload nothing is cached: the sent message's thumbnail is fetched over the port.
    const conversationId = await currentConversationId(app);
    await app.reload();
    await waitConnected(app);
    await conversationItem(app, conversationId).getByTestId('conversation-title').click();
    await app.waitForFunction(() => (document.querySelector('[data-testid="message-attachments"] img') as HTMLImageElement | null)?.naturalWidth === 40, undefined, { timeout: 10_000 });
  });

  it('menu and notification commands act on the app (new chat, Settings, open a conversation)', async () => {
    const conversationId = await currentConversationId(app);
    const item = (label: string) => (fake.menus.at(-1)!.template[0] as { submenu: Array<{ label?: string; click?: () => void }> }).submenu.find((i) => i.label === label)!;
    item('Settings').click!();
    await app.getByTestId('settings-page').waitFor();
    item('New chat').click!();
    await app.getByTestId('welcome').waitFor();
    expect(await app.getByTestId('settings-page').count()).toBe(0);
    // A notification's click names its conversation: the window opens it.
    fake.windows[0]!.webContents.send(COMMAND_CHANNEL, `open:${conversationId}`);
    await expect.poll(() => currentConversationId(app)).toBe(conversationId);
    await app.locator('[data-testid="message-attachments"]').waitFor();
    expect(errors).toEqual([]);
  });
});
