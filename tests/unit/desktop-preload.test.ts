/**
 * The preload against the fake Electron modules: it exposes exactly `window.liveagent.desktop`
 * with the bridge's members (no ipcRenderer, no Node), hands ports to the page's world only with
 * their nonce, and its shape matches the renderer's copy of the contract.
 */
import { describe, expect, expectTypeOf, it } from 'vitest';
import { COMMAND_CHANNEL, CONNECT_CHANNEL, PORT_CHANNEL, PORT_MESSAGE_TYPE, type DesktopBridge } from '../../hosts/desktop/contract.js';
import { installBridge } from '../../hosts/desktop/preload-bridge.js';
import type { DesktopBridge as RendererBridge } from '../../webui/src/transport/ipc-transport.js';
import { createFakeElectron, FakeMessageChannelMain } from '../helpers/fake-electron.js';

describe('desktop preload (fake Electron)', () => {
  it('exposes one small bridge and nothing else', () => {
    const fake = createFakeElectron();
    installBridge(fake.preload, { postMessage: () => undefined }, 'linux');
    expect([...fake.exposed.keys()]).toEqual(['liveagent']);
    const exposed = fake.exposed.get('liveagent') as { desktop: DesktopBridge };
    expect(Object.keys(exposed)).toEqual(['desktop']);
    expect(Object.keys(exposed.desktop).sort()).toEqual(['connect', 'gatewayInfo', 'onCommand', 'platform', 'setGateway', 'version']);
    expect(exposed.desktop.version).toBe(1);
    expect(exposed.desktop.platform).toBe('linux');
    // Every member is plain data or a function: nothing that hands out ipcRenderer or Node.
    for (const v of Object.values(exposed.desktop)) expect(['function', 'number', 'string']).toContain(typeof v);
    expectTypeOf<DesktopBridge>().toMatchTypeOf<RendererBridge>();
  });

  it('sends connect requests and forwards exactly one port with its nonce to the page', () => {
    const fake = createFakeElectron();
    const sent: unknown[][] = [];
    fake.ipcMain.on(CONNECT_CHANNEL, (_e, ...args) => sent.push(args));
    const posted: Array<{ message: unknown; origin: string; ports: unknown[] }> = [];
    const bridge = installBridge(fake.preload, { postMessage: (message, origin, ports) => void posted.push({ message, origin, ports: ports ?? [] }) }, 'darwin');
    bridge.connect('abc');
    expect(sent).toEqual([['abc']]);
    // A main-side window delivers the port the way main does (webContents.postMessage).
    const win = new (fake.electron.BrowserWindow as unknown as new (o: object) => { webContents: { postMessage(c: string, m: unknown, p?: unknown[]): void; send(c: string, ...a: unknown[]): void } })({});
    const { port2 } = new FakeMessageChannelMain();
    win.webContents.postMessage(PORT_CHANNEL, 'abc', [port2]);
    win.webContents.postMessage(PORT_CHANNEL, 42, [port2]); // not a nonce: ignored
    win.webContents.postMessage(PORT_CHANNEL, 'abc', []); // no port: ignored
    expect(posted).toEqual([{ message: { type: PORT_MESSAGE_TYPE, nonce: 'abc' }, origin: '*', ports: [port2] }]);

    const commands: string[] = [];
    const off = bridge.onCommand((c) => commands.push(c));
    win.webContents.send(COMMAND_CHANNEL, 'settings');
    win.webContents.send(COMMAND_CHANNEL, 7);
    off();
    win.webContents.send(COMMAND_CHANNEL, 'new-chat');
    expect(commands).toEqual(['settings']);
  });
});
