/**
 * Electron glue for the preload (bundled to dist/hosts/desktop/preload.cjs: a sandboxed preload
 * is CommonJS and may require only 'electron'). Everything else is preload-bridge.ts.
 */
import { contextBridge, ipcRenderer } from 'electron';
import { installBridge } from './preload-bridge.js';

installBridge({ contextBridge, ipcRenderer }, window, process.platform);
