/**
 * The conversation list every client shows. Anything that changes an entry (a run starting or
 * ending, a rename, a title stored by another plugin, a delete) schedules one broadcast of the
 * whole list, coalesced over `listBroadcastDelayMs`, so a burst of changes is one message.
 */
import type { Disposable, Logger } from '../../plugin-api.js';
import type { ConversationSummary } from '../../lib/gateway-protocol/protocol.js';
import type { Fanout } from './fanout.js';
import type { GatewayHistory } from './history.js';
import type { GatewaySettings } from './settings.js';

export interface ConversationListDeps {
  fanout: Fanout;
  history: GatewayHistory;
  logger: Logger;
  config(): GatewaySettings;
  closed(): boolean;
  /** Whether a run of the conversation is active here or in another process. */
  running(conversationId: string): boolean;
  /** Where a subscription lives until the plugin stops (the context's subscriptions). */
  keep(sub: Disposable): void;
  /** A conversation the history reports deleted (by another process too): forget it here. */
  deleted(conversationId: string): void;
}

export class ConversationList {
  private timer: NodeJS.Timeout | undefined;
  private watched = false;

  constructor(private readonly d: ConversationListDeps) {}

  async list(search?: string): Promise<ConversationSummary[]> {
    const items = await this.d.history.list(search, this.d.config().conversationListLimit);
    return items.map((i) => ({ ...i, running: this.d.running(i.id) }));
  }

  scheduleBroadcast(): void {
    if (this.timer || this.d.closed() || this.d.fanout.clients.size === 0) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.list().then(
        (items) => this.d.fanout.broadcast({ type: 'conversations', items }),
        (err) => this.d.logger.warn('listing conversations failed', err),
      );
    }, this.d.config().listBroadcastDelayMs);
    this.timer.unref();
  }

  /** A title, pin or delete stored anywhere (the title plugin, a rename; another process of a team) reaches every client's conversation list. */
  watchHistory(): void {
    if (this.watched) return;
    this.watched = true;
    this.d.history
      .watch((conversationId, kind) => {
        if (this.d.closed()) return;
        if (kind === 'deleted') return this.d.deleted(conversationId);
        this.d.fanout.bumpVersion(conversationId);
        this.scheduleBroadcast();
      })
      .then(
        (sub) => {
          if (!sub) return;
          if (this.d.closed()) sub.dispose();
          else this.d.keep(sub);
        },
        (err) => this.d.logger.warn(`conversation titles are not watched: ${(err as Error).message}`),
      );
  }

  /** The gateway is closing: no broadcast is pending any more. */
  close(): void {
    if (this.timer) clearTimeout(this.timer);
  }
}
