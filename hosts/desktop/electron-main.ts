/**
 * Electron glue for the main process: the only value import of 'electron' on this side.
 * `electron dist/hosts/desktop/electron-main.js` (what `liveagent desktop` spawns) runs this.
 */
import { BrowserWindow, Menu, MessageChannelMain, Notification, Tray, app, ipcMain } from 'electron';
import { startDesktop } from './main-process.js';

startDesktop({ electron: { app, BrowserWindow, ipcMain, MessageChannelMain, Menu, Notification, Tray } }).catch((err: Error) => {
  process.stderr.write(`liveagent: the desktop app could not start: ${err.message}\n`);
  app.exit(1);
});
