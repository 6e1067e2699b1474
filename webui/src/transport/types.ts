/**
 * The seam between the app and whatever carries gateway messages: a WebSocket in the browser,
 * IPC in the Electron renderer. Stores talk only to this interface.
 */
import type { ClientMessage, ServerMessage } from '../../../lib/gateway-protocol/protocol.js';

export type TransportState = 'idle' | 'connecting' | 'open' | 'reconnecting' | 'closed';

export interface TransportStatus {
  state: TransportState;
  /** Failed attempts since the last open connection. */
  attempt: number;
  /** When the next attempt starts (epoch ms), while reconnecting. */
  nextRetryAt?: number;
  /** Why the last connection ended, if it said. */
  reason?: string;
  /** True once a connection was open at least once: later opens are reconnects. */
  wasOpen: boolean;
}

export type Unsubscribe = () => void;

export interface Transport {
  /** Start connecting (and keep reconnecting until `close`). */
  connect(): void;
  /**
   * Send one message. While not connected it waits in an outbox that is flushed after the
   * status listeners have seen `open` (so re-subscribes go out first).
   */
  send(msg: ClientMessage): void;
  /** Every server message, one at a time (array frames are split). */
  onMessage(fn: (msg: ServerMessage) => void): Unsubscribe;
  onStatus(fn: (status: TransportStatus) => void): Unsubscribe;
  /** Skip the backoff wait and try now. */
  reconnectNow(): void;
  close(): void;
}
