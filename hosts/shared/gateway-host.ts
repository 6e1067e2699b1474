/**
 * What the server host (hosts/server/start-server.ts) and the desktop's network gateway
 * (hosts/desktop/network-gateway.ts) do alike, kept here once so their access checks cannot drift:
 * the kernel booted with the builtins and the gateway, and the HTTP server that serves the built
 * WebUI, `/api/*` and the gateway's `/ws` behind the same Host, Origin and token checks.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { PluginModule, Settings } from '../../plugin-api.js';
import { createKernel, type Kernel } from '../../core/kernel.js';
import { resolvePaths } from '../../core/paths.js';
import { CRON_SERVICE, type CronService } from '../../plugins/cron/service.js';
import gatewayPlugin, { GATEWAY_SERVICE, type GatewayHostService as GatewayService } from '../../plugins/gateway/index.js';
import { isHostAllowed } from '../../plugins/gateway/access.js';
import { builtinPlugins } from '../builtins.js';
import { plain, serveStatic } from '../server/static-files.js';

export interface GatewayKernelOptions {
  /** `$LIVEAGENT_HOME` (default: the environment, else ~/.liveagent). */
  home?: string;
  /** Replace the builtin plugins (default: hosts/builtins.ts). The gateway is added when missing. */
  builtins?: PluginModule[];
  /** More plugins (tests, embedders). */
  extraPlugins?: PluginModule[];
  /** Use these settings instead of settings.json (still validated). */
  settings?: Settings;
  /** Load third-party plugins from the home and settings (default true). */
  thirdParty?: boolean;
}

function isGatewayModule(m: PluginModule): boolean {
  return m === gatewayPlugin || (typeof m === 'object' && m !== null && m.name === 'gateway');
}

/** A kernel with the gateway loaded; when it failed to load, the kernel is shut down and this throws why. */
export async function bootGatewayKernel(options: GatewayKernelOptions): Promise<{ kernel: Kernel; gateway: GatewayService }> {
  const builtins = [...(options.builtins ?? (await builtinPlugins()))];
  if (!builtins.some(isGatewayModule)) builtins.push(gatewayPlugin);
  const kernel = await createKernel({
    home: resolvePaths(options.home).home,
    builtins,
    plugins: options.extraPlugins ?? [],
    ...(options.settings ? { settings: options.settings } : {}),
    ...(options.thirdParty !== undefined ? { thirdParty: options.thirdParty } : {}),
  });
  const gateway = kernel.services.get<GatewayService>(GATEWAY_SERVICE);
  if (!gateway) {
    await kernel.shutdown();
    throw new Error(`the gateway plugin is not available: ${kernel.loaded.find((p) => p.name === 'gateway')?.error?.message ?? 'it is not loaded'}`);
  }
  return { kernel, gateway };
}

/** Start the scheduled tasks; a failure to start them is one warning line and stops nothing else. */
export async function startScheduledTasks(kernel: Kernel, warn: (line: string) => void): Promise<void> {
  await kernel.services
    .get<CronService>(CRON_SERVICE)
    ?.start()
    .catch((err: Error) => warn(`liveagent: scheduled tasks are not running: ${err.message}`));
}

export function isWildcardHost(host: string): boolean {
  return host === '0.0.0.0' || host === '::' || host === '[::]';
}

/** A host as a URL names it: an IPv6 address in brackets. */
export function bracketHost(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

export interface GatewayHttpOptions {
  gateway: GatewayService;
  token: string;
  /** The address to bind; the Host check allows its names. */
  host: string;
  /** 0 picks a free one. */
  port: number;
  /** The built WebUI. */
  webuiDir: string;
  /** The live settings (their `gateway.allowedHosts` is read on every request). */
  settings: () => Settings;
  /** Said after "port N on H is already in use" (e.g. what to try instead). */
  inUseHint?: string;
}

export interface GatewayHttp {
  server: http.Server;
  /** The port it listens on. */
  port: number;
  /**
   * Stop accepting, then end every connection. Without `drain` the upgraded sockets are cut at
   * once (the desktop turning its gateway off); with it, `drain` closes them (the server host's
   * kernel.shutdown: the runs' last events reach the clients, their sockets close with a reason).
   */
  close(drain?: () => Promise<void>): Promise<void>;
}

/** The HTTP server with the gateway attached on `/ws`, listening; on a failed listen it is closed and this throws. */
export async function listenGatewayHttp(options: GatewayHttpOptions): Promise<GatewayHttp> {
  const { gateway, token, host, port, webuiDir } = options;
  const srv = http.createServer((req, res) => {
    const allowedHosts = (options.settings().gateway as { allowedHosts?: string[] } | undefined)?.allowedHosts ?? [];
    // The same DNS-rebinding guard as the socket: a page on a foreign name gets nothing here.
    if (!isHostAllowed(req.headers.host, host, allowedHosts)) return plain(res, 403, 'Host not allowed');
    const pathname = new URL(req.url ?? '/', 'http://x').pathname;
    if (pathname === '/api/health') {
      res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': 'no-store' });
      return void res.end(JSON.stringify({ ok: true }));
    }
    // Plugins' routes (uploads), behind the gateway's Origin and token checks.
    if (pathname.startsWith('/api/')) {
      if (gateway.handleHttp(req, res)) return;
      return plain(res, 404, 'not found');
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('Allow', 'GET, HEAD');
      return plain(res, 405, 'method not allowed');
    }
    serveStatic(req, res, webuiDir).catch(() => {
      if (!res.headersSent) plain(res, 500, 'internal error');
      else res.destroy();
    });
  });
  // Upgraded sockets leave the HTTP server's bookkeeping (closeAllConnections misses them): kept here so close() ends them.
  const sockets = new Set<Duplex>();
  srv.on('upgrade', (_req, socket: Duplex) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await gateway.attach(srv, { token, path: '/ws', bindHost: host });
  try {
    await new Promise<void>((resolve, reject) => {
      srv.once('error', (err: NodeJS.ErrnoException) =>
        reject(err.code === 'EADDRINUSE' ? new Error(`port ${port} on ${host} is already in use${options.inUseHint ? ` ${options.inUseHint}` : ''}`) : err),
      );
      srv.listen(port, host, () => resolve());
    });
  } catch (err) {
    srv.close();
    throw err;
  }
  return {
    server: srv,
    port: (srv.address() as AddressInfo).port,
    close: async (drain) => {
      const closed = new Promise<void>((resolve) => srv.close(() => resolve()));
      if (drain) await drain();
      else for (const s of sockets) s.destroy();
      sockets.clear();
      srv.closeAllConnections();
      await closed;
    },
  };
}
