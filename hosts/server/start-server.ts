/**
 * The headless server host: boots the kernel with the builtins and the gateway, serves the built
 * WebUI, attaches the gateway on `/ws` and prints the URL with the token in its hash (a hash is
 * never sent to a server, so the token stays out of access logs and Referer headers).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { PluginModule, Settings } from '../../plugin-api.js';
import { createKernel, type Kernel } from '../../core/kernel.js';
import { resolvePaths } from '../../core/paths.js';
import { CRON_SERVICE, type CronService } from '../../plugins/cron/service.js';
import gatewayPlugin, { GATEWAY_SERVICE, loadOrCreateToken, type GatewayService } from '../../plugins/gateway/index.js';
import { isHostAllowed } from '../../plugins/gateway/access.js';
import { builtinPlugins } from '../builtins.js';
import { packageRoot, plain, serveStatic } from './static-files.js';

export interface StartServerOptions {
  /** Address to listen on (default 127.0.0.1). */
  host?: string;
  /** Port (default 7420; 0 picks a free one). */
  port?: number;
  /** `$LIVEAGENT_HOME` (default: the environment, else ~/.liveagent). */
  home?: string;
  /** Replace the builtin plugins (default: hosts/builtins.ts). The gateway is added when missing. */
  builtins?: PluginModule[];
  /** More plugins (tests, embedders). */
  extraPlugins?: PluginModule[];
  /** Use these settings instead of settings.json (still validated). */
  settings?: Settings;
  /** Where the start line goes (default stdout). */
  log?: (line: string) => void;
  /** Load third-party plugins from the home and settings (default true). */
  thirdParty?: boolean;
  /** The built WebUI (default `<package>/webui/dist`). */
  webuiDir?: string;
}

export interface RunningServer {
  /** `http://host:port` (no trailing slash, no token). */
  url: string;
  port: number;
  token: string;
  kernel: Kernel;
  /** Stop accepting, finish the runs' writes (kernel.shutdown), close every socket. */
  close(): Promise<void>;
}

function isGatewayModule(m: PluginModule): boolean {
  return m === gatewayPlugin || (typeof m === 'object' && m !== null && m.name === 'gateway');
}

function urlHost(host: string): string {
  if (host === '0.0.0.0' || host === '::' || host === '[::]') return '127.0.0.1';
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

export async function startServer(options: StartServerOptions = {}): Promise<RunningServer> {
  const host = options.host ?? '127.0.0.1';
  const port = options.port ?? 7420;
  const log = options.log ?? ((line: string) => void process.stdout.write(`${line}\n`));
  const builtins = [...(options.builtins ?? (await builtinPlugins()))];
  if (!builtins.some(isGatewayModule)) builtins.push(gatewayPlugin);
  const kernel = await createKernel({
    home: resolvePaths(options.home).home,
    builtins,
    plugins: options.extraPlugins ?? [],
    ...(options.settings ? { settings: options.settings } : {}),
    ...(options.thirdParty !== undefined ? { thirdParty: options.thirdParty } : {}),
  });
  let server: http.Server | undefined;
  try {
    const gateway = kernel.services.get<GatewayService>(GATEWAY_SERVICE);
    if (!gateway) {
      const why = kernel.loaded.find((p) => p.name === 'gateway')?.error?.message ?? 'it is not loaded';
      throw new Error(`the gateway plugin is not available: ${why}`);
    }
    const token = loadOrCreateToken(kernel.paths.home);
    const root = path.resolve(options.webuiDir ?? path.join(packageRoot(), 'webui', 'dist'));
    const srv = http.createServer((req, res) => {
      const allowedHosts = (kernel.settings.get().gateway as { allowedHosts?: string[] } | undefined)?.allowedHosts ?? [];
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
      serveStatic(req, res, root).catch(() => {
        if (!res.headersSent) plain(res, 500, 'internal error');
        else res.destroy();
      });
    });
    server = srv;
    await gateway.attach(srv, { token, path: '/ws', bindHost: host });
    await new Promise<void>((resolve, reject) => {
      srv.once('error', (err: NodeJS.ErrnoException) =>
        reject(err.code === 'EADDRINUSE' ? new Error(`port ${port} on ${host} is already in use (try --port 0)`) : err),
      );
      srv.listen(port, host, () => resolve());
    });
    const actual = (srv.address() as AddressInfo).port;
    const url = `http://${urlHost(host)}:${actual}`;
    log(`LiveAgent is running at ${url}/#token=${token}`);
    // A newcomer's first start: say where to go before the first message fails.
    const current = kernel.settings.get();
    if (!kernel.runtime.providers().some((p) => p.isConfigured(current))) {
      log('No model provider is set up yet: open that address to connect one (Claude, OpenAI, Gemini or a custom endpoint), or set ANTHROPIC_API_KEY, OPENAI_API_KEY or GEMINI_API_KEY and start again.');
    }
    // The server host runs the scheduled tasks (the chat CLI never does); a failure to start them stops nothing else.
    await kernel.services
      .get<CronService>(CRON_SERVICE)
      ?.start()
      .catch((err: Error) => process.stderr.write(`liveagent: scheduled tasks are not running: ${err.message}\n`));
    let closing: Promise<void> | undefined;
    return {
      url,
      port: actual,
      token,
      kernel,
      close: () =>
        (closing ??= (async () => {
          const closed = new Promise<void>((resolve) => srv.close(() => resolve()));
          await kernel.shutdown(); // stops runs, lets plugins finish writes, closes the gateway's sockets
          srv.closeAllConnections();
          await closed;
        })()),
    };
  } catch (err) {
    server?.close();
    await kernel.shutdown();
    throw err;
  }
}
