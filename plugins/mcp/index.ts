/**
 * MCP: tools from the servers under `mcpServers` in settings.json (the Claude Desktop / Claude
 * Code shape), as `mcp__<server>__<tool>` in the tool modes. Servers connect in the background
 * after boot, never on the path of a first token; the SDK itself is imported only then.
 * See README.md beside this file for the settings.
 */
import { definePlugin } from '../../core/define-plugin.js';
import { McpServersSettingsSchema, McpServersWriteSchema } from './config.js';
import { McpManager } from './manager.js';
import { MCP_SERVICE_KEY, type McpService } from './service.js';

// Declared here, so a consumer gets `ctx.service('mcp')` typed without importing this plugin.
declare module '../../plugin-api.js' {
  interface ServiceMap {
    mcp: McpService;
  }
}

export type { McpServerInfo, McpServerState, McpService, McpTransportKind } from './service.js';
export { MCP_SERVICE_KEY } from './service.js';

export default definePlugin({
  name: 'mcp',
  settingsKey: 'mcpServers',
  // Only the outer shape: entries are validated one by one, so a bad one fails only its server.
  settingsSchema: McpServersSettingsSchema,
  // A save that changes the servers is refused for a bad entry, before it is stored.
  settingsWriteSchema: McpServersWriteSchema,
  apply(ctx) {
    const manager = new McpManager(ctx, ctx.config);
    ctx.provide(MCP_SERVICE_KEY, manager.service());
    // Not awaited: the ready hook must not wait for child processes or the network.
    ctx.hooks.ready.tap(() => manager.start());
    ctx.hooks.shutdown.tap(() => manager.stop());
    // A run that starts while servers are still connecting for the first time (the CLI starts
    // one right at boot) waits for them, bounded, so their tools are offered from round one.
    ctx.sessionHooks.tools.tap(async (tools, rc) => {
      if (rc.mode === 'text' || !manager.list().some((s) => s.state === 'connecting')) return tools;
      await manager.whenInitialConnectionsSettle(manager.currentOptions().firstRequestWaitMs);
      const have = new Set(tools.map((t) => t.name));
      const added = ctx.runtime.tools().filter((t) => t.name.startsWith('mcp__') && !have.has(t.name) && (t.modes ?? ['tools', 'agent-dev']).includes(rc.mode));
      return [...tools, ...added];
    });
    // Unloading without a shutdown (a host reloading plugins) still stops the children.
    ctx.subscriptions.push({ dispose: () => void manager.stop() });
  },
});
