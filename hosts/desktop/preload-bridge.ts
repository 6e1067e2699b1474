/**
 * The preload's whole job: expose `window.liveagent.desktop` (contract.ts `DesktopBridge`) and
 * hand each gateway port to the page. A MessagePort cannot cross contextBridge, so the port is
 * posted to the page's own world with window.postMessage (Electron's documented way for a
 * context-isolated page); streaming then runs over that port, never one IPC call per delta.
 */
import { COMMAND_CHANNEL, CONNECT_CHANNEL, GATEWAY_INFO_CHANNEL, GATEWAY_SET_CHANNEL, PORT_CHANNEL, PORT_MESSAGE_TYPE, type DesktopBridge, type DesktopCommand, type DesktopGatewayPatch } from './contract.js';
import type { ElectronPreload } from './electron-api.js';

/** The part of `window` the preload uses (its isolated world's window). */
export interface PreloadWindow {
  postMessage(message: unknown, targetOrigin: string, transfer?: Transferable[]): void;
}

export function installBridge(electron: ElectronPreload, win: PreloadWindow, platform: string): DesktopBridge {
  const { contextBridge, ipcRenderer } = electron;
  ipcRenderer.on(PORT_CHANNEL, (event, nonce: unknown) => {
    if (typeof nonce !== 'string' || event.ports.length !== 1) return;
    win.postMessage({ type: PORT_MESSAGE_TYPE, nonce }, '*', event.ports as unknown as Transferable[]);
  });
  const bridge: DesktopBridge = {
    version: 1,
    platform,
    connect: (nonce: string) => ipcRenderer.send(CONNECT_CHANNEL, String(nonce)),
    gatewayInfo: () => ipcRenderer.invoke(GATEWAY_INFO_CHANNEL),
    setGateway: (patch: DesktopGatewayPatch) => ipcRenderer.invoke(GATEWAY_SET_CHANNEL, patch),
    onCommand: (fn: (command: DesktopCommand) => void) => {
      const listener = (_event: unknown, command: unknown) => {
        if (typeof command === 'string') fn(command as DesktopCommand);
      };
      ipcRenderer.on(COMMAND_CHANNEL, listener);
      return () => void ipcRenderer.removeListener(COMMAND_CHANNEL, listener);
    },
  };
  contextBridge.exposeInMainWorld('liveagent', { desktop: bridge });
  return bridge;
}
