/**
 * The desktop's main process, with Electron injected (electron-api.ts): one kernel with the
 * builtins and the gateway, started before the window; the renderer (the same webui/ build)
 * talks to that gateway over a MessagePort served as an in-process client; the network gateway
 * for browsers elsewhere is off until Settings turns it on. Quit stops the runs and closes the
 * database before the app exits.
 */
import path from 'node:path';
import type { LifecycleEvent, PluginModule, Settings } from '../../plugin-api.js';
import type { Kernel } from '../../core/kernel.js';
import type { LocalConnection } from '../../plugins/gateway/index.js';
import { packageRoot } from '../server/static-files.js';
import { bootGatewayKernel, startScheduledTasks } from '../shared/gateway-host.js';
import { COMMAND_CHANNEL, CONNECT_CHANNEL, GATEWAY_INFO_CHANNEL, GATEWAY_SET_CHANNEL, PORT_CHANNEL, type DesktopCommand, type DesktopGatewayInfo } from './contract.js';
import { DEFAULT_BOUNDS, DesktopState } from './desktop-state.js';
import type { BrowserWindow, ElectronMain, IpcMainEvent, MenuItemConstructorOptions } from './electron-api.js';
import { NetworkGateway } from './network-gateway.js';
import { UploadReceiver } from './upload-receiver.js';
import { UPLOADS_SERVICE, type UploadsService } from '../../plugins/uploads/service.js';
import { z } from 'zod';

export interface DesktopOptions {
  electron: ElectronMain;
  /** `$LIVEAGENT_HOME` (default: the environment, else ~/.liveagent). */
  home?: string;
  settings?: Settings;
  builtins?: PluginModule[];
  extraPlugins?: PluginModule[];
  thirdParty?: boolean;
  /** The built WebUI (default `<package>/webui/dist`): the window loads its index.html, the network gateway serves it. */
  webuiDir?: string;
  /** The bundled preload (default `<package>/dist/hosts/desktop/preload.cjs`). */
  preload?: string;
  trayIcon?: string;
  /** How long to wait before saving moved or resized bounds (default 500 ms). */
  saveBoundsDelayMs?: number;
  log?: (line: string) => void;
}

export interface Desktop {
  kernel: Kernel;
  state: DesktopState;
  network: NetworkGateway;
  window(): BrowserWindow | undefined;
  gatewayInfo(): DesktopGatewayInfo;
  setGateway(patch: unknown): Promise<DesktopGatewayInfo>;
  /** Resolves when the quit finished (runs stopped, database closed). */
  readonly stopped: Promise<void>;
}

const GatewayPatchSchema = z.strictObject({
  enabled: z.boolean('enabled must be true or false'),
  host: z.string('host must be a string').min(1, 'host must not be empty').optional(),
  port: z.number('port must be a number').int('port must be a whole number').min(0, 'port must be 0-65535').max(65535, 'port must be 0-65535').optional(),
});

/** Start the desktop; null when another instance holds the lock (this one quits, that one shows its window). */
export async function startDesktop(options: DesktopOptions): Promise<Desktop | null> {
  const { app, BrowserWindow, ipcMain, MessageChannelMain, Menu, Notification } = options.electron;
  const log = options.log ?? ((line: string) => void process.stderr.write(`${line}\n`));
  if (!app.requestSingleInstanceLock()) {
    app.quit();
    return null;
  }
  const { kernel, gateway } = await bootGatewayKernel(options);
  const home = kernel.paths.home;
  const webuiDir = path.resolve(options.webuiDir ?? path.join(packageRoot(), 'webui', 'dist'));
  const preload = options.preload ?? path.join(packageRoot(), 'dist', 'hosts', 'desktop', 'preload.cjs');
  const state = new DesktopState(home, log);
  const network = new NetworkGateway({ gateway, home, webuiDir, settings: () => kernel.settings.get() });
  /** The renderer's connections, each with what ends it (the gateway client, its uploads, the port). */
  const connections = new Map<LocalConnection, () => void>();
  let win: BrowserWindow | undefined;
  let saveTimer: NodeJS.Timeout | undefined;
  let quitting: Promise<void> | undefined;
  let finished = false;
  let resolveStopped!: () => void;
  const stopped = new Promise<void>((r) => (resolveStopped = r));

  const live = () => (win && !win.isDestroyed() ? win : undefined);
  const hidden = () => {
    const w = live();
    return !w || !w.isVisible() || w.isMinimized() || !w.isFocused();
  };
  const showWindow = () => {
    const w = live() ?? createWindow();
    if (w.isMinimized()) w.restore();
    w.show();
    w.focus();
    return w;
  };
  const command = (c: DesktopCommand) => showWindow().webContents.send(COMMAND_CHANNEL, c);

  const saveBounds = () => {
    const w = live();
    if (!w) return;
    const maximized = w.isMaximized();
    // Maximized: keep the normal bounds, so un-maximizing next time lands where it was.
    const b = maximized && state.data.window ? state.data.window : w.getBounds();
    state.update({ window: { x: b.x, y: b.y, width: b.width, height: b.height, maximized } });
  };
  const saveSoon = () => {
    if (saveTimer) clearTimeout(saveTimer);
    saveTimer = setTimeout(saveBounds, options.saveBoundsDelayMs ?? 500);
    saveTimer.unref?.();
  };

  function createWindow(): BrowserWindow {
    const b = state.data.window ?? DEFAULT_BOUNDS;
    const w = new BrowserWindow({
      ...(b.x !== undefined && b.y !== undefined ? { x: b.x, y: b.y } : {}),
      width: b.width,
      height: b.height,
      show: false,
      title: 'LiveAgent',
      webPreferences: { preload, contextIsolation: true, sandbox: true, nodeIntegration: false, webSecurity: true },
    });
    win = w;
    if (b.maximized) w.maximize();
    w.once('ready-to-show', () => w.show());
    w.on('resize', saveSoon);
    w.on('move', saveSoon);
    w.on('close', () => {
      if (saveTimer) clearTimeout(saveTimer);
      saveBounds();
    });
    w.on('closed', () => {
      // The renderer's connections end with it.
      for (const end of [...connections.values()]) end();
      connections.clear();
      if (win === w) win = undefined;
    });
    // Links open in the system browser, never inside the app window.
    w.webContents.setWindowOpenHandler(() => ({ action: 'deny' }));
    void w.loadFile(path.join(webuiDir, 'index.html')).catch((err: Error) => log(`liveagent: the window could not load the WebUI: ${err.message}`));
    return w;
  }

  /** A renderer asks for a connection: a MessageChannelMain, one end served by the gateway. */
  function onConnect(event: IpcMainEvent, nonce: unknown): void {
    // Only our own window's renderer gets a connection (it is trusted: no token).
    if (!live() || event.sender !== live()!.webContents || typeof nonce !== 'string' || nonce.length > 200) return;
    const { port1, port2 } = new MessageChannelMain();
    // Files from the window go over the same port (it has no HTTP origin for /api/uploads).
    const uploads = new UploadReceiver({ uploads: () => kernel.services.get<UploadsService>(UPLOADS_SERVICE), post: (m) => port1.postMessage(m) });
    const conn = gateway.connectLocal({
      send: (frame) => port1.postMessage(frame),
      onClose: (reason) => {
        connections.delete(conn);
        uploads.closeAll();
        try {
          port1.postMessage({ closed: reason });
        } catch {
          /* the port is gone already */
        }
        // The renderer closes its end on that notice; closing ours at once could drop the last frames.
        setTimeout(() => port1.close(), 1000).unref();
      },
    });
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      connections.delete(conn);
      uploads.closeAll();
      conn.close();
      try {
        // A renderer still there (only the connection ends) learns why and reconnects.
        port1.postMessage({ closed: 'the connection was closed' });
      } catch {
        /* its end is gone already */
      }
      port1.close();
    };
    connections.set(conn, end);
    port1.on('message', (ev) => {
      const data: unknown = ev.data;
      if (typeof data === 'string') conn.receive(data);
      else if (uploads.handle(data)) return;
      else if (data && typeof data === 'object' && 'close' in data) end();
    });
    port1.on('close', end);
    port1.start();
    event.sender.postMessage(PORT_CHANNEL, nonce, [port2]);
  }

  const gatewayInfo = () => network.info(state.data.gateway.enabled, state.data.gateway.host, state.data.gateway.port);
  async function setGateway(patch: unknown): Promise<DesktopGatewayInfo> {
    const r = GatewayPatchSchema.safeParse(patch);
    if (!r.success) {
      const i = r.error.issues[0]!;
      throw new Error(`gateway settings: ${i.path.length ? `${i.path.join('.')}: ` : ''}${i.message}`);
    }
    state.update({ gateway: { ...state.data.gateway, ...r.data } });
    await applyGateway();
    return gatewayInfo();
  }
  async function applyGateway(): Promise<void> {
    const g = state.data.gateway;
    if (!g.enabled) return network.stop();
    try {
      await network.start(g.host, g.port);
      log(`LiveAgent's gateway is on at ${gatewayInfo().url?.replace(/#.*/, '')}`);
    } catch (err) {
      log(`liveagent: the gateway could not start: ${(err as Error).message}`);
    }
  }

  function notify(title: string, body: string, conversationId: string): void {
    if (!hidden() || !Notification.isSupported()) return;
    const n = new Notification({ title, body, silent: false });
    n.on('click', () => command(`open:${conversationId}`));
    n.show();
  }
  function onEvent(e: LifecycleEvent): void {
    if (e.type === 'message_update') return;
    const name = e.type === 'custom' ? e.name : (e.type as string);
    if (e.type === 'agent_end') {
      const body = e.status === 'completed' ? 'The reply is ready.' : e.status === 'aborted' ? 'The run was stopped.' : `The run failed${e.error?.message ? `: ${e.error.message}` : '.'}`;
      notify('LiveAgent', body, e.conversationId);
    } else if (name === 'ask_user_question') notify('LiveAgent has a question', 'An answer is waiting for you.', e.conversationId);
    else if (name === 'tool_approval') notify('LiveAgent needs approval', 'A tool call is waiting for your approval.', e.conversationId);
  }

  const shutdown = async () => {
    if (saveTimer) clearTimeout(saveTimer);
    try {
      if (live()) saveBounds();
    } catch (err) {
      log(`liveagent: the window state was not saved: ${(err as Error).message}`);
    }
    await network.stop().catch(() => undefined);
    // Stops runs, kills their processes, lets plugins finish writes, closes the database; the
    // gateway sends the runs' last events to the renderer before it ends its ports.
    await kernel.shutdown();
  };

  // Before the first window, so the renderer's first connect finds the handler.
  ipcMain.on(CONNECT_CHANNEL, onConnect);
  ipcMain.handle(GATEWAY_INFO_CHANNEL, (event) => {
    if (event.sender !== live()?.webContents) throw new Error('not allowed');
    return gatewayInfo();
  });
  ipcMain.handle(GATEWAY_SET_CHANNEL, (event, patch: unknown) => {
    if (event.sender !== live()?.webContents) throw new Error('not allowed');
    return setGateway(patch);
  });
  const unsubscribe = kernel.runtime.onEvent(onEvent);
  app.on('second-instance', () => void showWindow());
  app.on('activate', () => void showWindow());
  app.on('window-all-closed', () => {
    if (process.platform !== 'darwin') app.quit();
  });
  app.on('before-quit', (event) => {
    if (finished) return;
    event.preventDefault();
    quitting ??= shutdown()
      .catch((err: Error) => log(`liveagent: the shutdown failed: ${err.message}`))
      .finally(() => {
        unsubscribe.dispose();
        finished = true;
        resolveStopped();
        app.quit();
      });
  });

  await app.whenReady();
  const items: MenuItemConstructorOptions[] = [
    { label: 'New chat', accelerator: 'CmdOrCtrl+N', click: () => command('new-chat') },
    { label: 'Settings', accelerator: 'CmdOrCtrl+,', click: () => command('settings') },
    { type: 'separator' },
    { label: 'Quit', accelerator: 'CmdOrCtrl+Q', click: () => app.quit() },
  ];
  Menu.setApplicationMenu(Menu.buildFromTemplate([{ label: 'LiveAgent', submenu: items }, { role: 'editMenu' }, { role: 'viewMenu' }, { role: 'windowMenu' }]));
  if (options.trayIcon && options.electron.Tray) {
    const tray = new options.electron.Tray(options.trayIcon);
    tray.setToolTip('LiveAgent');
    tray.setContextMenu(Menu.buildFromTemplate(items));
    tray.on('click', () => void showWindow());
  }
  createWindow();
  await applyGateway();
  await startScheduledTasks(kernel, log);

  return { kernel, state, network, window: live, gatewayInfo, setGateway, stopped };
}
