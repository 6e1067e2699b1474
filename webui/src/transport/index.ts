/**
 * Picks the transport for where the app runs: in the desktop app the preload's bridge
 * (`window.liveagent.desktop`, hosts/desktop/contract.ts) gives a MessagePort to the main
 * process's gateway; an embedder may hand a whole Transport as `window.liveagent.transport`; the
 * browser uses the WebSocket.
 */
import type { Transport } from './types.js';
import { commands, parseDesktopCommand } from '../lib/commands.js';
import { setUploadPath } from '../lib/uploads.js';
import { IpcTransport, type DesktopBridge } from './ipc-transport.js';
import { WebSocketTransport } from './websocket-transport.js';

export type { Transport, TransportStatus, TransportState } from './types.js';
export { WebSocketTransport } from './websocket-transport.js';

declare global {
  interface Window {
    liveagent?: { transport?: Transport; desktop?: DesktopBridge };
  }
}

export function createTransport(token: string): Transport {
  const bridged = window.liveagent?.transport;
  if (bridged) return bridged;
  const desktop = window.liveagent?.desktop;
  if (desktop) {
    // Menu, tray and notification commands go to the app's command bus (main.ts handles them).
    desktop.onCommand((raw) => {
      const c = parseDesktopCommand(raw);
      if (c) commands.dispatch(c);
    });
    const ipc = new IpcTransport({ bridge: desktop });
    // The window loads from file://: uploads and previews go over the port, not to /api/uploads.
    setUploadPath({ upload: (file, name, onProgress) => ipc.upload(file, name, onProgress), fetch: (id) => ipc.fetchUpload(id) });
    return ipc;
  }
  const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
  return new WebSocketTransport({ url: `${proto}//${location.host}/ws`, token });
}
