/**
 * The Electron modules the desktop uses, as types only: the glue (electron-main.ts, preload.ts)
 * passes the real ones in, tests pass tests/helpers/fake-electron.ts. Nothing else here imports
 * 'electron' as a value, so the main-process logic runs under plain Node.
 */
import type * as E from 'electron';

export interface ElectronMain {
  app: E.App;
  BrowserWindow: typeof E.BrowserWindow;
  ipcMain: E.IpcMain;
  MessageChannelMain: typeof E.MessageChannelMain;
  Menu: typeof E.Menu;
  Notification: typeof E.Notification;
  /** Only used when a tray icon is given. */
  Tray?: typeof E.Tray;
}

export interface ElectronPreload {
  contextBridge: E.ContextBridge;
  ipcRenderer: E.IpcRenderer;
}

export type { BrowserWindow, IpcMainEvent, IpcMainInvokeEvent, MenuItemConstructorOptions, MessagePortMain, Rectangle } from 'electron';
