/**
 * The server the browser tests drive: the real server host (startServer) in a temp home with
 * the scripted provider and a few test tools. Swap the provider here to run the suite against
 * another backend (e.g. the Anthropic provider with its mock server).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import type { Plugin, Settings } from '../../../plugin-api.js';
import { startServer, type RunningServer } from '../../../hosts/server/start-server.js';
import { scriptedProvider, type ScriptControl } from './scripted-provider.js';

export interface E2EServer {
  url: string;
  /** The page URL with the token in its hash, as the server prints it. */
  appUrl: string;
  token: string;
  home: string;
  server: RunningServer;
  control: ScriptControl;
  /** Stop the server (keep the home, so a restart on the same port resumes). */
  stop(): Promise<void>;
  /** Start again on the same port and home (after stop). */
  restart(): Promise<void>;
  close(): Promise<void>;
}

function toolsPlugin(control: ScriptControl): Plugin {
  return {
    name: 'e2e-tools',
    apply(ctx) {
      ctx.registerTool({
        name: 'Echo',
        description: 'Echo text back after a short wait.',
        parameters: z.object({ text: z.string(), waitGate: z.string().optional() }),
        concurrency: 'parallel',
        async execute(args: { text: string; waitGate?: string }, tctx) {
          tctx.update({ content: [{ type: 'text', text: `echoing ${args.text}…` }] });
          if (args.waitGate) await control.wait(args.waitGate, tctx.signal);
          else await new Promise((r) => setTimeout(r, 120));
          return { content: [{ type: 'text', text: `echo: ${args.text}` }] };
        },
      });
      ctx.registerTool({
        name: 'Explode',
        description: 'Always fails.',
        parameters: z.object({ reason: z.string() }),
        async execute(args: { reason: string }) {
          throw new Error(`kaboom (${args.reason})`);
        },
      });
      ctx.registerTool({
        name: 'Pwd',
        description: 'Report the working folder.',
        parameters: z.object({}),
        async execute(_args: Record<string, never>, tctx) {
          return { content: [{ type: 'text', text: `workdir: ${tctx.workdir}` }] };
        },
      });
      ctx.registerTool({
        name: 'FakeWrite',
        description: 'Pretends to write a file.',
        parameters: z.object({ file_path: z.string(), content: z.string() }),
        async execute(args: { file_path: string; content: string }) {
          return { content: [{ type: 'text', text: `wrote ${args.content.length} bytes to ${args.file_path}` }], editedFiles: [{ path: args.file_path, action: 'write' }] };
        },
      });
    },
  };
}

export const TEST_RUNTIME: Settings['runtime'] = { retryMaxAttempts: 1, retryBaseDelayMs: 20, persistIntervalMs: 50 };

export async function startE2EServer(opts: { settings?: Settings; withProvider?: boolean; extraPlugins?: Plugin[] } = {}): Promise<E2EServer> {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'la-e2e-'));
  const provider = scriptedProvider();
  const plugins: Plugin[] = [...(opts.withProvider === false ? [] : [{ name: 'e2e-provider', apply: (ctx) => void ctx.registerProvider(provider) } satisfies Plugin]), toolsPlugin(provider.control), ...(opts.extraPlugins ?? [])];
  const settings: Settings = { runtime: TEST_RUNTIME, ...(opts.settings ?? {}) };
  const boot = (port: number) => startServer({ host: '127.0.0.1', port, home, extraPlugins: plugins, settings, log: () => undefined, thirdParty: false });
  let server = await boot(0);
  const port = server.port;
  let stopped = false;
  const e2e: E2EServer = {
    url: server.url,
    appUrl: `${server.url}/#token=${server.token}`,
    token: server.token,
    home,
    server,
    control: provider.control,
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
      fs.rmSync(home, { recursive: true, force: true });
    },
  };
  return e2e;
}
