/**
 * The gateway: WebSocket access for the WebUI and remote clients. The host attaches it to its
 * HTTP server; every upgrade is checked (Host, Origin, token) before it happens. Client messages
 * are validated with the protocol's zod schemas and handled one at a time per client; events go
 * out through the fan-out path (fanout.ts).
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { WebSocket, WebSocketServer } from 'ws';
import type { Disposable, GatewayMessage, GatewayQueueItem, GatewayRemote, GatewayService, LifecycleEvent, Logger, ModelInfo, PluginContext, Settings } from '../../plugin-api.js';
import { APP_PROTOCOL, DEFAULT_REFUSAL_LOG_INTERVAL_MS, RefusalLog, TOKEN_PROTOCOL_PREFIX, checkAccess, refuse } from './access.js';
import { ChatRuns, LaterReply, ReplyError, type ChatQueueAnswer } from './chat-runs.js';
import { GatewayClient } from './client.js';
import { LocalSocket, type LocalClientOptions, type LocalConnection } from './local-client.js';
import { Fanout } from './fanout.js';
import { GatewayHistory } from './history.js';
import { HttpRoutes, type HttpRouteHandler } from './http-routes.js';
import { BUILTIN_CLIENT_TYPES, ChatQueueSchema, EXTENSION_TYPE, MAX_PAGE_MESSAGES, PROTOCOL_VERSION, parseClientMessage, ServerMessageSchema, type ChatQueueItem, type ClientMessage, type ExtensionMessage, type McpServerSummary, type ModelSummary, type ProviderSummary, type QueuedItem, type ReplyMap, type ServerMessage } from '../../lib/gateway-protocol/protocol.js';
import { providerTestHandler } from './provider-test.js';
import { truncatePreviewHandler } from './resend.js';
import { resolveWorkdir, workdirCheckHandler } from './workdir.js';
import { parseGatewaySettings, type GatewaySettings } from './settings.js';
import { serializeEvent } from './wire.js';

export interface AttachOptions {
  /** The token clients must present. */
  token: string;
  /** Upgrade path (default `/ws`). */
  path?: string;
  /** The address the server listens on (its own names pass the Host check). */
  bindHost?: string;
  /** Refused connections are logged in full once, then summarized at most once per this many ms (default 60 s). */
  refusalLogIntervalMs?: number;
}

/**
 * What the gateway plugin provides as the `gateway` service: the contract's GatewayService (what
 * plugins use; plugin-api.d.ts) and what hosts use to serve it, which stays the plugin's own.
 */
export interface GatewayHostService extends GatewayService {
  /** Handle upgrades of `server` on `options.path`. */
  attach(server: Server, options: AttachOptions): Promise<void>;
  /** For hosts that route upgrades themselves (after attach's options were given). */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void;
  /** Connected clients and their outstanding bytes (observability). */
  stats(): {
    clients: Array<{ id: string; heldBytes: number; maxHeldBytes: number; subscriptions: number }>;
    dropped: number;
    peakHeldBytes: number;
    /** Bytes outstanding for every client together. */
    totalHeldBytes: number;
    /** Bytes every replay window holds together. */
    replayBytes: number;
  };
  /** Flush, close every socket (1001) and stop the heartbeat. */
  close(): Promise<void>;
  /**
   * Attach an in-process client (the desktop renderer's MessagePort): served like a socket, but
   * trusted (no Host, Origin or token check). See local-client.ts.
   */
  connectLocal(options: LocalClientOptions): LocalConnection;
  /** For hosts: answer `req` when a registered route matches its path (false: none does, answer 404). */
  handleHttp(req: IncomingMessage, res: ServerResponse): boolean;
}

/** A plugin's handler for its own client message type (see GatewayService.registerHandler). */
export type GatewayHandler = (message: ExtensionMessage) => unknown;

/** The first issue of a failed parse, as one line naming the field. */
function issueLine(issues: ReadonlyArray<{ path: PropertyKey[]; message: string }>): string {
  const issue = issues[0];
  return issue ? `${issue.path.map(String).join('.') || 'message'}: ${issue.message}` : 'invalid';
}

type GatewayContext = Pick<PluginContext, 'runtime' | 'settings' | 'logger' | 'service' | 'subscriptions'> & Partial<Pick<PluginContext, 'paths' | 'hooks' | 'sessionHooks'>>;

export class Gateway implements GatewayHostService {
  private config: GatewaySettings;
  private readonly fanout: Fanout;
  private readonly history: GatewayHistory;
  private readonly chat: ChatRuns;
  private readonly logger: Logger;
  private wss: WebSocketServer | undefined;
  private options: AttachOptions | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private listTimer: NodeJS.Timeout | undefined;
  private settingsChain: Promise<unknown> = Promise.resolve();
  private settingsOrigin: GatewayClient | undefined;
  private dropped = 0;
  /** Most bytes ever outstanding for one client, dropped ones included. */
  private peakHeld = 0;
  private closed = false;
  private mcpWatched = false;
  private historyWatched = false;
  private readonly refusals: RefusalLog;
  private readonly handlers = new Map<string, GatewayHandler>();
  private readonly routes: HttpRoutes;
  private remote: GatewayRemote | undefined;
  /** Stands in for the requester of a forwarded item: never subscribed, never written to. */
  private headless: GatewayClient | undefined;

  constructor(private readonly ctx: GatewayContext) {
    this.logger = ctx.logger;
    this.refusals = new RefusalLog((line) => this.logger.warn(line), () => this.options?.refusalLogIntervalMs ?? DEFAULT_REFUSAL_LOG_INTERVAL_MS);
    const parsed = parseGatewaySettings(ctx.settings.get().gateway);
    if (!parsed.ok) throw new Error(parsed.error);
    this.config = parsed.settings;
    this.fanout = new Fanout({ settings: () => this.config, onDrop: (c, reason) => this.drop(c, reason) });
    this.history = new GatewayHistory(() => ctx.service('history'));
    this.chat = new ChatRuns({
      runtime: ctx.runtime,
      history: this.history,
      logger: ctx.logger,
      follow: (client, id) => {
        // A closed client (gone, or the headless one of a forwarded item) must not be subscribed: nothing would ever remove it.
        if (!client.closed && !client.subscriptions.has(id)) this.fanout.subscribe(client, id);
      },
      notify: (id, m) => {
        this.fanout.notify(id, m);
        this.remote?.notified?.(id, m);
      },
      seen: (id) => this.fanout.seen(id),
      service: (key) => ctx.service(key),
      ...(ctx.paths ? { workdir: (requested: string | undefined) => resolveWorkdir(requested, ctx.paths!.home) } : {}),
    });
    this.routes = new HttpRoutes(
      () => (this.options && !this.closed ? { token: this.options.token, ...(this.options.bindHost ? { bindHost: this.options.bindHost } : {}), allowedOrigins: this.config.allowedOrigins, allowedHosts: this.config.allowedHosts } : undefined),
      this.refusals,
      (message, err) => this.logger.error(message, err),
    );
    this.handlers.set('conversations.truncate_preview', truncatePreviewHandler(this.history));
    this.handlers.set('providers.test', providerTestHandler({ runtime: ctx.runtime, settings: () => ctx.settings.get() }));
    if (ctx.paths) this.handlers.set('workdir.check', workdirCheckHandler(() => ctx.paths!.home));
    const subs: Disposable[] = [ctx.runtime.onEvent((e) => this.onEvent(e)), ctx.settings.onChange((s) => this.onSettings(s))];
    // The runtime owns delete and rename: the in-memory store answers them when no store does,
    // and a delete from anywhere (this gateway, another plugin) closes the chat in every window.
    if (ctx.sessionHooks) this.history.answer(ctx.sessionHooks);
    ctx.hooks?.conversationDeleted.tap(({ conversationId, existed }) => {
      if (existed || this.fanout.seen(conversationId)) this.onDeleted(conversationId);
    });
    ctx.subscriptions.push(...subs);
  }

  private onEvent(e: LifecycleEvent): void {
    // The hot path (one per streamed delta): only the fan-out cares.
    if (e.type === 'message_update') return this.fanout.publish(e);
    this.history.observe(e);
    this.chat.observe(e);
    this.fanout.publish(e);
    // A checkpoint touches the conversation (updatedAt) like a run does.
    if (e.type === 'agent_start' || e.type === 'agent_end' || (e.type === 'compaction' && e.payload.phase === 'end')) this.scheduleListBroadcast();
  }

  // ── Sockets ─────────────────────────────────────────────────────────────────────────────
  async attach(server: Server, options: AttachOptions): Promise<void> {
    await this.ensureServer(options);
    this.watchMcp();
    this.watchHistory();
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => this.handleUpgrade(req, socket, head));
  }

  private async ensureServer(options: AttachOptions): Promise<void> {
    this.options = { path: '/ws', ...options };
    if (this.wss) return;
    // ws is imported when a host attaches, so the CLI never pays for it.
    const { WebSocketServer } = await import('ws');
    this.wss = new WebSocketServer({
      noServer: true,
      clientTracking: false,
      perMessageDeflate: false,
      maxPayload: this.config.maxPayloadBytes,
      // Browsers need one offered subprotocol selected; never echo the token one back if another will do.
      handleProtocols: (protocols) => {
        if (protocols.has(APP_PROTOCOL)) return APP_PROTOCOL;
        for (const p of protocols) if (p.startsWith(TOKEN_PROTOCOL_PREFIX)) return p;
        return false;
      },
    });
    this.restartHeartbeat();
  }

  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on('error', () => undefined);
    const opts = this.options;
    if (!opts || !this.wss || this.closed) return refuse(socket, 503, 'the gateway is not running');
    const pathname = new URL(req.url ?? '/', 'http://x').pathname;
    if (pathname !== opts.path) return refuse(socket, 404, 'not found');
    const decision = checkAccess(req, { token: opts.token, ...(opts.bindHost ? { bindHost: opts.bindHost } : {}), allowedOrigins: this.config.allowedOrigins, allowedHosts: this.config.allowedHosts });
    if (!decision.ok) {
      // Never log the URL or headers: they may carry the token. Rate-limited: see RefusalLog.
      this.refusals.record(decision.kind, decision.reason, req.socket.remoteAddress);
      return refuse(socket, decision.status, decision.reason);
    }
    (this.wss.options as { maxPayload?: number }).maxPayload = this.config.maxPayloadBytes;
    this.wss.handleUpgrade(req, socket, head, (ws) => this.connected(ws));
  }

  connectLocal(options: LocalClientOptions): LocalConnection {
    if (this.closed) throw new Error('the gateway is closed');
    this.watchMcp();
    this.watchHistory();
    const socket = new LocalSocket(options);
    this.connected(socket as unknown as WebSocket);
    return socket.connection;
  }

  private connected(ws: WebSocket): void {
    const client = new GatewayClient(ws, this.fanout);
    this.fanout.addClient(client);
    ws.on('message', (data, isBinary) => {
      // ws hands text frames over as a Buffer (binaryType "nodebuffer").
      const text = isBinary ? undefined : Array.isArray(data) ? Buffer.concat(data).toString('utf8') : Buffer.isBuffer(data) ? data.toString('utf8') : Buffer.from(data).toString('utf8');
      client.inbox = client.inbox.then(() => this.dispatch(client, text)).catch((err) => this.logger.error('a gateway request failed', err));
    });
    ws.on('pong', () => {
      client.alive = true;
    });
    ws.on('close', () => this.fanout.removeClient(client));
    ws.on('error', (err) => this.logger.debug(`gateway client ${client.id}: ${err.message}`));
    client.send({ type: 'hello', protocol: PROTOCOL_VERSION, server: 'liveagent' });
  }

  private drop(client: GatewayClient, reason: string): void {
    if (client.closed) return;
    this.dropped++;
    this.peakHeld = Math.max(this.peakHeld, client.maxHeldBytes);
    this.logger.warn(`dropping gateway client ${client.id}: ${reason}`);
    this.fanout.removeClient(client);
    client.ws.terminate();
  }

  private restartHeartbeat(): void {
    if (this.heartbeat) clearInterval(this.heartbeat);
    if (this.closed || !this.wss) return;
    this.heartbeat = setInterval(() => {
      for (const c of [...this.fanout.clients]) {
        if (!c.alive) {
          this.drop(c, 'no pong since the last ping');
          continue;
        }
        c.alive = false;
        try {
          c.ws.ping();
        } catch {
          /* closing */
        }
      }
    }, this.config.heartbeatIntervalMs);
    this.heartbeat.unref();
  }

  stats() {
    const clients = [...this.fanout.clients].map((c) => ({ id: c.id, heldBytes: c.heldBytes, maxHeldBytes: c.maxHeldBytes, subscriptions: c.subscriptions.size }));
    return {
      clients,
      dropped: this.dropped,
      peakHeldBytes: Math.max(this.peakHeld, ...clients.map((c) => c.maxHeldBytes)),
      totalHeldBytes: this.fanout.heldBytes(),
      replayBytes: this.fanout.replayBytes(),
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.heartbeat) clearInterval(this.heartbeat);
    if (this.listTimer) clearTimeout(this.listTimer);
    this.refusals.close();
    this.fanout.flushAll(); // the runs' last events (agent_end) go out before the sockets close
    const clients = [...this.fanout.clients];
    await Promise.all(
      clients.map(
        (c) =>
          new Promise<void>((resolve) => {
            const t = setTimeout(() => {
              c.ws.terminate();
              resolve();
            }, 1000);
            c.ws.once('close', () => {
              clearTimeout(t);
              resolve();
            });
            c.ws.close(1001, 'server shutting down');
          }),
      ),
    );
    this.wss?.close();
  }

  registerHandler(type: string, handler: GatewayHandler): Disposable {
    if (!EXTENSION_TYPE.test(type) || BUILTIN_CLIENT_TYPES.has(type)) throw new Error(`cannot register a gateway handler for "${type}": use a namespaced type (<plugin>.<name>) that is not built in`);
    if (this.handlers.has(type)) throw new Error(`a gateway handler for "${type}" is already registered`);
    this.handlers.set(type, handler);
    return { dispose: () => void (this.handlers.get(type) === handler && this.handlers.delete(type)) };
  }

  broadcast(name: string, data: unknown): void {
    if (!this.closed) this.fanout.broadcast({ type: 'extension', name, data });
  }

  registerHttpRoute(method: string, pathPrefix: string, handler: HttpRouteHandler): Disposable {
    return this.routes.register(method, pathPrefix, handler);
  }

  handleHttp(req: IncomingMessage, res: ServerResponse): boolean {
    return this.routes.handle(req, res);
  }

  setRemote(remote: GatewayRemote): Disposable {
    if (this.remote) throw new Error('the gateway already has a remote router');
    this.remote = remote;
    return { dispose: () => void (this.remote === remote && (this.remote = undefined)) };
  }

  publishRemote(e: LifecycleEvent): void {
    if (!this.closed) this.onEvent(e);
  }

  notifyRemote(conversationId: string, message: GatewayMessage): void {
    if (this.closed) return;
    // Another process's notice crosses a process boundary: only a valid server message reaches clients.
    const r = ServerMessageSchema.safeParse(message);
    if (!r.success) return this.logger.warn(`dropped a remote notice for ${conversationId}: ${issueLine(r.error.issues)}`);
    this.fanout.notify(conversationId, message as ServerMessage);
  }

  async handleForwarded(forwarded: GatewayQueueItem): Promise<unknown> {
    const r = ChatQueueSchema.safeParse(forwarded);
    if (!r.success) throw new ReplyError('bad_request', `forwarded chat_queue item: ${issueLine(r.error.issues)}`);
    const item: ChatQueueItem = r.data;
    if (!this.headless) {
      this.headless = new GatewayClient({} as WebSocket, this.fanout);
      this.headless.closed = true;
    }
    const data = await this.chat.handle(this.headless, item);
    return data instanceof LaterReply ? data.result : data;
  }

  /**
   * A chat_queue item when other processes may own its conversation. A client asking for a run is
   * subscribed first, as the local path does before the run's first event.
   */
  private async chatQueueRouted(client: GatewayClient, item: ChatQueueItem): Promise<ChatQueueAnswer> {
    const id = 'conversationId' in item ? item.conversationId : 'conversation_id' in item ? item.conversation_id : undefined;
    const follows = id !== undefined && (item.action === 'send' || item.action === 'edit_resend' || item.action === 'regenerate');
    const followed = follows && client.subscriptions.has(id);
    if (follows && !followed && !client.closed) this.fanout.subscribe(client, id);
    let routed: { data: unknown } | undefined;
    try {
      routed = await this.remote!.route(item);
    } catch (err) {
      if (follows && !followed) this.fanout.unsubscribe(client, id);
      throw err;
    }
    // The owning process built it with its own handleForwarded (typed there); the remote carries it as is.
    if (routed) return routed.data as ReplyMap['chat_queue'];
    if (follows && !followed) this.fanout.unsubscribe(client, id); // the local path subscribes it itself, in its own order
    return this.chat.handle(client, item);
  }

  // ── Requests ────────────────────────────────────────────────────────────────────────────
  private async dispatch(client: GatewayClient, text: string | undefined): Promise<void> {
    if (client.closed) return;
    if (text === undefined) return client.send({ type: 'reply', id: '', ok: false, error: { code: 'bad_request', message: 'frames must be text (JSON)' } });
    const parsed = parseClientMessage(text, this.handlers);
    if (!parsed.ok) return client.send({ type: 'reply', id: parsed.id ?? '', ok: false, error: { code: 'bad_request', message: parsed.error } });
    if (parsed.extension) {
      const em = parsed.message;
      try {
        return this.replyOk(client, em, await this.handlers.get(em.type)!(em));
      } catch (err) {
        return this.replyError(client, em, err);
      }
    }
    const m = parsed.message;
    try {
      const data = await this.handle(client, m);
      // Accepted in order; the reply follows when the slow part ends, without holding up later messages.
      if (data instanceof LaterReply) {
        data.result.then(
          (later) => this.replyOk(client, m, later),
          (err: unknown) => this.replyError(client, m, err),
        );
        return;
      }
      this.replyOk(client, m, data);
    } catch (err) {
      this.replyError(client, m, err);
    }
  }

  private replyOk(client: GatewayClient, m: { type: string; id?: string | undefined }, data: unknown): void {
    if (m.id && !client.closed) client.send(data === undefined ? { type: 'reply', id: m.id, ok: true } : { type: 'reply', id: m.id, ok: true, data });
  }

  private replyError(client: GatewayClient, m: { type: string; id?: string | undefined }, err: unknown): void {
    const code = err instanceof ReplyError ? err.code : typeof (err as { code?: unknown }).code === 'string' ? (err as { code: string }).code : 'internal';
    if (code === 'internal') this.logger.error(`gateway ${m.type} failed`, err);
    if (!client.closed) client.send({ type: 'reply', id: m.id ?? '', ok: false, error: { code, message: (err as Error).message ?? String(err) } });
  }

  /** The reply's data, as ReplyMap declares it for `m.type` (each case checks its own with `satisfies` or its return type). */
  private async handle(client: GatewayClient, m: ClientMessage): Promise<ReplyMap[keyof ReplyMap] | ChatQueueAnswer> {
    switch (m.type) {
      case 'chat_queue':
        return this.remote ? this.chatQueueRouted(client, m.item) : this.chat.handle(client, m.item);
      case 'subscribe':
        return this.subscribe(client, m.conversationId, m.lastSeq, m.limit ?? this.config.snapshotMessages);
      case 'unsubscribe':
        this.fanout.unsubscribe(client, m.conversationId);
        return undefined;
      case 'conversations.list': {
        const items = await this.listConversations(m.search);
        client.send({ type: 'conversations', items });
        return { items } satisfies ReplyMap['conversations.list'];
      }
      case 'conversations.load': {
        const limit = m.limit ?? this.config.snapshotMessages;
        if (m.before !== undefined) return this.loadPage(client, m.conversationId, m.before, limit);
        const snap = await this.takeSnapshot(m.conversationId, limit, (s) => client.send(s));
        return { conversationId: m.conversationId, lastSeq: snap.lastSeq, running: snap.running, hasMore: snap.hasMore } satisfies ReplyMap['conversations.load'];
      }
      case 'conversations.rename': {
        if (!(await this.ctx.runtime.renameConversation(m.conversationId, m.title))) throw new ReplyError('not_found', `unknown conversation "${m.conversationId}"`);
        this.fanout.bumpVersion(m.conversationId);
        this.scheduleListBroadcast();
        return { conversationId: m.conversationId, title: m.title.trim() } satisfies ReplyMap['conversations.rename'];
      }
      case 'conversations.delete':
        return this.deleteConversation(m.conversationId);
      case 'conversations.pin': {
        if (!(await this.history.pin(m.conversationId, m.pinned))) throw new ReplyError('not_found', `unknown conversation "${m.conversationId}"`);
        this.scheduleListBroadcast();
        return { conversationId: m.conversationId, pinned: m.pinned } satisfies ReplyMap['conversations.pin'];
      }
      case 'conversations.usage': {
        const usage = await this.history.usage(m.conversationId);
        if (!usage) throw new ReplyError('not_found', `unknown conversation "${m.conversationId}"`);
        return { conversationId: m.conversationId, ...usage } satisfies ReplyMap['conversations.usage'];
      }
      case 'conversations.export': {
        const page = await this.history.exportPage(m.conversationId, m.before, m.limit ?? MAX_PAGE_MESSAGES);
        if (!page) throw new ReplyError('not_found', `unknown conversation "${m.conversationId}"`);
        return { conversationId: m.conversationId, ...page } satisfies ReplyMap['conversations.export'];
      }
      case 'settings.get': {
        const settings = this.ctx.settings.get() as Record<string, unknown>;
        const warnings = this.ctx.settings.warnings();
        client.send({ type: 'settings', settings, warnings });
        return { settings, warnings } satisfies ReplyMap['settings.get'];
      }
      case 'settings.set':
        return this.setSettings(client, m.settings);
      case 'providers.list':
        return { providers: this.providers() } satisfies ReplyMap['providers.list'];
      case 'mcp.status':
        return { servers: this.mcpServers() } satisfies ReplyMap['mcp.status'];
      case 'mcp.restart': {
        const mcp = this.ctx.service('mcp');
        if (!mcp) throw new ReplyError('unavailable', 'no MCP plugin is loaded');
        try {
          await mcp.restart(m.name);
        } catch (err) {
          throw new ReplyError('not_found', (err as Error).message);
        }
        return { servers: this.mcpServers() } satisfies ReplyMap['mcp.restart'];
      }
    }
  }

  /** Replay from the window when it still covers `lastSeq`; otherwise a snapshot from history. */
  private async subscribe(client: GatewayClient, conversationId: string, lastSeq: number | undefined, limit: number): Promise<ReplyMap['subscribe']> {
    const result = await this.subscribeStream(client, conversationId, lastSeq, limit);
    // A (re)subscribing client learns the messages waiting behind the active run at once, not
    // only at the queue's next change; an empty queue too, as what it holds may have run while
    // it was away (a snapshot does not replay the agent_start that took an item off).
    // The owner's gateway listed them (its chat.queueView), so they are QueuedItems as sent.
    const items = ((await this.remote?.queue?.(conversationId)) as QueuedItem[] | undefined) ?? this.chat.queueView(conversationId);
    if (!client.closed) client.send({ type: 'queue', conversationId, items });
    return result;
  }

  private async subscribeStream(client: GatewayClient, conversationId: string, lastSeq: number | undefined, limit: number): Promise<ReplyMap['subscribe']> {
    if (client.subscriptions.has(conversationId)) return { conversationId, mode: 'live', lastSeq: this.fanout.peek(conversationId)?.lastSeq ?? 0 };
    if (lastSeq !== undefined) {
      const missed = this.fanout.missedSince(conversationId, lastSeq);
      if (missed) {
        client.sendSerialized(missed);
        this.fanout.subscribe(client, conversationId);
        return { conversationId, mode: 'replay', replayed: missed.length, lastSeq: this.fanout.peek(conversationId)!.lastSeq };
      }
      if (this.remote) {
        let replayed: { count: number; lastSeq: number } | undefined;
        const ok = await this.remote.replay(conversationId, lastSeq, (events) => {
          if (client.closed || client.subscriptions.has(conversationId)) return;
          client.sendSerialized(events.map(serializeEvent));
          this.fanout.subscribe(client, conversationId);
          replayed = { count: events.length, lastSeq: events.length ? events[events.length - 1]!.seq : lastSeq };
        });
        if (ok && replayed) return { conversationId, mode: 'replay', replayed: replayed.count, lastSeq: replayed.lastSeq };
      }
    }
    await this.remote?.catchUp(conversationId);
    const snap = await this.takeSnapshot(conversationId, limit, (s) => {
      if (client.closed) return;
      client.send(s);
      this.fanout.subscribe(client, conversationId);
    });
    return { conversationId, mode: 'snapshot', lastSeq: snap.lastSeq };
  }

  /**
   * Read history, then build and deliver the snapshot synchronously with the live state, so no
   * event falls between the snapshot and the subscription. A read that raced a committed round
   * is retaken.
   */
  private async takeSnapshot(conversationId: string, limit: number, deliver: (s: Extract<ServerMessage, { type: 'snapshot' }>) => void) {
    for (let attempt = 0; ; attempt++) {
      const version = this.fanout.version(conversationId);
      const stored = await this.history.get(conversationId, limit);
      if (this.fanout.version(conversationId) !== version && attempt < 3) continue;
      const snap = this.fanout.snapshot(conversationId, stored, this.running(conversationId));
      if (!snap) throw new ReplyError('not_found', `unknown conversation "${conversationId}"`);
      deliver(snap);
      return snap;
    }
  }

  /**
   * Older messages for a client scrolling back: a `page` to the requester only. Live state,
   * subscriptions and the replay window are untouched; a page read across a change is still
   * consistent by ordinal (the client drops it when it no longer matches what it shows).
   */
  private async loadPage(client: GatewayClient, conversationId: string, before: number, limit: number): Promise<ReplyMap['conversations.load']> {
    const page = await this.history.page(conversationId, before, limit);
    if (!page) throw new ReplyError('not_found', `unknown conversation "${conversationId}"`);
    if (!client.closed) client.send({ type: 'page', conversationId, before, ...page });
    return { conversationId, count: page.messages.length, hasMore: page.hasMore, ...(page.firstOrdinal ? { firstOrdinal: page.firstOrdinal } : {}) };
  }

  private async listConversations(search?: string) {
    const items = await this.history.list(search, this.config.conversationListLimit);
    return items.map((i) => ({ ...i, running: this.running(i.id) }));
  }

  private running(conversationId: string): boolean {
    return !!this.ctx.runtime.activeRun(conversationId) || !!this.remote?.running?.(conversationId);
  }

  private scheduleListBroadcast(): void {
    if (this.listTimer || this.closed || this.fanout.clients.size === 0) return;
    this.listTimer = setTimeout(() => {
      this.listTimer = undefined;
      this.listConversations().then(
        (items) => this.fanout.broadcast({ type: 'conversations', items }),
        (err) => this.logger.warn('listing conversations failed', err),
      );
    }, this.config.listBroadcastDelayMs);
    this.listTimer.unref();
  }

  private async deleteConversation(conversationId: string): Promise<ReplyMap['conversations.delete']> {
    // The runtime stops its run, deletes it and tells every plugin (onDeleted below; the
    // AskUserQuestion plugin cancels the conversation's questions itself).
    const seen = this.fanout.seen(conversationId);
    const existed = await this.ctx.runtime.deleteConversation(conversationId);
    // Without the kernel hook (a bare context) the gateway cleans up itself.
    if (!this.ctx.hooks) this.onDeleted(conversationId);
    if (!existed && !seen) throw new ReplyError('not_found', `unknown conversation "${conversationId}"`);
    return { conversationId, deleted: true };
  }

  /** A conversation was deleted (here or by any plugin): forget it and close it in every window. */
  private onDeleted(conversationId: string): void {
    this.chat.forget(conversationId);
    this.history.forget(conversationId);
    this.fanout.dropConversation(conversationId);
    this.scheduleListBroadcast();
  }

  private mcpServers(): McpServerSummary[] {
    const mcp = this.ctx.service('mcp');
    return (mcp?.servers() ?? []).map((s) => ({ name: s.name, state: s.state, ...(s.error ? { error: s.error } : {}), tools: s.tools, transport: s.transport }));
  }

  /** A title stored anywhere in this process (the title plugin, a rename) reaches every client's conversation list. */
  private watchHistory(): void {
    if (this.historyWatched) return;
    this.historyWatched = true;
    this.history
      .watch((conversationId) => {
        if (this.closed) return;
        this.fanout.bumpVersion(conversationId);
        this.scheduleListBroadcast();
      })
      .then(
        (sub) => {
          if (!sub) return;
          if (this.closed) sub.dispose();
          else this.ctx.subscriptions.push(sub);
        },
        (err) => this.logger.warn(`conversation titles are not watched: ${(err as Error).message}`),
      );
  }

  /** Broadcast MCP state changes (coalesced: a restart storm is one message per tick). */
  private watchMcp(): void {
    if (this.mcpWatched) return;
    const mcp = this.ctx.service('mcp');
    if (!mcp) return;
    this.mcpWatched = true;
    let pending = false;
    const sub = mcp.onChange(() => {
      if (pending || this.closed) return;
      pending = true;
      setImmediate(() => {
        pending = false;
        if (!this.closed) this.fanout.broadcast({ type: 'mcp', servers: this.mcpServers() });
      });
    });
    this.ctx.subscriptions.push(sub);
  }

  private providers(): ProviderSummary[] {
    const settings = this.ctx.settings.get();
    return this.ctx.runtime.providers().map((p) => {
      let configured = false;
      try {
        configured = p.isConfigured(settings);
      } catch {
        /* a provider that cannot tell is not configured */
      }
      const known = this.catalogModels(p.id);
      return { id: p.id, displayName: p.displayName, configured, defaultModel: p.defaultModel, models: (p.models ?? []).map((m) => this.modelSummary(m, known)) };
    });
  }

  /** A model with its context window and prices when the catalog has them (never its guesses for unknown models). */
  private modelSummary(m: ModelInfo, known: Map<string, ModelInfo>): ModelSummary {
    const out: ModelSummary = { id: m.id, ...(m.name ? { name: m.name } : {}) };
    // Without a catalog, the provider's own facts still count.
    const facts = known.get(m.id) ?? m;
    if (typeof facts?.contextWindow === 'number') out.contextWindow = facts.contextWindow;
    if (facts?.price && Object.keys(facts.price).length) out.price = { ...facts.price };
    return out;
  }

  private catalogModels(providerId: string): Map<string, ModelInfo> {
    try {
      return new Map((this.ctx.service('modelCatalog')?.models(providerId) ?? []).map((m) => [m.id, m]));
    } catch {
      return new Map(); // a catalog that cannot tell adds nothing
    }
  }

  // ── Settings ────────────────────────────────────────────────────────────────────────────
  /**
   * Shallow-merge top-level sections (`null` removes one). The settings store validates the
   * result against every plugin's schema (MCP's server entries too) and stores nothing when invalid.
   */
  private setSettings(client: GatewayClient, patch: Record<string, unknown>): Promise<ReplyMap['settings.set']> {
    const run = async (): Promise<ReplyMap['settings.set']> => {
      const next: Record<string, unknown> = { ...this.ctx.settings.get() };
      for (const [k, v] of Object.entries(patch)) {
        if (v === null) delete next[k];
        else next[k] = v;
      }
      this.settingsOrigin = client;
      try {
        const saved = await this.ctx.settings.set(next as Settings);
        return { settings: saved as Record<string, unknown>, warnings: this.ctx.settings.warnings() };
      } catch (err) {
        throw new ReplyError('config', (err as Error).message);
      } finally {
        this.settingsOrigin = undefined;
      }
    };
    // One change at a time, so the broadcast knows which client made it.
    const p = this.settingsChain.then(run);
    this.settingsChain = p.catch(() => undefined);
    return p;
  }

  private onSettings(settings: Settings): void {
    const parsed = parseGatewaySettings(settings.gateway);
    if (parsed.ok) {
      const beat = parsed.settings.heartbeatIntervalMs !== this.config.heartbeatIntervalMs;
      this.config = parsed.settings;
      if (beat) this.restartHeartbeat();
    } else this.logger.warn(`ignoring the new gateway settings: ${parsed.error}`);
    this.fanout.broadcast({ type: 'settings', settings: settings as Record<string, unknown>, warnings: this.ctx.settings.warnings() }, this.settingsOrigin);
  }
}
