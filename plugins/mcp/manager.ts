/**
 * The set of configured MCP servers and the `mcp` service over them. Servers start in the
 * background once the host is ready; a bad settings entry fails only its own server.
 */
import type { Disposable, PluginContext } from '../../plugin-api.js';
import { DEFAULT_OPTIONS, parseOptions, parseServerEntry, type McpOptions } from './config.js';
import { serverSegments } from './names.js';
import { ServerConnection, type ConnectionHost } from './server-connection.js';
import type { McpServerInfo, McpService } from './service.js';

export class McpManager {
  private readonly servers = new Map<string, ServerConnection>();
  private readonly listeners = new Set<(servers: McpServerInfo[]) => void>();
  private options: McpOptions = DEFAULT_OPTIONS;
  private optionsError: string | undefined;
  private started = false;
  private stopping: Promise<void> | undefined;
  private readonly host: ConnectionHost;
  /** The `mcpServers` entries the servers were last built from. */
  private entries: Record<string, unknown>;
  /** Servers removed from settings, still shutting down. */
  private readonly retiring = new Set<Promise<void>>();

  constructor(private readonly ctx: PluginContext, entries: Record<string, unknown>) {
    this.readOptions(ctx.settings.get().mcp);
    ctx.subscriptions.push(
      ctx.settings.onChange((s) => {
        this.readOptions(s.mcp);
        this.sync(s.mcpServers);
      }),
    );
    this.entries = entries;
    const host: ConnectionHost = (this.host = {
      logger: ctx.logger,
      options: () => this.options,
      // Withdrawn registrations leave ctx.subscriptions by themselves (the kernel tracks them).
      registerTool: (tool) => ctx.registerTool(tool),
      takenNames: (own) => new Set(ctx.runtime.tools().map((t) => t.name).filter((n) => !own.has(n))),
      changed: () => this.notify(),
    });
    const segments = serverSegments(Object.keys(entries));
    for (const [name, raw] of Object.entries(entries)) {
      const parsed = parseServerEntry(name, raw);
      if (!parsed.ok) ctx.reportFailure(parsed.error);
      this.servers.set(name, new ServerConnection(name, segments.get(name)!, parsed.ok ? parsed.config : undefined, parsed.ok ? undefined : parsed.error, host));
    }
  }

  /** The service object other plugins get: only the public surface. */
  service(): McpService {
    return {
      servers: () => this.list(),
      onChange: (listener) => this.onChange(listener),
      restart: (name) => this.restart(name),
      validate: (raw) => {
        if (raw === undefined || raw === null) return [];
        if (typeof raw !== 'object' || Array.isArray(raw)) return ['mcpServers: must be an object of servers by name'];
        return Object.entries(raw as Record<string, unknown>).flatMap(([name, entry]) => {
          const r = parseServerEntry(name, entry);
          return r.ok ? [] : [r.error];
        });
      },
    };
  }

  /** Connect every valid server, without waiting for any of them. */
  start(): void {
    if (this.started || this.stopping) return;
    this.started = true;
    for (const s of this.servers.values()) void s.start();
  }

  /**
   * Resolves once no server is still making its first connection (connected, failed or
   * restarting all count as settled), or after `timeoutMs`.
   */
  whenInitialConnectionsSettle(timeoutMs: number): Promise<void> {
    const busy = () => this.list().some((s) => s.state === 'connecting');
    if (!busy() || timeoutMs <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        sub.dispose();
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      const sub = this.onChange(() => {
        if (!busy()) done();
      });
    });
  }

  currentOptions(): McpOptions {
    return this.options;
  }

  list(): McpServerInfo[] {
    return [...this.servers.values()].map((s) => s.info());
  }

  onChange(listener: (servers: McpServerInfo[]) => void): Disposable {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }

  async restart(name: string): Promise<McpServerInfo> {
    const server = this.servers.get(name);
    if (!server) throw new Error(`no MCP server named "${name}" is configured (known: ${[...this.servers.keys()].join(', ') || 'none'})`);
    const raw = (this.ctx.settings.get().mcpServers as Record<string, unknown> | undefined)?.[name];
    // Re-read the entry so a fixed setting takes effect; a removed one keeps the boot-time entry.
    const parsed = raw === undefined ? undefined : parseServerEntry(name, raw);
    if (parsed && !parsed.ok) this.ctx.reportFailure(parsed.error);
    if (parsed) await server.restart(parsed.ok ? parsed.config : undefined, parsed.ok ? undefined : parsed.error);
    else await server.restart(server.currentConfig, server.lastError);
    return server.info();
  }

  /** Stop every server; resolves once their children are gone. Safe to call twice. */
  stop(): Promise<void> {
    this.stopping ??= Promise.all([...[...this.servers.values()].map((s) => s.stop()), ...this.retiring]).then(() => undefined);
    return this.stopping;
  }

  /**
   * `mcpServers` changed (a save here, an edit of the file, or another process of a team with
   * shared settings): a server added is connected, one removed is stopped, one whose entry
   * changed is restarted with it. Unchanged entries are left alone.
   */
  private sync(raw: unknown): void {
    if (this.stopping) return;
    const next = raw && typeof raw === 'object' && !Array.isArray(raw) ? (raw as Record<string, unknown>) : {};
    const before = this.entries;
    this.entries = next;
    let changed = false;
    for (const [name, server] of [...this.servers]) {
      if (Object.hasOwn(next, name)) continue;
      changed = true;
      this.servers.delete(name);
      const done = server.stop().finally(() => this.retiring.delete(done));
      this.retiring.add(done);
    }
    const segments = serverSegments(Object.keys(next));
    for (const [name, entry] of Object.entries(next)) {
      const known = this.servers.get(name);
      if (known && JSON.stringify(before[name]) === JSON.stringify(entry)) continue;
      changed = true;
      const parsed = parseServerEntry(name, entry);
      if (!parsed.ok) this.ctx.reportFailure(parsed.error);
      if (known) {
        void known.restart(parsed.ok ? parsed.config : undefined, parsed.ok ? undefined : parsed.error);
        continue;
      }
      const server = new ServerConnection(name, segments.get(name)!, parsed.ok ? parsed.config : undefined, parsed.ok ? undefined : parsed.error, this.host);
      this.servers.set(name, server);
      if (this.started) void server.start();
    }
    if (changed) this.notify();
  }

  private readOptions(raw: unknown): void {
    const { options, error } = parseOptions(raw);
    if (error && error !== this.optionsError) this.ctx.logger.error(error);
    this.options = options;
    this.optionsError = error;
  }

  private notify(): void {
    if (!this.listeners.size) return;
    const snapshot = this.list();
    for (const l of this.listeners) {
      try {
        l(snapshot);
      } catch (err) {
        this.ctx.logger.error(`an mcp service listener failed: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
  }
}
