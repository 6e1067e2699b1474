/**
 * The desktop's gateway for browsers elsewhere: off by default; when on, an HTTP server serving
 * the built WebUI, `/api/*` (uploads) and `/ws`, with exactly the server host's checks (Host,
 * Origin, token: the gateway does them). Turning it off closes the listener and every socket
 * it accepted; the in-process renderer is untouched.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import type { Duplex } from 'node:stream';
import type { Settings } from '../../plugin-api.js';
import { isHostAllowed, loadOrCreateToken } from '../../plugins/gateway/access.js';
import type { GatewayService } from '../../plugins/gateway/index.js';
import { plain, serveStatic } from '../server/static-files.js';
import type { DesktopGatewayInfo } from './contract.js';

export interface NetworkGatewayOptions {
  gateway: GatewayService;
  home: string;
  webuiDir: string;
  settings: () => Settings;
}

/** The address a browser on another machine uses: the first non-internal IPv4 for a wildcard bind. */
export function reachableHost(bindHost: string): string {
  if (bindHost !== '0.0.0.0' && bindHost !== '::' && bindHost !== '[::]') return bindHost.includes(':') && !bindHost.startsWith('[') ? `[${bindHost}]` : bindHost;
  for (const list of Object.values(os.networkInterfaces())) {
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  return '127.0.0.1';
}

export class NetworkGateway {
  private server: http.Server | undefined;
  private readonly sockets = new Set<Duplex>();
  private host = '0.0.0.0';
  private port = 0;
  private error: string | undefined;

  constructor(private readonly options: NetworkGatewayOptions) {}

  get running(): boolean {
    return !!this.server;
  }

  info(enabled: boolean, host: string, port: number): DesktopGatewayInfo {
    const base: DesktopGatewayInfo = { enabled, running: this.running, host, port: this.running ? this.port : port };
    if (this.error) base.error = this.error;
    if (!this.running) return base;
    const token = loadOrCreateToken(this.options.home);
    return { ...base, token, url: `http://${reachableHost(this.host)}:${this.port}/#token=${token}` };
  }

  async start(host: string, port: number): Promise<void> {
    await this.stop();
    this.error = undefined;
    const { gateway, home, webuiDir } = this.options;
    const token = loadOrCreateToken(home);
    const srv = http.createServer((req, res) => {
      const allowedHosts = (this.options.settings().gateway as { allowedHosts?: string[] } | undefined)?.allowedHosts ?? [];
      if (!isHostAllowed(req.headers.host, host, allowedHosts)) return plain(res, 403, 'Host not allowed');
      const pathname = new URL(req.url ?? '/', 'http://x').pathname;
      if (pathname === '/api/health') {
        res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': 'no-store' });
        return void res.end(JSON.stringify({ ok: true }));
      }
      if (pathname.startsWith('/api/')) {
        if (gateway.handleHttp(req, res)) return;
        return plain(res, 404, 'not found');
      }
      if (req.method !== 'GET' && req.method !== 'HEAD') return plain(res, 405, 'method not allowed');
      serveStatic(req, res, webuiDir).catch(() => (res.headersSent ? res.destroy() : plain(res, 500, 'internal error')));
    });
    // Upgraded sockets leave the HTTP server's bookkeeping: kept here so turning off closes them.
    srv.on('upgrade', (_req, socket: Duplex) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
    await gateway.attach(srv, { token, path: '/ws', bindHost: host });
    try {
      await new Promise<void>((resolve, reject) => {
        srv.once('error', (err: NodeJS.ErrnoException) => reject(err.code === 'EADDRINUSE' ? new Error(`port ${port} on ${host} is already in use`) : err));
        srv.listen(port, host, () => resolve());
      });
    } catch (err) {
      this.error = (err as Error).message;
      srv.close();
      throw err;
    }
    this.server = srv;
    this.host = host;
    this.port = (srv.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    const srv = this.server;
    if (!srv) return;
    this.server = undefined;
    const closed = new Promise<void>((resolve) => srv.close(() => resolve()));
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
    srv.closeAllConnections();
    await closed;
  }
}
