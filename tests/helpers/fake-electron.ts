/**
 * A small fake of the Electron modules the desktop uses (hosts/desktop/electron-api.ts), so the
 * main process and the preload run under Node. One fake "renderer" is wired to the main side:
 * `ipcRenderer.send/invoke` reach `ipcMain`'s listeners and handlers with the window's
 * webContents as sender, and `webContents.send/postMessage` reach `ipcRenderer`'s listeners.
 * Ports are in-memory pairs delivering on a microtask, like MessagePortMain.
 */
import { EventEmitter } from 'node:events';
import type { ElectronMain, ElectronPreload } from '../../hosts/desktop/electron-api.js';

export class FakePort extends EventEmitter {
  other: FakePort | undefined;
  started = false;
  closed = false;
  private queue: unknown[] = [];

  postMessage(data: unknown): void {
    if (this.closed) throw new Error('port closed');
    const to = this.other;
    if (!to || to.closed) return;
    queueMicrotask(() => to.receive(data));
  }

  private receive(data: unknown): void {
    if (this.closed) return;
    if (!this.started) return void this.queue.push(data);
    this.emit('message', { data, ports: [] });
  }

  start(): void {
    this.started = true;
    const q = this.queue;
    this.queue = [];
    for (const d of q) this.emit('message', { data: d, ports: [] });
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.emit('close');
    // Like a real port: what was posted before the close still arrives, then the peer closes.
    const other = this.other;
    if (other && !other.closed) queueMicrotask(() => other.close());
  }
}

export class FakeMessageChannelMain {
  readonly port1 = new FakePort();
  readonly port2 = new FakePort();
  constructor() {
    this.port1.other = this.port2;
    this.port2.other = this.port1;
  }
}

type Listener = (...args: any[]) => unknown;

export interface FakeHarness {
  electron: ElectronMain;
  preload: ElectronPreload;
  app: FakeApp;
  ipcMain: FakeIpcMain;
  windows: FakeBrowserWindow[];
  notifications: FakeNotification[];
  menus: { template: unknown[] }[];
  /** What contextBridge.exposeInMainWorld was given. */
  exposed: Map<string, unknown>;
  /** Messages main sent to the renderer with webContents.send / postMessage. */
  toRenderer: Array<{ channel: string; args: unknown[]; ports?: FakePort[] }>;
}

export class FakeApp extends EventEmitter {
  lock = true;
  quitCalls = 0;
  /** Set once a quit went through (no before-quit listener prevented it). */
  quitted = false;
  exitCode: number | undefined;
  requestSingleInstanceLock(): boolean {
    return this.lock;
  }
  whenReady(): Promise<void> {
    return Promise.resolve();
  }
  quit(): void {
    this.quitCalls++;
    let prevented = false;
    this.emit('before-quit', { preventDefault: () => (prevented = true) });
    if (!prevented) {
      this.quitted = true;
      this.emit('will-quit');
      this.emit('quit');
    }
  }
  exit(code = 0): void {
    this.exitCode = code;
    this.quitted = true;
  }
}

export class FakeIpcMain extends EventEmitter {
  readonly handlers = new Map<string, Listener>();
  handle(channel: string, fn: Listener): void {
    if (this.handlers.has(channel)) throw new Error(`Attempted to register a second handler for '${channel}'`);
    this.handlers.set(channel, fn);
  }
  removeHandler(channel: string): void {
    this.handlers.delete(channel);
  }
  async invoke(channel: string, sender: unknown, ...args: unknown[]): Promise<unknown> {
    const fn = this.handlers.get(channel);
    if (!fn) throw new Error(`No handler registered for '${channel}'`);
    return fn({ sender }, ...args);
  }
}

let contentsId = 1;

export class FakeWebContents extends EventEmitter {
  readonly id = contentsId++;
  openHandler: Listener | undefined;
  constructor(private readonly harness: FakeHarness) {
    super();
  }
  send(channel: string, ...args: unknown[]): void {
    this.harness.toRenderer.push({ channel, args });
    this.emit('to-renderer', channel, args, []);
  }
  postMessage(channel: string, message: unknown, ports: FakePort[] = []): void {
    this.harness.toRenderer.push({ channel, args: [message], ports });
    this.emit('to-renderer', channel, [message], ports);
  }
  setWindowOpenHandler(fn: Listener): void {
    this.openHandler = fn;
  }
}

export class FakeBrowserWindow extends EventEmitter {
  readonly webContents: FakeWebContents;
  bounds: { x: number; y: number; width: number; height: number };
  visible = false;
  minimized = false;
  focused = false;
  maximized = false;
  destroyed = false;
  loaded: string | undefined;
  constructor(
    readonly options: { x?: number; y?: number; width?: number; height?: number; webPreferences?: Record<string, unknown> },
    harness: FakeHarness,
  ) {
    super();
    this.webContents = new FakeWebContents(harness);
    this.bounds = { x: options.x ?? 10, y: options.y ?? 10, width: options.width ?? 800, height: options.height ?? 600 };
    harness.windows.push(this);
  }
  async loadFile(file: string): Promise<void> {
    this.loaded = file;
    queueMicrotask(() => this.emit('ready-to-show'));
  }
  getBounds() {
    return { ...this.bounds };
  }
  setBounds(b: Partial<FakeBrowserWindow['bounds']>): void {
    this.bounds = { ...this.bounds, ...b };
    this.emit(b.x !== undefined || b.y !== undefined ? 'move' : 'resize');
  }
  isMaximized = () => this.maximized;
  maximize = () => void (this.maximized = true);
  isMinimized = () => this.minimized;
  minimize = () => void ((this.minimized = true), (this.focused = false));
  restore = () => void (this.minimized = false);
  isVisible = () => this.visible;
  isFocused = () => this.focused;
  isDestroyed = () => this.destroyed;
  show = () => void ((this.visible = true), (this.focused = true));
  hide = () => void ((this.visible = false), (this.focused = false));
  focus = () => void (this.focused = true);
  close(): void {
    if (this.destroyed) return;
    this.emit('close', { preventDefault: () => undefined });
    this.destroyed = true;
    this.emit('closed');
  }
}

export class FakeNotification extends EventEmitter {
  static list: FakeNotification[] = [];
  static isSupported = () => true;
  shown = false;
  constructor(readonly options: { title?: string; body?: string }) {
    super();
  }
  show(): void {
    this.shown = true;
    FakeNotification.list.push(this);
  }
}

export function createFakeElectron(): FakeHarness {
  const harness = { windows: [], notifications: [], menus: [], exposed: new Map(), toRenderer: [] } as unknown as FakeHarness;
  const app = new FakeApp();
  const ipcMain = new FakeIpcMain();
  const notifications: FakeNotification[] = [];
  class Notification extends FakeNotification {
    static override isSupported = () => true;
    override show(): void {
      this.shown = true;
      notifications.push(this);
    }
  }
  class BrowserWindow extends FakeBrowserWindow {
    constructor(options: FakeBrowserWindow['options']) {
      super(options, harness);
    }
  }
  const Menu = {
    buildFromTemplate: (template: unknown[]) => ({ template }),
    setApplicationMenu: (menu: { template: unknown[] }) => void harness.menus.push(menu),
  };
  class Tray extends EventEmitter {
    constructor(readonly icon: string) {
      super();
    }
    setToolTip(): void {}
    setContextMenu(): void {}
  }
  // The fake renderer's side.
  const rendererListeners = new EventEmitter();
  const sender = () => harness.windows.at(-1)?.webContents;
  const ipcRenderer = {
    on: (channel: string, fn: Listener) => void rendererListeners.on(channel, fn),
    removeListener: (channel: string, fn: Listener) => void rendererListeners.removeListener(channel, fn),
    send: (channel: string, ...args: unknown[]) => void ipcMain.emit(channel, { sender: sender() }, ...args),
    invoke: (channel: string, ...args: unknown[]) => ipcMain.invoke(channel, sender(), ...args),
  };
  const wireRenderer = (w: FakeBrowserWindow) =>
    w.webContents.on('to-renderer', (channel: string, args: unknown[], ports: FakePort[]) => rendererListeners.emit(channel, { ports, sender: null }, ...args));
  const origPush = harness.windows.push.bind(harness.windows);
  harness.windows.push = (...ws: FakeBrowserWindow[]) => {
    ws.forEach(wireRenderer);
    return origPush(...ws);
  };
  const contextBridge = { exposeInMainWorld: (key: string, api: unknown) => void harness.exposed.set(key, api) };
  Object.assign(harness, {
    app,
    ipcMain,
    notifications,
    electron: { app, BrowserWindow, ipcMain, MessageChannelMain: FakeMessageChannelMain, Menu, Notification, Tray } as unknown as ElectronMain,
    preload: { contextBridge, ipcRenderer } as unknown as ElectronPreload,
  });
  return harness;
}
