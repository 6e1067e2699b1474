/**
 * The gateway plugin: WebSocket access to the runtime for the WebUI and remote clients. It
 * provides the `gateway` service; a host (hosts/server) attaches it to its HTTP server with the
 * token it generated. Protocol: lib/gateway-protocol/protocol.ts, documented in docs/gateway-protocol.md.
 */
import { definePlugin } from '../../core/define-plugin.js';
import { Gateway } from './gateway.js';
import { GatewaySettingsSchema } from './settings.js';

export type { AttachOptions, GatewayHostService } from './gateway.js';
export type { LocalClientOptions, LocalConnection } from './local-client.js';
export { loadOrCreateToken } from './access.js';

/** The key the gateway service is provided under. */
export const GATEWAY_SERVICE = 'gateway';

// The plugin-facing part of the service (GatewayService) and its ServiceMap key are in the contract
// (plugin-api.d.ts): any plugin gets `ctx.service('gateway')` typed; hosts use GatewayHostService.

const gatewayPlugin = definePlugin({
  name: 'gateway',
  settingsKey: 'gateway',
  settingsSchema: GatewaySettingsSchema,
  apply(ctx) {
    const gateway = new Gateway(ctx);
    ctx.provide(GATEWAY_SERVICE, gateway);
    ctx.hooks.shutdown.tap(() => gateway.close());
  },
});

export default gatewayPlugin;
