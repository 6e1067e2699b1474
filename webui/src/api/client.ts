/**
 * Request/reply and routing on top of a Transport. Requests carry an id that the server echoes
 * in its `reply`; everything else is routed by message type to whoever listens.
 */
import type { ClientMessage, ReplyOf, ServerMessage } from '../../../lib/gateway-protocol/protocol.js';
import type { Transport, TransportStatus } from '../transport/index.js';

type Handler = (msg: ServerMessage) => void;
type ReplyMessage = Extract<ServerMessage, { type: 'reply' }>;

/** A refused request: the server's error code and message. */
export class GatewayError extends Error {
  constructor(readonly code: string, message: string) {
    super(message);
  }
}

type WithoutId<T> = T extends unknown ? Omit<T, 'id'> : never;
export type ClientRequest = WithoutId<ClientMessage>;
/** A plugin's own message type (e.g. `cron.list`): its reply is the plugin's to define. */
export interface ExtensionRequest {
  type: string;
  [field: string]: unknown;
}

export class GatewayClient {
  private seq = 0;
  private readonly pending = new Map<string, { resolve: (v: unknown) => void; reject: (e: Error) => void; timer: ReturnType<typeof setTimeout> }>();
  private readonly handlers = new Map<string, Set<Handler>>();
  private readonly statusFns = new Set<(s: TransportStatus) => void>();
  private readonly orphanFns = new Set<(r: ReplyMessage) => void>();
  status: TransportStatus = { state: 'idle', attempt: 0, wasOpen: false };

  constructor(readonly transport: Transport, private readonly timeoutMs = 30_000) {
    transport.onMessage((m) => this.route(m));
    transport.onStatus((s) => {
      this.status = s;
      for (const fn of this.statusFns) fn(s);
    });
  }

  connect(): void {
    this.transport.connect();
  }

  /**
   * Send and wait for the reply's data, typed by the protocol's request → reply map (ReplyOf);
   * rejects with a GatewayError when the server refuses. A plugin's own message type names the
   * reply it expects.
   */
  request<M extends ClientRequest>(msg: M, timeoutMs?: number): Promise<ReplyOf<M>>;
  request<T>(msg: ExtensionRequest, timeoutMs?: number): Promise<T>;
  request<T>(msg: ClientRequest | ExtensionRequest, timeoutMs = this.timeoutMs): Promise<T> {
    const id = `r${++this.seq}-${Date.now().toString(36)}`;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new GatewayError('timeout', `no reply to ${msg.type} after ${Math.round(timeoutMs / 1000)} s`));
      }, timeoutMs);
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject, timer });
      this.transport.send({ ...msg, id } as ClientMessage);
    });
  }

  /** Fire and forget. */
  send(msg: ClientRequest): void {
    this.transport.send(msg as ClientMessage);
  }

  on<K extends ServerMessage['type']>(type: K, fn: (msg: Extract<ServerMessage, { type: K }>) => void): () => void {
    let set = this.handlers.get(type);
    if (!set) this.handlers.set(type, (set = new Set()));
    set.add(fn as Handler);
    return () => set!.delete(fn as Handler);
  }

  onStatus(fn: (s: TransportStatus) => void): () => void {
    this.statusFns.add(fn);
    fn(this.status);
    return () => this.statusFns.delete(fn);
  }

  /** Replies to no request of ours (the gateway reports a queued item that failed this way). */
  onOrphanReply(fn: (r: ReplyMessage) => void): () => void {
    this.orphanFns.add(fn);
    return () => this.orphanFns.delete(fn);
  }

  private route(msg: ServerMessage): void {
    if (msg.type === 'reply') return this.settle(msg);
    const set = this.handlers.get(msg.type);
    if (set) for (const fn of set) fn(msg);
  }

  private settle(msg: ReplyMessage): void {
    const p = this.pending.get(msg.id);
    if (!p) {
      for (const fn of this.orphanFns) fn(msg);
      return;
    }
    this.pending.delete(msg.id);
    clearTimeout(p.timer);
    if (msg.ok) p.resolve(msg.data);
    else p.reject(new GatewayError(msg.error.code, msg.error.message));
  }
}

let current: GatewayClient | null = null;

export function setClient(client: GatewayClient): void {
  current = client;
}

export function client(): GatewayClient {
  if (!current) throw new Error('the gateway client is not set up yet');
  return current;
}
