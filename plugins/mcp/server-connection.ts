/**
 * One configured MCP server: connect (stdio child, or Streamable HTTP falling back to SSE),
 * register its tools, keep them in step with `notifications/tools/list_changed`, and when the
 * connection is lost withdraw them and reconnect with exponential backoff.
 *
 * Every connection attempt gets a generation number; callbacks of an older attempt (a late
 * `onclose`, a slow `tools/list`) see a newer generation and do nothing. That is what keeps a
 * crash, a manual restart and a shutdown arriving in any order from leaving stray children or
 * stale tools behind.
 */
import type { Disposable, JsonObject, Logger, SchemaLike, ToolContext, ToolDefinition, ToolResult } from '../../plugin-api.js';
import type { McpOptions, ServerConfig } from './config.js';
import { mapCallResult } from './content.js';
import { toolNames } from './names.js';
import { terminate, waitForExit } from './process.js';
import { capResult, formatBytes } from './result-limits.js';
import { loadSdk, type McpClient, type McpSdk, type McpTransport } from './sdk.js';
import type { McpServerInfo, McpServerState, McpTransportKind } from './service.js';

/** What a connection needs from the plugin around it. */
export interface ConnectionHost {
  logger: Logger;
  options(): McpOptions;
  /** Register a tool; disposing the result withdraws it. */
  registerTool(tool: ToolDefinition): Disposable;
  /** Tool names registered by anything except `own`. */
  takenNames(own: ReadonlySet<string>): ReadonlySet<string>;
  /** Something visible in {@link McpServerInfo} changed. */
  changed(): void;
}

/** A tool as `tools/list` describes it (the fields we read). */
interface McpToolDef {
  name: string;
  title?: string;
  description?: string;
  inputSchema?: unknown;
}

/** MCP servers validate their own arguments against their JSON Schema; we only require an object. */
const ANY_OBJECT: SchemaLike<JsonObject> = {
  safeParse(value) {
    if (value && typeof value === 'object' && !Array.isArray(value)) return { success: true, data: value as JsonObject };
    return { success: false, error: { issues: [{ path: [], message: 'expected an object of arguments' }] } };
  },
};

const STDERR_TAIL_CHARS = 2000;

/** What the SDK's stdio ReadBuffer throws (through `onerror`) before it closes the transport. */
const OVERSIZED_REPLY = /ReadBuffer exceeded maximum size of (\d+) bytes/;

function message(err: unknown): string {
  let text = err instanceof Error ? err.message : String(err);
  // fetch hides the useful part ("connect ECONNREFUSED ...") in its cause.
  const cause = err instanceof Error && err.cause instanceof Error ? err.cause.message : undefined;
  if (cause && !text.includes(cause)) text += ` (${cause})`;
  return text.replace(/\s*\n\s*/g, ' ');
}

function normalizeSchema(schema: unknown): JsonObject {
  const out = schema && typeof schema === 'object' && !Array.isArray(schema) ? (JSON.parse(JSON.stringify(schema)) as JsonObject) : {};
  // The draft marker means nothing to a model, and some providers reject unknown top-level keys.
  delete out.$schema;
  out.type ??= 'object';
  if (out.type === 'object' && out.properties === undefined) out.properties = {};
  return out;
}

export class ServerConnection {
  private state: McpServerState;
  private error: string | undefined;
  private transportKind: McpTransportKind;
  private pid: number | undefined;
  private restarts = 0;
  /** Consecutive failed attempts; reset once a connection stays up for `restartMaxDelayMs`. */
  private attempt = 0;
  private gen = 0;
  private stopped = false;
  private preferSse = false;
  private sdk: McpSdk | undefined;
  private client: McpClient | undefined;
  private readonly transports = new Set<McpTransport>();
  private readonly closing = new Set<Promise<void>>();
  private registrations: Disposable[] = [];
  private names: string[] = [];
  private retryTimer: NodeJS.Timeout | undefined;
  private stableTimer: NodeJS.Timeout | undefined;
  private refreshing: Promise<void> = Promise.resolve();
  private probing = false;
  private stderrTail = '';
  /** Set when the connection of generation `gen` was reset by a reply over the read buffer. */
  private oversized: { gen: number; limit: number } | undefined;

  constructor(
    readonly name: string,
    private readonly segment: string,
    private config: ServerConfig | undefined,
    configError: string | undefined,
    private readonly host: ConnectionHost,
  ) {
    this.state = config ? 'connecting' : 'failed';
    this.error = configError;
    this.transportKind = this.kindOf(config);
  }

  info(): McpServerInfo {
    return {
      name: this.name,
      state: this.state,
      ...(this.error ? { error: this.error } : {}),
      tools: [...this.names],
      transport: this.transportKind,
      ...(this.pid ? { pid: this.pid } : {}),
      restarts: this.restarts,
    };
  }

  get currentConfig(): ServerConfig | undefined {
    return this.config;
  }

  get lastError(): string | undefined {
    return this.error;
  }

  /** Begin connecting (in the background: the promise settles when the first attempt does). */
  start(): Promise<void> {
    if (!this.config || this.stopped || this.gen > 0) return Promise.resolve();
    return this.connect();
  }

  /** Drop the current connection and connect again with `config`, with a fresh restart budget. */
  async restart(config: ServerConfig | undefined, configError?: string): Promise<void> {
    if (this.stopped) return;
    this.gen++;
    this.clearTimers();
    this.withdraw();
    this.client = undefined;
    this.pid = undefined;
    this.restarts++;
    this.state = 'restarting';
    this.error = undefined;
    this.host.changed();
    // Wait for the old child to go, so two copies of a server never run side by side.
    await this.closeAll();
    if (this.stopped) return;
    this.config = config;
    this.attempt = 0;
    this.preferSse = false;
    this.transportKind = this.kindOf(config);
    if (!config) {
      this.state = 'failed';
      this.error = configError ?? 'no valid settings entry';
      this.host.changed();
      return;
    }
    await this.connect();
  }

  /** Withdraw the tools and close the transport; resolves once stdio children have exited. */
  async stop(): Promise<void> {
    if (!this.stopped) {
      this.stopped = true;
      this.gen++;
      this.clearTimers();
      this.withdraw();
      this.client = undefined;
      this.pid = undefined;
      this.state = 'stopped';
      this.host.changed();
    }
    await this.closeAll();
  }

  private kindOf(config: ServerConfig | undefined): McpTransportKind {
    return config?.kind === 'http' ? (config.sseOnly || this.preferSse ? 'sse' : 'http') : 'stdio';
  }

  private clearTimers(): void {
    clearTimeout(this.retryTimer);
    clearTimeout(this.stableTimer);
    this.retryTimer = this.stableTimer = undefined;
  }

  private async connect(): Promise<void> {
    const gen = ++this.gen;
    const config = this.config!;
    const opts = this.host.options();
    try {
      this.sdk ??= await loadSdk();
      if (gen !== this.gen) return;
      await this.open(this.sdk, config, gen, opts.connectTimeoutMs);
      if (gen !== this.gen) return;
      await this.refreshTools(gen, opts.connectTimeoutMs, true);
    } catch (err) {
      this.lost(gen, `could not connect: ${message(err)}`);
    }
  }

  private async open(sdk: McpSdk, config: ServerConfig, gen: number, timeoutMs: number): Promise<void> {
    if (config.kind === 'stdio') {
      const transport = new sdk.StdioClientTransport({
        command: config.command,
        args: config.args,
        // The SDK's safe subset of our environment (PATH, HOME, ...), not API keys, plus the entry's own.
        env: { ...sdk.getDefaultEnvironment(), ...config.env },
        ...(config.cwd ? { cwd: config.cwd } : {}),
        stderr: 'pipe',
        maxBufferSize: this.host.options().maxReplyBytes,
      });
      this.stderrTail = '';
      // Reading stderr also keeps a chatty server from blocking on a full pipe.
      transport.stderr?.on('data', (chunk: Buffer) => {
        const text = chunk.toString();
        this.stderrTail = (this.stderrTail + text).slice(-STDERR_TAIL_CHARS);
        this.host.logger.debug(`[${this.name} stderr] ${text.trimEnd()}`);
      });
      await this.connectClient(sdk, transport, gen, timeoutMs);
      return;
    }
    const url = new URL(config.url);
    const requestInit = config.headers ? { headers: config.headers } : undefined;
    let first: unknown;
    if (!config.sseOnly && !this.preferSse) {
      try {
        this.transportKind = 'http';
        await this.connectClient(sdk, new sdk.StreamableHTTPClientTransport(url, requestInit ? { requestInit } : undefined), gen, timeoutMs);
        return;
      } catch (err) {
        if (gen !== this.gen) throw err;
        first = err;
        this.host.logger.debug(`MCP server "${this.name}": Streamable HTTP failed (${message(err)}), trying SSE`);
      }
    }
    try {
      this.transportKind = 'sse';
      await this.connectClient(sdk, new sdk.SSEClientTransport(url, requestInit ? { requestInit } : undefined), gen, timeoutMs);
      if (first) this.preferSse = true;
    } catch (err) {
      if (!first) throw err;
      this.transportKind = 'http';
      throw new Error(`Streamable HTTP: ${message(first)}; SSE: ${message(err)}`);
    }
  }

  private async connectClient(sdk: McpSdk, transport: McpTransport, gen: number, timeoutMs: number): Promise<void> {
    this.transports.add(transport);
    const client = new sdk.Client({ name: 'liveagent', version: '0.1.0' }, { capabilities: {} });
    let live = false;
    // A failed connect closes the client too; only a connection that was up counts as lost.
    client.onclose = () => live && this.lost(gen, this.closedReason(gen));
    client.onerror = (err) => {
      const over = OVERSIZED_REPLY.exec(message(err));
      if (over && gen === this.gen) {
        // The SDK closes the transport right after this; `lost` and the failed calls then say
        // why, instead of "the server process exited".
        this.oversized = { gen, limit: Number(over[1]) };
        return;
      }
      this.host.logger.debug(`MCP server "${this.name}" transport error: ${message(err)}`);
      if (live && this.config?.kind === 'http') void this.probe(gen);
    };
    // Set before connecting: servers may announce new tools right after initialization.
    client.setNotificationHandler(sdk.ToolListChangedNotificationSchema, async () => {
      this.refreshTools(gen, this.host.options().connectTimeoutMs).catch((err) => {
        if (gen === this.gen) this.host.logger.warn(`MCP server "${this.name}": refreshing tools failed: ${message(err)}`);
      });
    });
    try {
      await client.connect(transport, { timeout: timeoutMs });
    } catch (err) {
      this.closeTransport(transport);
      throw err;
    }
    if (gen !== this.gen) {
      this.closeTransport(transport);
      return;
    }
    live = true;
    this.client = client;
    if (transport instanceof sdk.StdioClientTransport) this.pid = transport.pid ?? undefined;
  }

  private oversizedText(): string {
    const limit = this.oversized?.limit ?? this.host.options().maxReplyBytes;
    return `sent a reply larger than ${formatBytes(limit)} (mcp.maxReplyBytes) and the connection was reset`;
  }

  private closedReason(gen: number): string {
    if (this.oversized?.gen === gen) return this.oversizedText();
    if (this.config?.kind !== 'stdio') return 'connection closed';
    const last = this.stderrTail.trim().split('\n').at(-1)?.trim();
    return `the server process exited${last ? ` (last stderr line: ${last.slice(0, 300)})` : ''}`;
  }

  /** HTTP has no process to watch: after a transport error, a failed ping means the server is gone. */
  private async probe(gen: number): Promise<void> {
    const client = this.client;
    if (this.probing || gen !== this.gen || !client) return;
    this.probing = true;
    try {
      await client.ping({ timeout: this.host.options().connectTimeoutMs });
    } catch (err) {
      this.lost(gen, `server unreachable: ${message(err)}`);
    } finally {
      this.probing = false;
    }
  }

  /** The connection of generation `gen` is gone: withdraw its tools and schedule a restart. */
  private lost(gen: number, reason: string): void {
    if (this.stopped || gen !== this.gen) return;
    this.gen++;
    this.clearTimers();
    this.withdraw();
    this.client = undefined;
    this.pid = undefined;
    void this.closeAll();
    const opts = this.host.options();
    if (this.attempt >= opts.maxRestarts) {
      this.state = 'failed';
      this.error = this.attempt ? `${reason} (gave up after ${this.attempt} restart${this.attempt === 1 ? '' : 's'})` : reason;
      this.host.logger.error(`MCP server "${this.name}" failed: ${this.error}`);
      this.host.changed();
      return;
    }
    const delay = Math.min(opts.restartBaseDelayMs * 2 ** this.attempt, opts.restartMaxDelayMs);
    this.attempt++;
    this.restarts++;
    this.state = 'restarting';
    this.error = reason;
    this.host.logger.warn(`MCP server "${this.name}": ${reason}; restarting in ${delay} ms (attempt ${this.attempt} of ${opts.maxRestarts})`);
    this.host.changed();
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      void this.connect();
    }, delay);
    this.retryTimer.unref();
  }

  private closeTransport(transport: McpTransport): void {
    if (!this.transports.delete(transport)) return;
    const pid = 'pid' in transport ? (transport.pid ?? undefined) : undefined;
    // The SDK ends stdin and waits a fixed 2 s before SIGTERM (then SIGKILL); a server still busy
    // with a call would hold shutdown that long, so SIGTERM it after our configurable grace.
    const grace = pid ? setTimeout(() => terminate(pid), this.host.options().shutdownGraceMs) : undefined;
    const done: Promise<void> = transport
      .close()
      .catch(() => undefined)
      .then(() => (pid ? waitForExit(pid, 2000) : undefined))
      .finally(() => {
        clearTimeout(grace);
        this.closing.delete(done);
      });
    this.closing.add(done);
  }

  private async closeAll(): Promise<void> {
    for (const t of [...this.transports]) this.closeTransport(t);
    await Promise.all([...this.closing]);
  }

  /**
   * List the tools (all pages) and install them. Serialized, so a late answer never overwrites a
   * newer one. The `initial` listing also marks the server connected, in the same tick as its
   * tools appear; a change notification before that is left to the initial listing.
   */
  private refreshTools(gen: number, timeoutMs: number, initial = false): Promise<void> {
    const next = this.refreshing.then(async () => {
      const client = this.client;
      if (gen !== this.gen || !client || (!initial && this.state !== 'connected')) return;
      const tools: McpToolDef[] = [];
      let cursor: string | undefined;
      do {
        const page = await client.listTools(cursor ? { cursor } : undefined, { timeout: timeoutMs });
        tools.push(...page.tools);
        cursor = page.nextCursor;
      } while (cursor);
      if (gen !== this.gen) return;
      if (!initial) return this.install(tools);
      this.state = 'connected';
      this.error = undefined;
      const stableAfter = this.host.options().restartMaxDelayMs;
      this.stableTimer = setTimeout(() => (this.attempt = 0), stableAfter);
      this.stableTimer.unref();
      this.install(tools);
      this.host.logger.info(`MCP server "${this.name}" connected (${this.transportKind}, ${this.names.length} tools)`);
    });
    this.refreshing = next.catch(() => undefined);
    return next;
  }

  /** Replace the registered tools in one synchronous step, so no request sees a half-updated set. */
  private install(tools: McpToolDef[]): void {
    const names = toolNames(this.segment, this.name, tools.map((t) => t.name), this.host.takenNames(new Set(this.names)));
    this.withdraw();
    const registered = new Set<string>();
    for (const tool of tools) {
      const name = names.get(tool.name)!;
      if (registered.has(name)) continue; // the server listed the same tool twice
      try {
        this.registrations.push(this.host.registerTool(this.definition(name, tool)));
        registered.add(name);
      } catch (err) {
        this.host.logger.error(`MCP server "${this.name}": tool "${tool.name}" was not registered: ${message(err)}`);
      }
    }
    this.names = [...registered];
    this.host.changed();
  }

  private withdraw(): void {
    for (const d of this.registrations) {
      try {
        d.dispose();
      } catch {
        /* keep withdrawing the rest */
      }
    }
    this.registrations = [];
    this.names = [];
  }

  private definition(name: string, tool: McpToolDef): ToolDefinition<JsonObject> {
    return {
      name,
      description: tool.description?.trim() || tool.title?.trim() || `Tool "${tool.name}" of the MCP server "${this.name}".`,
      parameters: ANY_OBJECT,
      jsonSchema: normalizeSchema(tool.inputSchema),
      modes: ['tools', 'agent-dev'],
      concurrency: 'parallel',
      execute: (args, ctx) => this.call(tool.name, args, ctx),
    };
  }

  private async call(tool: string, args: JsonObject, ctx: ToolContext): Promise<ToolResult> {
    const client = this.client;
    const sdk = this.sdk;
    const fail = (text: string): ToolResult => ({ content: [{ type: 'text', text }], isError: true, details: { mcp: { server: this.name, tool } } });
    if (this.state !== 'connected' || !client || !sdk) {
      return fail(`MCP server "${this.name}" is ${this.state}${this.error ? ` (${this.error})` : ''}; its tool "${tool}" cannot run now.`);
    }
    const gen = this.gen;
    const timeout = this.host.options().callTimeoutMs;
    try {
      const result = await client.callTool({ name: tool, arguments: args }, undefined, {
        signal: ctx.signal,
        timeout,
        maxTotalTimeout: timeout,
        onprogress: (p) =>
          ctx.update({ details: { progress: p.progress, ...(p.total !== undefined ? { total: p.total } : {}), ...(p.message ? { message: p.message } : {}) } }),
      });
      const opts = this.host.options();
      return capResult(mapCallResult(result, this.name, tool), opts);
    } catch (err) {
      // A stopped run: let the kernel report the cancellation (the SDK already told the server).
      if (ctx.signal.aborted) throw err;
      if (this.oversized?.gen === gen) {
        return fail(`MCP server "${this.name}" ${this.oversizedText()}; the call to "${tool}" has no result. Ask for less output at once (a narrower query, a smaller page), or raise mcp.maxReplyBytes.`);
      }
      if (err instanceof sdk.McpError && err.code === sdk.ErrorCode.RequestTimeout) {
        return fail(`MCP tool "${tool}" on server "${this.name}" timed out after ${timeout} ms.`);
      }
      if (!(err instanceof sdk.McpError) && this.config?.kind === 'http') void this.probe(gen);
      return fail(`MCP tool "${tool}" on server "${this.name}" failed: ${message(err)}`);
    }
  }
}
