/**
 * The desktop's gateway for browsers elsewhere: off by default; when on, an HTTP server serving
 * the built WebUI, `/api/*` (uploads) and `/ws`: the server host's own (hosts/shared/gateway-host.ts),
 * so exactly its checks (Host, Origin, token). Turning it off closes the listener and every socket
 * it accepted; the in-process renderer is untouched.
 */
import os from 'node:os';
import type { Settings } from '../../plugin-api.js';
import { loadOrCreateToken } from '../../plugins/gateway/access.js';
import type { GatewayHostService as GatewayService } from '../../plugins/gateway/index.js';
import { bracketHost, isWildcardHost, listenGatewayHttp, type GatewayHttp } from '../shared/gateway-host.js';
import type { DesktopGatewayInfo } from './contract.js';

export interface NetworkGatewayOptions {
  gateway: GatewayService;
  home: string;
  webuiDir: string;
  settings: () => Settings;
}

/** The address a browser on another machine uses: the first non-internal IPv4 for a wildcard bind. */
export function reachableHost(bindHost: string): string {
  if (!isWildcardHost(bindHost)) return bracketHost(bindHost);
  for (const list of Object.values(os.networkInterfaces())) {
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  return '127.0.0.1';
}

export class NetworkGateway {
  private web: GatewayHttp | undefined;
  private host = '0.0.0.0';
  private port = 0;
  private error: string | undefined;

  constructor(private readonly options: NetworkGatewayOptions) {}

  get running(): boolean {
    return !!this.web;
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
    const { gateway, home, webuiDir, settings } = this.options;
    try {
      this.web = await listenGatewayHttp({ gateway, token: loadOrCreateToken(home), host, port, webuiDir, settings });
    } catch (err) {
      this.error = (err as Error).message;
      throw err;
    }
    this.host = host;
    this.port = this.web.port;
  }

  /** Closes the listener and cuts every socket it accepted. */
  async stop(): Promise<void> {
    const web = this.web;
    if (!web) return;
    this.web = undefined;
    await web.close();
  }
}
