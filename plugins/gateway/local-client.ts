/**
 * An in-process gateway client: the desktop renderer's MessagePort (hosts/desktop) is served by
 * the same code path as a WebSocket (dispatch, fan-out, coalesced frames, backpressure), so every
 * store and component works the same on both. `LocalSocket` is the small part of a `ws` socket
 * that GatewayClient and the gateway use; nothing here checks access: an in-process client is
 * the host itself, trusted (sockets are checked in gateway.ts before they exist).
 */

export interface LocalClientOptions {
  /** Deliver one frame (a JSON array of server messages) to the client. */
  send(frame: string): void;
  /** The gateway ended this client (dropped, or the gateway closed); `reason` says why. */
  onClose?(reason: string): void;
}

/** What the host holds for a local client. */
export interface LocalConnection {
  /** Client message text, as a socket frame would carry it (validated by the gateway). */
  receive(text: string): void;
  /** The client went away (the renderer closed its port, the window closed). */
  close(): void;
  readonly closed: boolean;
}

type Listener = (...args: unknown[]) => void;

/** Stands in for a `ws` WebSocket in GatewayClient; see gateway.ts `connectLocal`. */
export class LocalSocket {
  private readonly listeners = new Map<string, Set<{ fn: Listener; once: boolean }>>();
  private ended = false;
  readonly connection: LocalConnection;

  constructor(private readonly options: LocalClientOptions) {
    const self = this;
    this.connection = {
      receive: (text: string) => {
        if (!self.ended) self.emit('message', Buffer.from(text, 'utf8'), false);
      },
      close: () => self.end('client closed', false),
      get closed() {
        return self.ended;
      },
    };
  }

  on(event: string, fn: Listener): this {
    return this.add(event, fn, false);
  }

  once(event: string, fn: Listener): this {
    return this.add(event, fn, true);
  }

  /** The frame goes out at once; its callback after the current task, like a socket write completing. */
  send(data: Buffer | string, _opts: unknown, cb?: (err?: Error) => void): void {
    if (this.ended) return void cb?.(new Error('closed'));
    try {
      this.options.send(typeof data === 'string' ? data : data.toString('utf8'));
    } catch (err) {
      // A port that cannot take a frame is gone: end the client like a broken socket.
      queueMicrotask(() => this.end(`send failed: ${(err as Error).message}`, true));
    }
    if (cb) queueMicrotask(() => cb());
  }

  /** Nothing sits between the gateway and an in-process client: it is always alive. */
  ping(): void {
    queueMicrotask(() => this.emit('pong'));
  }

  close(_code?: number, reason?: string): void {
    this.end(reason ?? 'closed', true);
  }

  terminate(): void {
    this.end('terminated', true);
  }

  private end(reason: string, tell: boolean): void {
    if (this.ended) return;
    this.ended = true;
    this.emit('close', 1000, Buffer.from(reason));
    if (tell) this.options.onClose?.(reason);
    this.listeners.clear();
  }

  private add(event: string, fn: Listener, once: boolean): this {
    let set = this.listeners.get(event);
    if (!set) this.listeners.set(event, (set = new Set()));
    set.add({ fn, once });
    return this;
  }

  private emit(event: string, ...args: unknown[]): void {
    for (const l of [...(this.listeners.get(event) ?? [])]) {
      if (l.once) this.listeners.get(event)?.delete(l);
      l.fn(...args);
    }
  }
}
