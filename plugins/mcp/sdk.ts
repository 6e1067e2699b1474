/**
 * The MCP SDK, imported on first use: it costs ~200 ms at start-up, which must never sit on the
 * path of a host's boot or a run's first token. Only types are imported statically (erased).
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import type { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { ErrorCode, McpError, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

export interface McpSdk {
  Client: typeof Client;
  StdioClientTransport: typeof StdioClientTransport;
  getDefaultEnvironment: typeof getDefaultEnvironment;
  StreamableHTTPClientTransport: typeof StreamableHTTPClientTransport;
  SSEClientTransport: typeof SSEClientTransport;
  McpError: typeof McpError;
  ErrorCode: typeof ErrorCode;
  ToolListChangedNotificationSchema: typeof ToolListChangedNotificationSchema;
}

export type McpClient = Client;
export type McpTransport = StdioClientTransport | StreamableHTTPClientTransport | SSEClientTransport;

let loading: Promise<McpSdk> | undefined;

export function loadSdk(): Promise<McpSdk> {
  loading ??= (async () => {
    const [client, stdio, http, sse, types] = await Promise.all([
      import('@modelcontextprotocol/sdk/client/index.js'),
      import('@modelcontextprotocol/sdk/client/stdio.js'),
      import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
      import('@modelcontextprotocol/sdk/client/sse.js'),
      import('@modelcontextprotocol/sdk/types.js'),
    ]);
    return {
      Client: client.Client,
      StdioClientTransport: stdio.StdioClientTransport,
      getDefaultEnvironment: stdio.getDefaultEnvironment,
      StreamableHTTPClientTransport: http.StreamableHTTPClientTransport,
      SSEClientTransport: sse.SSEClientTransport,
      McpError: types.McpError,
      ErrorCode: types.ErrorCode,
      ToolListChangedNotificationSchema: types.ToolListChangedNotificationSchema,
    };
  })();
  // A failed import (a broken install) may be retried by a later restart.
  loading.catch(() => (loading = undefined));
  return loading;
}
