/**
 * The `mcp` service: what other plugins and hosts (settings UI, gateway) read about the
 * configured MCP servers. Get it with `ctx.service<McpService>(MCP_SERVICE_KEY)`.
 */
import type { Disposable } from '../../plugin-api.js';

/** The key the MCP plugin provides its service under. */
export const MCP_SERVICE_KEY = 'mcp';

/**
 * `connecting`: first connection in progress. `connected`: its tools are registered.
 * `restarting`: lost (or manually restarted); tools withdrawn, reconnecting with backoff.
 * `failed`: a bad settings entry, or it gave up after `mcp.maxRestarts`; `error` says why.
 * `stopped`: the host shut down.
 */
export type McpServerState = 'connecting' | 'connected' | 'restarting' | 'failed' | 'stopped';

/** `stdio`: a child process. `http`: Streamable HTTP. `sse`: the older HTTP+SSE transport. */
export type McpTransportKind = 'stdio' | 'http' | 'sse';

/** A snapshot of one configured server. */
export interface McpServerInfo {
  /** The key under `mcpServers` in settings. */
  name: string;
  state: McpServerState;
  /** Why it failed, or why it is restarting (the last error). */
  error?: string;
  /** The registered (model-facing) names of its tools, e.g. `mcp__everything__echo`. */
  tools: string[];
  /** For HTTP servers, `http` until a fallback to SSE succeeds. */
  transport: McpTransportKind;
  /** The child's pid while a stdio server is running. */
  pid?: number;
  /** Restarts since boot (automatic and manual). */
  restarts: number;
}

export interface McpService {
  /** Every configured server, in settings order. */
  servers(): McpServerInfo[];
  /** Called (with a fresh snapshot) whenever any server's state, tools or pid change. */
  onChange(listener: (servers: McpServerInfo[]) => void): Disposable;
  /**
   * Reconnect a server now, re-reading its settings entry and resetting its restart budget.
   * Resolves once that attempt settles (connected, or restarting/failed with an error).
   * Throws when no server of that name is configured.
   */
  restart(name: string): Promise<McpServerInfo>;
  /**
   * Check an `mcpServers` value without applying it: the problems, each naming the server and
   * field (empty when valid). Hosts call it before saving settings.
   */
  validate(mcpServers: unknown): string[];
}
