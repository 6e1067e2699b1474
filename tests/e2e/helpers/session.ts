/**
 * The set-up every single-page e2e file shares: a built WebUI, the server host with the mock
 * model, a fresh Chromium context, one page with its console errors tracked, the app open.
 */
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { openApp } from './app.js';
import { launchBrowser, newContext, trackErrors } from './browser.js';
import { startE2EServer, type E2EServer } from './e2e-server.js';
import { ensureWebuiBuilt } from './webui-build.js';

export interface BrowserSession {
  srv: E2EServer;
  browser: Browser;
  context: BrowserContext;
  page: Page;
  errors: string[];
}

export async function openBrowserSession(opts: { server?: Parameters<typeof startE2EServer>[0]; clipboard?: boolean } = {}): Promise<BrowserSession> {
  await ensureWebuiBuilt();
  const [srv, browser] = await Promise.all([startE2EServer(opts.server), launchBrowser()]);
  const context = await newContext(browser);
  if (opts.clipboard) await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: srv.url });
  const page = await context.newPage();
  const errors = trackErrors(page);
  await openApp(page, srv.appUrl);
  return { srv, browser, context, page, errors };
}
