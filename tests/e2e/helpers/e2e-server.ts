/**
 * The server the browser tests drive: the real server host (startServer) in a temp home, with
 * the real `claude_code` provider talking to the wire-faithful Anthropic mock, which answers
 * from the e2e model script (mock-model.ts). File tools work in a temp workdir under the home.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Plugin, Settings } from '../../../plugin-api.js';
import { startServer, type RunningServer } from '../../../hosts/server/start-server.js';
import { startMockAnthropic, type MockAnthropicServer } from '../../fixtures/mock-anthropic.js';
import { createModel, type ScriptControl } from './mock-model.js';

export interface E2EServer {
  url: string;
  /** The page URL with the token in its hash, as the server prints it. */
  appUrl: string;
  token: string;
  home: string;
  /** A folder for file tools (the `/tools` script writes here). */
  workdir: string;
  server: RunningServer;
  /** The Anthropic mock the provider talks to (its `requests` are what the model received). */
  mock: MockAnthropicServer;
  control: ScriptControl;
  /** Stop the server (keep the home, so a restart on the same port resumes). */
  stop(): Promise<void>;
  /** Start again on the same port and home (after stop). */
  restart(): Promise<void>;
  close(): Promise<void>;
}

export const TEST_RUNTIME: Settings['runtime'] = { retryMaxAttempts: 1, retryBaseDelayMs: 20, persistIntervalMs: 50 };
export const TEST_API_KEY = 'sk-ant-e2e-0000';

export interface E2EServerOptions {
  /** Extra settings, over the defaults (a `providers` entry replaces the default one). */
  settings?: Settings;
  /** false: the provider has its endpoint but no key, so nothing is configured (first run). */
  withProvider?: boolean;
  /** The key the mock insists on (default: any key is accepted). */
  mockApiKey?: string;
  extraPlugins?: Plugin[];
}

export async function startE2EServer(opts: E2EServerOptions = {}): Promise<E2EServer> {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'la-e2e-'));
  const workdir = path.join(home, 'work');
  const gatesDir = path.join(home, 'gates');
  fs.mkdirSync(workdir);
  fs.mkdirSync(gatesDir);
  const model = createModel({ workdir, gatesDir });
  const mock = await startMockAnthropic({ script: model.script, ...(opts.mockApiKey ? { apiKey: opts.mockApiKey } : {}) });
  const withProvider = opts.withProvider !== false;
  const settings: Settings = {
    runtime: TEST_RUNTIME,
    providers: { claude_code: { ...(withProvider ? { apiKey: TEST_API_KEY } : {}), baseUrl: mock.url } },
    ...(withProvider ? { defaultProvider: 'claude_code' } : {}),
    ...(opts.settings ?? {}),
  };
  const boot = (port: number) => startServer({ host: '127.0.0.1', port, home, extraPlugins: opts.extraPlugins ?? [], settings, log: () => undefined, thirdParty: false });
  let server: RunningServer;
  try {
    server = await boot(0);
  } catch (err) {
    await mock.close();
    fs.rmSync(home, { recursive: true, force: true });
    throw err;
  }
  const port = server.port;
  let stopped = false;
  const e2e: E2EServer = {
    url: server.url,
    appUrl: `${server.url}/#token=${server.token}`,
    token: server.token,
    home,
    workdir,
    server,
    mock,
    control: { ...model.control, requests: mock.requests },
    async stop() {
      stopped = true;
      await server.close();
    },
    async restart() {
      server = await boot(port);
      e2e.server = server;
      stopped = false;
    },
    async close() {
      if (!stopped) await server.close();
      await mock.close();
      fs.rmSync(home, { recursive: true, force: true });
    },
  };
  return e2e;
}
