/**
 * The one contract between the desktop's main process, its preload and the renderer: IPC channel
 * names and the bridge the preload exposes as `window.liveagent.desktop`. The renderer imports it
 * too (webui/src/transport/ipc-transport.ts; the WebUI's type-check copies it, see
 * webui/scripts/typecheck.mjs), so it imports nothing: no Node, no Electron, only constants and types.
 */

/** renderer → main (send): open a gateway connection; the nonce comes back with the port. */
export const CONNECT_CHANNEL = 'liveagent:connect';
/** main → renderer (postMessage with one MessagePort): the connection asked for. */
export const PORT_CHANNEL = 'liveagent:port';
/** main → renderer (send): a menu, tray or notification command. */
export const COMMAND_CHANNEL = 'liveagent:command';
/** renderer → main (invoke): the network gateway's state. */
export const GATEWAY_INFO_CHANNEL = 'liveagent:gateway-info';
/** renderer → main (invoke): turn the network gateway on or off. */
export const GATEWAY_SET_CHANNEL = 'liveagent:gateway-set';

/** The window message the preload posts to the page's own world, carrying the port. */
export const PORT_MESSAGE_TYPE = 'liveagent:port';

export type DesktopCommand = 'new-chat' | 'settings' | `open:${string}`;

/** The network gateway as Settings shows it. */
export interface DesktopGatewayInfo {
  enabled: boolean;
  /** Listening (it can be enabled and failing, e.g. the port is taken). */
  running: boolean;
  host: string;
  port: number;
  /** `http://<address>:<port>/#token=<token>` while running: what a browser elsewhere opens. */
  url?: string;
  token?: string;
  error?: string;
}

export interface DesktopGatewayPatch {
  enabled: boolean;
  host?: string;
  port?: number;
}

/** What `window.liveagent.desktop` offers, and nothing else. */
export interface DesktopBridge {
  readonly version: 1;
  readonly platform: string;
  /** Ask for a gateway connection: a window message `{ type: PORT_MESSAGE_TYPE, nonce }` brings its port. */
  connect(nonce: string): void;
  gatewayInfo(): Promise<DesktopGatewayInfo>;
  setGateway(patch: DesktopGatewayPatch): Promise<DesktopGatewayInfo>;
  /** Menu and tray commands; returns the unsubscribe. */
  onCommand(fn: (command: DesktopCommand) => void): () => void;
}

/**
 * Uploads over the gateway port (upload-receiver.ts): objects beside the gateway's string
 * frames. A chunk is at most UPLOAD_CHUNK_BYTES; the renderer keeps at most UPLOAD_WINDOW_BYTES
 * sent and not yet acked.
 */
export const UPLOAD_CHUNK_BYTES = 256 * 1024;
export const UPLOAD_WINDOW_BYTES = 4 * UPLOAD_CHUNK_BYTES;

/** renderer → main. */
export type UploadRequest =
  | { upload: 'begin'; id: string; name: string; size: number }
  | { upload: 'chunk'; id: string; data: ArrayBuffer }
  | { upload: 'end'; id: string }
  | { upload: 'cancel'; id: string }
  /** A stored upload's bytes (previews). */
  | { upload: 'get'; id: string; uploadId: string };

/** The HTTP route's answer: `{ uploadId, name, path, size, mediaType, deduped? }`. */
export interface UploadResultWire {
  uploadId: string;
  name: string;
  path: string;
  size: number;
  mediaType: string;
  deduped?: boolean;
}

/** main → renderer. `code` is the HTTP route's error code (`too_large`, `bad_request`, ...), or `cancelled` / `failed`. */
export type UploadReply =
  | { upload: 'ack'; id: string; received: number }
  | { upload: 'done'; id: string; result: UploadResultWire }
  | { upload: 'error'; id: string; code: string; message: string }
  | { upload: 'file'; id: string; mediaType: string; data: ArrayBuffer };
