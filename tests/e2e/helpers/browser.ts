/**
 * Chromium for the browser tests (the system build; never `playwright install`). One browser
 * per test file; pages are reused where a test allows.
 */
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type BrowserContextOptions, type Page } from 'playwright-core';

export const CHROMIUM = process.env.LIVEAGENT_CHROMIUM ?? '/usr/bin/chromium';
export const hasChromium = fs.existsSync(CHROMIUM);
if (!hasChromium) console.warn(`[e2e] skipping the browser tests: no Chromium at ${CHROMIUM} (set LIVEAGENT_CHROMIUM to use another one)`);

export const SCREENSHOTS = path.resolve('test-artifacts/screenshots');

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
  });
}

/**
 * A fresh context (its own storage, like a fresh user-data-dir) whose pages can drop their
 * WebSocket on demand: `dropSocket(page)` closes it, `blockSockets(page, true)` makes new ones fail.
 */
export async function newContext(browser: Browser, options: BrowserContextOptions = {}): Promise<BrowserContext> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 820 }, colorScheme: 'light', ...options });
  await context.addInitScript(() => {
    const Native = window.WebSocket;
    const w = window as unknown as { __sockets: WebSocket[]; __blockWs: boolean };
    w.__sockets = [];
    w.__blockWs = false;
    class Tracked extends Native {
      constructor(url: string | URL, protocols?: string | string[]) {
        super(w.__blockWs ? 'ws://127.0.0.1:9/blocked' : url, protocols);
        w.__sockets.push(this);
      }
    }
    window.WebSocket = Tracked as typeof WebSocket;
  });
  context.setDefaultTimeout(10_000);
  return context;
}

export async function dropSocket(page: Page): Promise<void> {
  await page.evaluate(() => {
    const w = window as unknown as { __sockets: WebSocket[] };
    for (const s of w.__sockets) if (s.readyState <= 1) s.close(4000, 'test drop');
  });
}

export async function blockSockets(page: Page, block: boolean): Promise<void> {
  await page.evaluate((b) => ((window as unknown as { __blockWs: boolean }).__blockWs = b), block);
}

export async function screenshot(page: Page, name: string): Promise<string> {
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  const file = path.join(SCREENSHOTS, `${name}.png`);
  await page.screenshot({ path: file });
  return file;
}

/** Collect page errors so a test can assert the app logged none. */
export function trackErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => {
    if (m.type() === 'error' && !/WebSocket|ERR_CONNECTION_REFUSED|blocked/.test(m.text())) errors.push(m.text());
  });
  return errors;
}

/** Write a file to upload under `dir` (the server's temp home, removed with it). */
export function tmpFile(dir: string, name: string, content: string | Buffer): string {
  const folder = path.join(dir, 'e2e-uploads');
  fs.mkdirSync(folder, { recursive: true });
  const file = path.join(folder, name);
  fs.writeFileSync(file, content);
  return file;
}
