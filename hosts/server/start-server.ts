/**
 * The headless server host: boots the kernel with the builtins and the gateway, serves the built
 * WebUI, attaches the gateway on `/ws` and prints the URL with the token in its hash (a hash is
 * never sent to a server, so the token stays out of access logs and Referer headers).
 */
import path from 'node:path';
import type { Kernel } from '../../core/kernel.js';
import { loadOrCreateToken } from '../../plugins/gateway/index.js';
import { bootGatewayKernel, bracketHost, isWildcardHost, listenGatewayHttp, startScheduledTasks, type GatewayHttp, type GatewayKernelOptions } from '../shared/gateway-host.js';
import { packageRoot } from './static-files.js';

export interface StartServerOptions extends GatewayKernelOptions {
  /** Address to listen on (default 127.0.0.1). */
  host?: string;
  /** Port (default 7420; 0 picks a free one). */
  port?: number;
  /** Where the start line goes (default stdout). */
  log?: (line: string) => void;
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

function urlHost(host: string): string {
  return isWildcardHost(host) ? '127.0.0.1' : bracketHost(host);
}

export async function startServer(options: StartServerOptions = {}): Promise<RunningServer> {
  const host = options.host ?? '127.0.0.1';
  const port = options.port ?? 7420;
  const log = options.log ?? ((line: string) => void process.stdout.write(`${line}\n`));
  const { kernel, gateway } = await bootGatewayKernel(options);
  let web: GatewayHttp | undefined;
  try {
    const token = loadOrCreateToken(kernel.paths.home);
    const webuiDir = path.resolve(options.webuiDir ?? path.join(packageRoot(), 'webui', 'dist'));
    web = await listenGatewayHttp({ gateway, token, host, port, webuiDir, settings: () => kernel.settings.get(), inUseHint: '(try --port 0)' });
    const srv = web;
    const url = `http://${urlHost(host)}:${srv.port}`;
    log(`LiveAgent is running at ${url}/#token=${token}`);
    // A newcomer's first start: say where to go before the first message fails.
    const current = kernel.settings.get();
    if (!kernel.runtime.providers().some((p) => p.isConfigured(current))) {
      log('No model provider is set up yet: open that address to connect one (Claude, OpenAI, Gemini or a custom endpoint), or set ANTHROPIC_API_KEY, OPENAI_API_KEY or GEMINI_API_KEY and start again.');
    }
    // The server host runs the scheduled tasks (the chat CLI never does).
    await startScheduledTasks(kernel, (line) => void process.stderr.write(`${line}\n`));
    let closing: Promise<void> | undefined;
    return {
      url,
      port: srv.port,
      token,
      kernel,
      // kernel.shutdown stops runs, lets plugins finish writes and closes the gateway's sockets.
      close: () => (closing ??= srv.close(() => kernel.shutdown())),
    };
  } catch (err) {
    web?.server.close();
    await kernel.shutdown();
    throw err;
  }
}
