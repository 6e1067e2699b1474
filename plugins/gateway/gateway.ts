/**
 * The gateway: WebSocket access for the WebUI and remote clients. The host attaches it to its
 * HTTP server; every upgrade is checked (Host, Origin, token) before it happens. Client messages
 * are validated with the protocol's zod schemas and handled one at a time per client
 * (requests.ts); events go out through the fan-out path (fanout.ts). This class owns the sockets
 * and wires the parts: subscriptions.ts, conversation-list.ts, remote-routing.ts, chat-runs.ts.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { WebSocket, WebSocketServer } from 'ws';
import type { Disposable, GatewayMessage, GatewayQueueItem, GatewayRemote, GatewayService, LifecycleEvent, Logger, PluginContext, Settings } from '../../plugin-api.js';
import { APP_PROTOCOL, DEFAULT_REFUSAL_LOG_INTERVAL_MS, RefusalLog, TOKEN_PROTOCOL_PREFIX, checkAccess, refuse } from './access.js';
import { ChatRuns } from './chat-runs.js';
import { GatewayClient } from './client.js';
import { ConversationList } from './conversation-list.js';
import { LocalSocket, type LocalClientOptions, type LocalConnection } from './local-client.js';
import { Fanout } from './fanout.js';
import { GatewayHistory } from './history.js';
import { HttpRoutes, type HttpRouteHandler } from './http-routes.js';
import { BUILTIN_CLIENT_TYPES, EXTENSION_TYPE, PROTOCOL_VERSION } from '../../lib/gateway-protocol/protocol.js';
import { providerTestHandler } from './provider-test.js';
import { RemoteRouting } from './remote-routing.js';
import { Requests, type GatewayHandler } from './requests.js';
import { truncatePreviewHandler } from './resend.js';
import { Subscriptions } from './subscriptions.js';
import { mcpServerSummaries } from './summaries.js';
import { resolveWorkdir, workdirCheckHandler } from './workdir.js';
import { parseGatewaySettings, type GatewaySettings } from './settings.js';

export type { GatewayHandler } from './requests.js';

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

type GatewayContext = Pick<PluginContext, 'runtime' | 'settings' | 'logger' | 'service' | 'subscriptions'> & Partial<Pick<PluginContext, 'paths' | 'hooks' | 'sessionHooks'>>;

export class Gateway implements GatewayHostService {
  private config: GatewaySettings;
  private readonly fanout: Fanout;
  private readonly history: GatewayHistory;
  private readonly chat: ChatRuns;
  private readonly routing: RemoteRouting;
  private readonly subscriptions: Subscriptions;
  private readonly conversations: ConversationList;
  private readonly requests: Requests;
  private readonly logger: Logger;
  private wss: WebSocketServer | undefined;
  private options: AttachOptions | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private dropped = 0;
  /** Most bytes ever outstanding for one client, dropped ones included. */
  private peakHeld = 0;
  private closed = false;
  private mcpWatched = false;
  private readonly refusals: RefusalLog;
  private readonly handlers = new Map<string, GatewayHandler>();
  private readonly routes: HttpRoutes;

  constructor(private readonly ctx: GatewayContext) {
    this.logger = ctx.logger;
    this.refusals = new RefusalLog((line) => this.logger.warn(line), () => this.options?.refusalLogIntervalMs ?? DEFAULT_REFUSAL_LOG_INTERVAL_MS);
    const parsed = parseGatewaySettings(ctx.settings.get().gateway);
    if (!parsed.ok) throw new Error(parsed.error);
    this.config = parsed.settings;
    const config = () => this.config;
    const running = (conversationId: string) => this.running(conversationId);
    this.fanout = new Fanout({ settings: config, onDrop: (c, reason) => this.drop(c, reason) });
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
        this.routing.remote?.notified?.(id, m);
      },
      seen: (id) => this.fanout.seen(id),
      service: (key) => ctx.service(key),
      ...(ctx.paths ? { workdir: (requested: string | undefined) => resolveWorkdir(requested, ctx.paths!.home) } : {}),
    });
    this.routing = new RemoteRouting({ fanout: this.fanout, chat: this.chat, logger: this.logger });
    this.subscriptions = new Subscriptions({ fanout: this.fanout, history: this.history, chat: this.chat, remote: () => this.routing.remote, running });
    this.conversations = new ConversationList({
      fanout: this.fanout,
      history: this.history,
      logger: this.logger,
      config,
      closed: () => this.closed,
      running,
      keep: (sub) => ctx.subscriptions.push(sub),
      deleted: (conversationId) => this.onDeleted(conversationId),
    });
    this.requests = new Requests({
      ctx,
      logger: this.logger,
      config,
      handlers: this.handlers,
      fanout: this.fanout,
      history: this.history,
      routing: this.routing,
      subscriptions: this.subscriptions,
      conversations: this.conversations,
      deleted: (conversationId) => this.onDeleted(conversationId),
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
    if (e.type === 'agent_start' || e.type === 'agent_end' || (e.type === 'compaction' && e.payload.phase === 'end')) this.conversations.scheduleBroadcast();
  }

  // ── Sockets ─────────────────────────────────────────────────────────────────────────────
  async attach(server: Server, options: AttachOptions): Promise<void> {
    await this.ensureServer(options);
    this.watchMcp();
    this.conversations.watchHistory();
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
    this.conversations.watchHistory();
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
      client.inbox = client.inbox.then(() => this.requests.dispatch(client, text)).catch((err) => this.logger.error('a gateway request failed', err));
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
    this.conversations.close();
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

  // ── Remote (a team of processes; remote-routing.ts) ────────────────────────────────────
  setRemote(remote: GatewayRemote): Disposable {
    return this.routing.set(remote);
  }

  publishRemote(e: LifecycleEvent): void {
    if (!this.closed) this.onEvent(e);
  }

  notifyRemote(conversationId: string, message: GatewayMessage): void {
    if (!this.closed) this.routing.notice(conversationId, message);
  }

  handleForwarded(forwarded: GatewayQueueItem): Promise<unknown> {
    return this.routing.forwarded(forwarded);
  }

  // ── Conversation state ──────────────────────────────────────────────────────────────────
  private running(conversationId: string): boolean {
    return !!this.ctx.runtime.activeRun(conversationId) || !!this.routing.remote?.running?.(conversationId);
  }

  /** A conversation was deleted (here or by any plugin): forget it and close it in every window. */
  private onDeleted(conversationId: string): void {
    this.chat.forget(conversationId);
    this.history.forget(conversationId);
    this.fanout.dropConversation(conversationId);
    this.conversations.scheduleBroadcast();
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
        if (!this.closed) this.fanout.broadcast({ type: 'mcp', servers: mcpServerSummaries(this.ctx) });
      });
    });
    this.ctx.subscriptions.push(sub);
  }

  private onSettings(settings: Settings): void {
    const parsed = parseGatewaySettings(settings.gateway);
    if (parsed.ok) {
      const beat = parsed.settings.heartbeatIntervalMs !== this.config.heartbeatIntervalMs;
      this.config = parsed.settings;
      if (beat) this.restartHeartbeat();
    } else this.logger.warn(`ignoring the new gateway settings: ${parsed.error}`);
    // The client that made the change has its settings.set reply: the others learn it here.
    this.fanout.broadcast({ type: 'settings', settings: settings as Record<string, unknown>, warnings: this.ctx.settings.warnings() }, this.requests.settingsOrigin);
  }
}
