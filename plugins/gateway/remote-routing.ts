/**
 * The gateway's side of a team of processes (GatewayService.setRemote; plugins/team-fanout): one
 * remote router at most. A chat_queue item is offered to it first, as another process may own the
 * conversation; items and notices that other processes send here arrive through this class. What
 * crosses the process boundary is validated again here, as it never went through a client's parse.
 */
import type { WebSocket } from 'ws';
import type { Disposable, GatewayMessage, GatewayQueueItem, GatewayRemote, Logger } from '../../plugin-api.js';
import { ChatQueueSchema, ServerMessageSchema, type ChatQueueItem, type ReplyMap, type ServerMessage } from '../../lib/gateway-protocol/protocol.js';
import { LaterReply, ReplyError, type ChatQueueAnswer, type ChatRuns } from './chat-runs.js';
import { GatewayClient } from './client.js';
import type { Fanout } from './fanout.js';

/** The first issue of a failed parse, as one line naming the field. */
function issueLine(issues: ReadonlyArray<{ path: PropertyKey[]; message: string }>): string {
  const issue = issues[0];
  return issue ? `${issue.path.map(String).join('.') || 'message'}: ${issue.message}` : 'invalid';
}

export interface RemoteRoutingDeps {
  fanout: Fanout;
  chat: ChatRuns;
  logger: Logger;
}

export class RemoteRouting {
  private router: GatewayRemote | undefined;
  /** Stands in for the requester of a forwarded item: never subscribed, never written to. */
  private headless: GatewayClient | undefined;

  constructor(private readonly d: RemoteRoutingDeps) {}

  /** The remote router, when a plugin set one. */
  get remote(): GatewayRemote | undefined {
    return this.router;
  }

  set(remote: GatewayRemote): Disposable {
    if (this.router) throw new Error('the gateway already has a remote router');
    this.router = remote;
    return { dispose: () => void (this.router === remote && (this.router = undefined)) };
  }

  /** Another process's notice for the subscribers of `conversationId`. */
  notice(conversationId: string, message: GatewayMessage): void {
    // Another process's notice crosses a process boundary: only a valid server message reaches clients.
    const r = ServerMessageSchema.safeParse(message);
    if (!r.success) return this.d.logger.warn(`dropped a remote notice for ${conversationId}: ${issueLine(r.error.issues)}`);
    this.d.fanout.notify(conversationId, message as ServerMessage);
  }

  /** An item another process forwarded because this one owns its conversation. */
  async forwarded(forwarded: GatewayQueueItem): Promise<unknown> {
    const r = ChatQueueSchema.safeParse(forwarded);
    if (!r.success) throw new ReplyError('bad_request', `forwarded chat_queue item: ${issueLine(r.error.issues)}`);
    const item: ChatQueueItem = r.data;
    if (!this.headless) {
      this.headless = new GatewayClient({} as WebSocket, this.d.fanout);
      this.headless.closed = true;
    }
    const data = await this.d.chat.handle(this.headless, item);
    return data instanceof LaterReply ? data.result : data;
  }

  /** A client's chat_queue item: to the owning process when the router takes it, else run here. */
  chatQueue(client: GatewayClient, item: ChatQueueItem): Promise<ChatQueueAnswer> {
    return this.router ? this.routed(this.router, client, item) : this.d.chat.handle(client, item);
  }

  /**
   * A chat_queue item when other processes may own its conversation. A client asking for a run is
   * subscribed first, as the local path does before the run's first event.
   */
  private async routed(router: GatewayRemote, client: GatewayClient, item: ChatQueueItem): Promise<ChatQueueAnswer> {
    const { fanout, chat } = this.d;
    const id = 'conversationId' in item ? item.conversationId : 'conversation_id' in item ? item.conversation_id : undefined;
    const follows = id !== undefined && (item.action === 'send' || item.action === 'edit_resend' || item.action === 'regenerate');
    const followed = follows && client.subscriptions.has(id);
    if (follows && !followed && !client.closed) fanout.subscribe(client, id);
    let routed: { data: unknown } | undefined;
    try {
      routed = await router.route(item);
    } catch (err) {
      if (follows && !followed) fanout.unsubscribe(client, id);
      throw err;
    }
    // The owning process built it with its own handleForwarded (typed there); the remote carries it as is.
    if (routed) return routed.data as ReplyMap['chat_queue'];
    if (follows && !followed) fanout.unsubscribe(client, id); // the local path subscribes it itself, in its own order
    return chat.handle(client, item);
  }
}
