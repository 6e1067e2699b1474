/**
 * Type test: the `gateway` service is typed from the contract alone. A plugin answers its own
 * messages and routes, and a remote router (what plugins/team-fanout implements) fits
 * GatewayRemote, all through `ctx.service('gateway')` with no import of the gateway plugin.
 */
import type { GatewayMessage, GatewayQueueItem, GatewayRemote, LifecycleEvent, Plugin } from 'liveagent/plugin-api';

class Router implements GatewayRemote {
  async route(item: GatewayQueueItem): Promise<{ data: unknown } | undefined> {
    return item.action === 'stop' ? { data: { stopped: true } } : undefined;
  }
  async catchUp(_conversationId: string): Promise<void> {}
  async replay(_conversationId: string, _lastSeq: number, deliver: (events: LifecycleEvent[]) => void): Promise<boolean> {
    deliver([]);
    return true;
  }
  notified(_conversationId: string, message: GatewayMessage): void {
    void message.type;
  }
}

export const gatewayUser: Plugin = {
  name: 'gateway-user',
  apply(ctx) {
    ctx.hooks.ready.tap(() => {
      const gateway = ctx.service('gateway');
      if (!gateway) return;
      ctx.subscriptions.push(gateway.registerHandler('weather.now', (m: GatewayMessage) => ({ asked: m.type, id: m.id ?? null })));
      ctx.subscriptions.push(gateway.registerHttpRoute('GET', '/api/weather', (_req, _res, url) => void url.pathname));
      gateway.broadcast('weather.changed', { city: 'Atlantis' });
      ctx.subscriptions.push(gateway.setRemote(new Router()));
      void gateway.handleForwarded({ action: 'stop', conversationId: 'c1' });
    });
  },
};
