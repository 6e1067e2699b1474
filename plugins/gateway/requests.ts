/**
 * Client messages, one at a time per client: parsed with the protocol's zod schemas (a plugin's
 * own types by its registered handler), answered, and replied to as `{ ok, data }` or
 * `{ ok: false, error: { code, message } }`. The built-in types are handled here; chat_queue
 * items go to the runs (through the remote router when there is one) and subscriptions to
 * subscriptions.ts.
 */
import type { PluginContext, Logger, Settings } from '../../plugin-api.js';
import { MAX_PAGE_MESSAGES, parseClientMessage, type ClientMessage, type ExtensionMessage, type ReplyMap } from '../../lib/gateway-protocol/protocol.js';
import { LaterReply, ReplyError, type ChatQueueAnswer } from './chat-runs.js';
import type { GatewayClient } from './client.js';
import type { ConversationList } from './conversation-list.js';
import type { Fanout } from './fanout.js';
import type { GatewayHistory } from './history.js';
import type { RemoteRouting } from './remote-routing.js';
import type { GatewaySettings } from './settings.js';
import type { Subscriptions } from './subscriptions.js';
import { mcpServerSummaries, providerSummaries } from './summaries.js';

/** A plugin's handler for its own client message type (see GatewayService.registerHandler). */
export type GatewayHandler = (message: ExtensionMessage) => unknown;

export interface RequestDeps {
  ctx: Pick<PluginContext, 'runtime' | 'settings' | 'service'> & Partial<Pick<PluginContext, 'hooks'>>;
  logger: Logger;
  config(): GatewaySettings;
  /** Plugins' handlers (and the gateway's own extension types), by message type. */
  handlers: ReadonlyMap<string, GatewayHandler>;
  fanout: Fanout;
  history: GatewayHistory;
  routing: RemoteRouting;
  subscriptions: Subscriptions;
  conversations: ConversationList;
  /** Forget a deleted conversation and close it in every window. */
  deleted(conversationId: string): void;
}

export class Requests {
  private settingsChain: Promise<unknown> = Promise.resolve();
  private origin: GatewayClient | undefined;

  constructor(private readonly d: RequestDeps) {}

  /** The client whose settings.set is being stored (its own change is not broadcast back to it). */
  get settingsOrigin(): GatewayClient | undefined {
    return this.origin;
  }

  async dispatch(client: GatewayClient, text: string | undefined): Promise<void> {
    if (client.closed) return;
    if (text === undefined) return client.send({ type: 'reply', id: '', ok: false, error: { code: 'bad_request', message: 'frames must be text (JSON)' } });
    const parsed = parseClientMessage(text, this.d.handlers);
    if (!parsed.ok) return client.send({ type: 'reply', id: parsed.id ?? '', ok: false, error: { code: 'bad_request', message: parsed.error } });
    if (parsed.extension) {
      const em = parsed.message;
      try {
        return this.replyOk(client, em, await this.d.handlers.get(em.type)!(em));
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
    if (code === 'internal') this.d.logger.error(`gateway ${m.type} failed`, err);
    if (!client.closed) client.send({ type: 'reply', id: m.id ?? '', ok: false, error: { code, message: (err as Error).message ?? String(err) } });
  }

  /** The reply's data, as ReplyMap declares it for `m.type` (each case checks its own with `satisfies` or its return type). */
  private async handle(client: GatewayClient, m: ClientMessage): Promise<ReplyMap[keyof ReplyMap] | ChatQueueAnswer> {
    const { ctx, fanout, history, conversations } = this.d;
    switch (m.type) {
      case 'chat_queue':
        return this.d.routing.chatQueue(client, m.item);
      case 'subscribe':
        return this.d.subscriptions.subscribe(client, m.conversationId, m.lastSeq, m.limit ?? this.d.config().snapshotMessages);
      case 'unsubscribe':
        fanout.unsubscribe(client, m.conversationId);
        return undefined;
      case 'conversations.list': {
        const items = await conversations.list(m.search);
        client.send({ type: 'conversations', items });
        return { items } satisfies ReplyMap['conversations.list'];
      }
      case 'conversations.load': {
        const limit = m.limit ?? this.d.config().snapshotMessages;
        if (m.before !== undefined) return this.d.subscriptions.loadPage(client, m.conversationId, m.before, limit);
        const snap = await this.d.subscriptions.takeSnapshot(m.conversationId, limit, (s) => client.send(s));
        return { conversationId: m.conversationId, lastSeq: snap.lastSeq, running: snap.running, hasMore: snap.hasMore } satisfies ReplyMap['conversations.load'];
      }
      case 'conversations.rename': {
        if (!(await ctx.runtime.renameConversation(m.conversationId, m.title))) throw new ReplyError('not_found', `unknown conversation "${m.conversationId}"`);
        fanout.bumpVersion(m.conversationId);
        conversations.scheduleBroadcast();
        return { conversationId: m.conversationId, title: m.title.trim() } satisfies ReplyMap['conversations.rename'];
      }
      case 'conversations.delete':
        return this.deleteConversation(m.conversationId);
      case 'conversations.pin': {
        if (!(await history.pin(m.conversationId, m.pinned))) throw new ReplyError('not_found', `unknown conversation "${m.conversationId}"`);
        conversations.scheduleBroadcast();
        return { conversationId: m.conversationId, pinned: m.pinned } satisfies ReplyMap['conversations.pin'];
      }
      case 'conversations.usage': {
        const usage = await history.usage(m.conversationId);
        if (!usage) throw new ReplyError('not_found', `unknown conversation "${m.conversationId}"`);
        return { conversationId: m.conversationId, ...usage } satisfies ReplyMap['conversations.usage'];
      }
      case 'conversations.export': {
        const page = await history.exportPage(m.conversationId, m.before, m.limit ?? MAX_PAGE_MESSAGES);
        if (!page) throw new ReplyError('not_found', `unknown conversation "${m.conversationId}"`);
        return { conversationId: m.conversationId, ...page } satisfies ReplyMap['conversations.export'];
      }
      case 'settings.get': {
        const settings = ctx.settings.get() as Record<string, unknown>;
        const warnings = ctx.settings.warnings();
        client.send({ type: 'settings', settings, warnings });
        return { settings, warnings } satisfies ReplyMap['settings.get'];
      }
      case 'settings.set':
        return this.setSettings(client, m.settings);
      case 'providers.list':
        return { providers: providerSummaries(ctx) } satisfies ReplyMap['providers.list'];
      case 'mcp.status':
        return { servers: mcpServerSummaries(ctx) } satisfies ReplyMap['mcp.status'];
      case 'mcp.restart': {
        const mcp = ctx.service('mcp');
        if (!mcp) throw new ReplyError('unavailable', 'no MCP plugin is loaded');
        try {
          await mcp.restart(m.name);
        } catch (err) {
          throw new ReplyError('not_found', (err as Error).message);
        }
        return { servers: mcpServerSummaries(ctx) } satisfies ReplyMap['mcp.restart'];
      }
    }
  }

  private async deleteConversation(conversationId: string): Promise<ReplyMap['conversations.delete']> {
    // The runtime stops its run, deletes it and tells every plugin (the gateway's conversationDeleted
    // tap; the AskUserQuestion plugin cancels the conversation's questions itself).
    const seen = this.d.fanout.seen(conversationId);
    const existed = await this.d.ctx.runtime.deleteConversation(conversationId);
    // Without the kernel hook (a bare context) the gateway cleans up itself.
    if (!this.d.ctx.hooks) this.d.deleted(conversationId);
    if (!existed && !seen) throw new ReplyError('not_found', `unknown conversation "${conversationId}"`);
    return { conversationId, deleted: true };
  }

  /**
   * Shallow-merge top-level sections (`null` removes one). The settings store validates the
   * result against every plugin's schema (MCP's server entries too) and stores nothing when invalid.
   */
  private setSettings(client: GatewayClient, patch: Record<string, unknown>): Promise<ReplyMap['settings.set']> {
    const { settings } = this.d.ctx;
    const run = async (): Promise<ReplyMap['settings.set']> => {
      const next: Record<string, unknown> = { ...settings.get() };
      for (const [k, v] of Object.entries(patch)) {
        if (v === null) delete next[k];
        else next[k] = v;
      }
      this.origin = client;
      try {
        const saved = await settings.set(next as Settings);
        return { settings: saved as Record<string, unknown>, warnings: settings.warnings() };
      } catch (err) {
        throw new ReplyError('config', (err as Error).message);
      } finally {
        this.origin = undefined;
      }
    };
    // One change at a time, so the broadcast knows which client made it.
    const p = this.settingsChain.then(run);
    this.settingsChain = p.catch(() => undefined);
    return p;
  }
}
