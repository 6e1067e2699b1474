/**
 * Picks the transport for where the app runs. The Electron host will expose an IPC bridge on
 * `window.liveagent.transport` (a Transport-shaped object); the browser uses the WebSocket.
 */
import type { Transport } from './types.js';
import { WebSocketTransport } from './websocket-transport.js';

export type { Transport, TransportStatus, TransportState } from './types.js';
export { WebSocketTransport } from './websocket-transport.js';

declare global {
  interface Window {
    liveagent?: { transport?: Transport };
  }
}

export function createTransport(token: string): Transport {
  const bridged = window.liveagent?.transport;
  if (bridged) return bridged;
  const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
  return new WebSocketTransport({ url: `${proto}//${location.host}/ws`, token });
}
