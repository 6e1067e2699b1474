/**
 * The desktop's main process under Node against the fake Electron modules: start (kernel first,
 * a hardened window, the menu), the renderer's gateway connection over a port, a clean quit
 * (runs stopped, database closed), the single-instance lock, the remembered window, and
 * notifications while the window is hidden.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Plugin, ProviderRequest, Settings } from '../../plugin-api.js';
import { createKernel } from '../../core/kernel.js';
import { startDesktop, type Desktop } from '../../hosts/desktop/main-process.js';
import { installBridge } from '../../hosts/desktop/preload-bridge.js';
import { PORT_MESSAGE_TYPE } from '../../hosts/desktop/contract.js';
import historySqlite from '../../plugins/history-sqlite/index.js';
import { createFakeElectron, type FakeHarness, type FakePort } from '../helpers/fake-electron.js';
import { fakeProvider, type FakeStep } from '../helpers/fake-provider.js';

const homes: string[] = [];
const running: Array<{ fake: FakeHarness; desktop: Desktop }> = [];

afterEach(async () => {
  for (const r of running.splice(0)) {
    r.fake.app.quit();
    await r.desktop.stopped;
  }
  for (const h of homes.splice(0)) fs.rmSync(h, { recursive: true, force: true });
});

function tmpHome(): string {
  const h = fs.mkdtempSync(path.join(os.tmpdir(), 'h16-desktop-'));
  homes.push(h);
  return h;
}

const SETTINGS: Settings = { runtime: { retryMaxAttempts: 1, retryBaseDelayMs: 10, persistIntervalMs: 20 }, defaultProvider: 'fake' };

/** Answer by the last user message's text (side requests such as titles get a plain reply). */
function byText(map: Record<string, FakeStep>) {
  return (req: ProviderRequest): FakeStep => {
    const last = req.messages.at(-1);
    const text = last?.role === 'user' ? last.content.map((b) => (b.type === 'text' ? b.text : '')).join('') : '';
    if (req.lean) return { text: 'A title' };
    return map[text] ?? { text: 'done' };
  };
}

async function boot(home: string, map: Record<string, FakeStep> = {}) {
  const fake = createFakeElectron();
  const provider = fakeProvider(byText(map));
  const plugin: Plugin = { name: 'test-fake', apply: (ctx) => void ctx.registerProvider(provider) };
  const logs: string[] = [];
  const desktop = await startDesktop({ electron: fake.electron, home, settings: SETTINGS, extraPlugins: [plugin], thirdParty: false, webuiDir: home, preload: '/app/preload.cjs', saveBoundsDelayMs: 5, log: (l) => logs.push(l) });
  if (desktop) running.push({ fake, desktop });
  return { fake, desktop, provider, logs };
}

/** The preload against the fake, and a page-side view of the port it hands over. */
async function connect(fake: FakeHarness) {
  const posted: Array<{ message: unknown; ports: FakePort[] }> = [];
  const bridge = installBridge(fake.preload, { postMessage: (message, _o, transfer) => void posted.push({ message, ports: (transfer ?? []) as unknown as FakePort[] }) }, 'linux');
  bridge.connect('n1');
  await until(() => posted.length === 1);
  expect(posted[0]!.message).toEqual({ type: PORT_MESSAGE_TYPE, nonce: 'n1' });
  const port = posted[0]!.ports[0]!;
  const messages: Array<Record<string, any>> = [];
  port.on('message', (ev: { data: unknown }) => {
    if (typeof ev.data === 'string') messages.push(...(JSON.parse(ev.data) as Array<Record<string, any>>));
    else messages.push({ control: ev.data });
  });
  port.start();
  const send = (m: unknown) => port.postMessage(JSON.stringify(m));
  return { port, messages, send };
}

async function until(fn: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!fn()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('desktop main process (fake Electron)', () => {
  it('starts the kernel and a hardened window, streams a turn over the port, and quits cleanly', async () => {
    const home = tmpHome();
    const { fake, desktop } = await boot(home, { hi: { text: ['Hel', 'lo'] }, again: { hang: true } });
    expect(desktop).not.toBeNull();
    expect(fake.windows).toHaveLength(1);
    const win = fake.windows[0]!;
    expect(win.options.webPreferences).toMatchObject({ preload: '/app/preload.cjs', contextIsolation: true, sandbox: true, nodeIntegration: false });
    expect(win.loaded).toBe(path.join(home, 'index.html'));
    await until(() => win.visible);
    const labels = (fake.menus[0]!.template[0] as { submenu: Array<{ label?: string }> }).submenu.map((i) => i.label).filter(Boolean);
    expect(labels).toEqual(['New chat', 'Settings', 'Quit']);
    // The network gateway is off by default.
    expect(desktop!.gatewayInfo()).toMatchObject({ enabled: false, running: false });

    const { messages, send } = await connect(fake);
    await until(() => messages.some((m) => m.type === 'hello'));
    send({ type: 'chat_queue', id: 'r1', item: { action: 'send', clientRequestId: 'c1', text: 'hi', mode: 'text' } });
    await until(() => messages.some((m) => m.type === 'reply' && m.id === 'r1'));
    const reply = messages.find((m) => m.type === 'reply' && m.id === 'r1')!;
    expect(reply.ok).toBe(true);
    await until(() => messages.some((m) => m.event?.type === 'agent_end'));
    const deltas = messages.filter((m) => m.event?.type === 'message_update').map((m) => m.event.delta.text).filter(Boolean);
    expect(deltas.join('')).toBe('Hello');
    const conversationId = messages.find((m) => m.event?.type === 'agent_end')!.event.conversationId as string;

    // A second run hangs; quitting stops it, then closes the database, then lets the app quit.
    send({ type: 'chat_queue', id: 'r2', item: { action: 'send', conversationId, clientRequestId: 'c2', text: 'again', mode: 'text' } });
    await until(() => !!desktop!.kernel.runtime.activeRun(conversationId));
    fake.app.quit();
    expect(fake.app.quitted).toBe(false); // held until the shutdown is done
    await desktop!.stopped;
    running.splice(0);
    expect(fake.app.quitted).toBe(true);
    expect(desktop!.kernel.runtime.activeRun(conversationId)).toBeUndefined();
    await until(() => messages.some((m) => m.event?.type === 'agent_end' && m.event.status === 'aborted'));
    // The database was closed cleanly (SQLite removes its WAL on the last close) and reopens with both turns.
    expect(fs.readdirSync(home).filter((f) => f.endsWith('-wal'))).toEqual([]);
    const again = await createKernel({ home, builtins: [historySqlite], plugins: [], settings: SETTINGS, thirdParty: false });
    try {
      const history = again.services.get<{ getConversation(id: string): Promise<{ messages: unknown[] } | undefined> }>('history')!;
      const conv = await history.getConversation(conversationId);
      expect(conv?.messages.length).toBeGreaterThanOrEqual(3);
    } finally {
      await again.shutdown();
    }
  });

  it('holds a single-instance lock: a second instance quits, the first shows its window', async () => {
    const home = tmpHome();
    const fake = createFakeElectron();
    fake.app.lock = false;
    const second = await startDesktop({ electron: fake.electron, home, settings: SETTINGS, builtins: [], thirdParty: false, webuiDir: home });
    expect(second).toBeNull();
    expect(fake.app.quitCalls).toBe(1);
    expect(fake.windows).toHaveLength(0);

    const { fake: first } = await boot(home);
    const win = first.windows[0]!;
    await until(() => win.visible);
    win.minimize();
    win.hide();
    first.app.emit('second-instance');
    expect(win.isVisible() && !win.isMinimized() && win.isFocused()).toBe(true);
  });

  it('remembers the window bounds in $LIVEAGENT_HOME/desktop.json', async () => {
    const home = tmpHome();
    const { fake } = await boot(home);
    fake.windows[0]!.setBounds({ x: 42, y: 24, width: 1000, height: 700 });
    await until(() => fs.existsSync(path.join(home, 'desktop.json')));
    fake.app.quit();
    await running.splice(0)[0]!.desktop.stopped;
    const saved = JSON.parse(fs.readFileSync(path.join(home, 'desktop.json'), 'utf8'));
    expect(saved.window).toMatchObject({ x: 42, y: 24, width: 1000, height: 700, maximized: false });
    expect(saved.gateway.enabled).toBe(false);

    const { fake: next } = await boot(home);
    expect(next.windows[0]!.options).toMatchObject({ x: 42, y: 24, width: 1000, height: 700 });
  });

  it('notifies when a run ends or a question waits while the window is hidden, not while it is in front', async () => {
    const home = tmpHome();
    const ask = { id: 'ask1', name: 'AskUserQuestion', input: { questions: [{ prompt: 'Which one?', options: [{ label: 'A' }, { label: 'B' }] }] } };
    const { fake, desktop } = await boot(home, { one: { text: 'visible' }, two: { text: 'hidden' }, three: { toolCalls: [ask] } });
    const win = fake.windows[0]!;
    await until(() => win.visible);
    const kernel = desktop!.kernel;
    const run = async (text: string, mode: 'text' | 'tools' = 'text') => kernel.runtime.startRun({ input: [{ type: 'text', text }], mode });
    await (await run('one')).result;
    expect(fake.notifications).toHaveLength(0);

    win.hide();
    const second = await run('two');
    await second.result;
    expect(fake.notifications.map((n) => n.options.body)).toEqual(['The reply is ready.']);

    const third = await run('three', 'tools');
    const svc = () => kernel.services.get<{ pending(): Array<{ toolCallId: string; conversationId: string }> }>('askUserQuestion')!;
    await until(() => svc().pending().length === 1);
    await until(() => fake.notifications.length === 2);
    expect(fake.notifications[1]!.options.title).toBe('LiveAgent has a question');
    // Clicking it brings the window back on that conversation.
    fake.notifications[1]!.emit('click');
    expect(win.isVisible()).toBe(true);
    expect(fake.toRenderer.at(-1)).toMatchObject({ channel: 'liveagent:command', args: [`open:${third.conversationId}`] });
    const p = svc().pending()[0]!;
    kernel.services.get<{ answer(r: unknown): unknown }>('askUserQuestion')!.answer({ toolCallId: p.toolCallId, conversationId: p.conversationId, requestJson: JSON.stringify([{ questionId: 'q1', selectedLabel: 'A' }]) });
    await third.result;
  });

  it('turns the network gateway on and off from the bridge, with the same token checks', async () => {
    const home = tmpHome();
    const { fake, desktop } = await boot(home);
    const bridge = installBridge(fake.preload, { postMessage: () => undefined }, 'linux');
    await expect(bridge.setGateway({ enabled: 'yes' } as never)).rejects.toThrow(/enabled must be true or false/);
    const on = await bridge.setGateway({ enabled: true, host: '127.0.0.1', port: 0 });
    expect(on).toMatchObject({ enabled: true, running: true, host: '127.0.0.1' });
    expect(on.url).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:${on.port}/#token=${on.token}$`));
    const base = on.url!.replace(/\/#.*/, '');
    expect((await fetch(`${base}/api/health`)).status).toBe(200);
    // Uploads are behind the token, as on the server host.
    expect((await fetch(`${base}/api/uploads?name=a.txt`, { method: 'POST', body: 'x' })).status).toBe(401);
    const ok = await fetch(`${base}/api/uploads?name=a.txt`, { method: 'POST', body: 'x', headers: { Authorization: `Bearer ${on.token}` } });
    expect(ok.status).toBe(200);
    expect(JSON.parse(fs.readFileSync(path.join(home, 'desktop.json'), 'utf8')).gateway).toMatchObject({ enabled: true, port: 0 });
    const off = await bridge.setGateway({ enabled: false });
    expect(off).toMatchObject({ enabled: false, running: false });
    await expect(fetch(`${base}/api/health`)).rejects.toThrow();
    expect(desktop!.gatewayInfo().running).toBe(false);
  });

});
