/**
 * Browser tests of MCP server state in the WebUI: the sidebar indicator and Settings → MCP
 * servers follow the host's servers (connected with their tools, restarting after a crash and
 * back, failed with the reason), and the `mcpServers` JSON is checked, saved, and flagged as
 * pending until the host restarts.
 */
import os from 'node:os';
import path from 'node:path';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { McpService } from '../../plugins/mcp/service.js';
import { openApp } from './helpers/app.js';
import { SCREENSHOTS, hasChromium, trackErrors } from './helpers/browser.js';
import type { E2EServer } from './helpers/e2e-server.js';
import { openBrowserSession } from './helpers/session.js';

const DYNAMIC = path.resolve('tests/fixtures/mcp/dynamic-server.mjs');
const MISSING = path.join(os.tmpdir(), 'liveagent-e2e-no-such-mcp-server');

describe.skipIf(!hasChromium)('WebUI MCP servers (e2e)', () => {
  let srv: E2EServer;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let errors: string[];

  beforeAll(async () => {
    const settings = {
      mcpServers: { dyn: { command: process.execPath, args: [DYNAMIC] }, broken: { command: MISSING } },
      mcp: { restartBaseDelayMs: 50, restartMaxDelayMs: 200 },
    };
    ({ srv, browser, context, page, errors } = await openBrowserSession({ server: { settings } }));
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await srv?.close();
  });

  const mcp = () => srv.server.kernel.services.get<McpService>('mcp')!;
  const row = (p: Page, name: string): Locator => p.locator(`[data-testid="mcp-server"][data-name="${name}"]`);

  /** The whole section: the page is made tall enough that none of it hides under the sticky save bar. */
  async function shootSection(p: Page, name: string): Promise<void> {
    const size = p.viewportSize()!;
    await p.setViewportSize({ width: size.width, height: 1500 });
    await p.getByTestId('mcp-section').screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), animations: 'disabled' });
    await p.setViewportSize(size);
  }

  async function openSection(p: Page): Promise<void> {
    await p.getByTestId('mcp-indicator').click();
    await p.getByTestId('mcp-section').waitFor();
  }

  it('the indicator and Settings → MCP servers show a connected server with its tools and a failed one with its reason', async () => {
    const indicator = page.getByTestId('mcp-indicator');
    // `broken` retries a few times (50-200 ms apart) before it is marked failed.
    await expect.poll(() => indicator.textContent(), { timeout: 15_000 }).toBe('MCP 1/2');
    await expect.poll(() => indicator.getAttribute('data-level'), { timeout: 15_000 }).toBe('error');

    await openSection(page);
    expect(await page.getByTestId('settings-page').isVisible()).toBe(true);
    // The indicator scrolls the section into view (it is the last one on the page).
    await expect.poll(() => page.getByTestId('mcp-section').evaluate((el) => el.getBoundingClientRect().top < innerHeight)).toBe(true);

    const dyn = row(page, 'dyn');
    expect(await dyn.getAttribute('data-state')).toBe('connected');
    expect(await dyn.getByTestId('mcp-state').textContent()).toMatch(/connected/);
    expect(await dyn.getByTestId('mcp-transport').textContent()).toBe('stdio');
    const tools = mcp().servers().find((s) => s.name === 'dyn')!.tools;
    expect(tools).toContain('mcp__dyn__add-tool');
    expect(await dyn.getByTestId('mcp-tool-count').textContent()).toBe(String(tools.length));
    expect(await dyn.getByTestId('mcp-tools').count()).toBe(0);
    await dyn.getByTestId('mcp-tools-toggle').click();
    expect(await dyn.getByTestId('mcp-tool').evaluateAll((els) => els.map((e) => e.getAttribute('data-tool')))).toEqual(tools);
    expect(await dyn.getByTestId('mcp-tools').textContent()).toContain('mcp__dyn__add-tool');
    expect(await dyn.getByTestId('mcp-error').count()).toBe(0);

    const broken = row(page, 'broken');
    expect(await broken.getAttribute('data-state')).toBe('failed');
    expect(await broken.getByTestId('mcp-state').textContent()).toMatch(/failed/);
    const reason = await broken.getByTestId('mcp-error').textContent();
    expect(reason).toContain(mcp().servers().find((s) => s.name === 'broken')!.error!);
    expect(reason).toMatch(/ENOENT/);
    expect(reason).toMatch(/gave up after \d+ restarts/);
    expect(await broken.getByTestId('mcp-tool-count').textContent()).toBe('0');
    // Nothing differs between the saved settings and the running servers yet.
    expect(await page.getByTestId('mcp-restart-notice').count()).toBe(0);

    await page.screenshot({ path: path.join(SCREENSHOTS, 'mcp-settings.png'), animations: 'disabled' });
    await shootSection(page, 'mcp-servers');
    await page.getByTestId('theme-toggle').first().click();
    expect(await page.evaluate(() => document.documentElement.dataset.theme)).toBe('dark');
    await page.screenshot({ path: path.join(SCREENSHOTS, 'mcp-settings-dark.png'), animations: 'disabled' });
    await shootSection(page, 'mcp-servers-dark');
    await page.getByTestId('theme-toggle').first().click();
    expect(await page.evaluate(() => document.documentElement.dataset.theme)).toBe('light');

    // Settings opened the ordinary way starts at the top; only the indicator jumps to the section.
    await page.getByTestId('settings-close').click();
    await page.getByTestId('open-settings').click();
    await page.getByTestId('mcp-section').waitFor();
    expect(await page.locator('.settings-body').evaluate((el) => el.scrollTop)).toBe(0);
    expect(errors).toEqual([]);
  });

  it('a killed server shows restarting, then connected again with its tools', async () => {
    await openSection(page);
    const dyn = row(page, 'dyn');
    await expect.poll(() => dyn.getAttribute('data-state'), { timeout: 15_000 }).toBe('connected');
    // Every state the badge takes, recorded in the page: restarting may last only a moment.
    await page.evaluate(() => {
      const w = window as unknown as { __mcpStates: string[] };
      w.__mcpStates = [];
      const read = () => document.querySelector('[data-testid="mcp-server"][data-name="dyn"] [data-testid="mcp-state"]')?.getAttribute('data-state');
      new MutationObserver(() => {
        const s = read();
        if (s && w.__mcpStates.at(-1) !== s) w.__mcpStates.push(s);
      }).observe(document.querySelector('[data-testid="mcp-section"]')!, { subtree: true, attributes: true, childList: true });
    });
    const pid = mcp().servers().find((s) => s.name === 'dyn')!.pid!;
    expect(pid).toBeGreaterThan(0);
    process.kill(pid, 'SIGKILL');

    const states = () => page.evaluate(() => (window as unknown as { __mcpStates: string[] }).__mcpStates);
    await expect.poll(states, { timeout: 15_000 }).toContain('restarting');
    await expect.poll(() => dyn.getAttribute('data-state'), { timeout: 15_000 }).toBe('connected');
    expect((await states()).slice(-2)).toEqual(['restarting', 'connected']);
    expect(mcp().servers().find((s) => s.name === 'dyn')!.pid).not.toBe(pid);
    expect(await dyn.getByTestId('mcp-tool-count').textContent()).toBe(String(mcp().servers().find((s) => s.name === 'dyn')!.tools.length));
    await expect.poll(() => page.getByTestId('mcp-indicator').textContent()).toBe('MCP 1/2');

    // The Restart button reconnects it on request (a new process).
    const before = mcp().servers().find((s) => s.name === 'dyn')!.pid;
    await dyn.getByTestId('mcp-restart').click();
    await expect.poll(() => mcp().servers().find((s) => s.name === 'dyn')!.pid, { timeout: 15_000 }).not.toBe(before);
    await expect.poll(() => dyn.getAttribute('data-state'), { timeout: 15_000 }).toBe('connected');
    expect(errors).toEqual([]);
  });

  it('the mcpServers JSON is checked before it is sent, saved with the settings, and applied at once (added started, removed stopped, changed restarted)', async () => {
    await openSection(page);
    const editor = page.getByTestId('mcp-config');
    const configError = page.getByTestId('mcp-config-error');
    expect(JSON.parse(await editor.inputValue())).toEqual(srv.server.kernel.settings.get().mcpServers);
    const before = JSON.stringify(srv.server.kernel.settings.get());

    await editor.fill('{\n  "dyn": { "command": x }\n}');
    expect(await configError.textContent()).toBe("mcpServers is not valid JSON: Unexpected token 'x' (line 2 column 23)");
    await editor.fill('{ "dyn": { "command": ');
    expect(await configError.textContent()).toMatch(/^mcpServers is not valid JSON: .* \(at line 1 column 23: a closing bracket, brace or quote is missing\)$/);
    await page.getByTestId('settings-invalid').waitFor();
    await page.getByTestId('settings-save').click();
    await editor.fill('{ "x": { "args": ["a"] } }');
    expect(await configError.textContent()).toBe('mcpServers.x: needs "command" (a stdio server) or "url" (an HTTP server)');
    await editor.fill('{ "x": { "url": "ftp://example.com" } }');
    expect(await configError.textContent()).toBe('mcpServers.x.url: must be an http(s) URL');
    await page.getByTestId('settings-save').click();
    // Nothing was sent: the stored settings are as they were.
    expect(JSON.stringify(srv.server.kernel.settings.get())).toBe(before);

    // Remove `broken`, add `extra`, change `dyn`: the host applies all three at once.
    const next = {
      dyn: { command: process.execPath, args: [DYNAMIC], env: { DYN_MODE: 'x' } },
      extra: { url: 'http://127.0.0.1:9/mcp' },
    };
    await editor.fill(JSON.stringify(next, null, 2));
    expect(await configError.count()).toBe(0);
    await page.getByTestId('settings-save').click();
    await page.getByTestId('settings-saved').waitFor();
    expect(srv.server.kernel.settings.get().mcpServers).toEqual(next);
    // `extra` (nothing listens on port 9) is started and keeps retrying; `broken` is gone; `dyn` came back with its new entry.
    await row(page, 'extra').waitFor();
    await row(page, 'broken').waitFor({ state: 'detached' });
    await page.locator('[data-testid="mcp-server"][data-name="dyn"][data-state="connected"]').waitFor();
    expect(await page.getByTestId('mcp-applying-notice').count()).toBe(0);
    expect(srv.server.kernel.runtime.tools().some((t) => t.name.startsWith('mcp__broken__'))).toBe(false);
    await shootSection(page, 'mcp-servers-applied');

    // Another window sees the same servers, with nothing pending.
    const other = await context.newPage();
    const otherErrors = trackErrors(other);
    await openApp(other, srv.appUrl);
    await openSection(other);
    await row(other, 'extra').waitFor();
    expect(await row(other, 'broken').count()).toBe(0);
    expect(await other.getByTestId('mcp-applying-notice').count()).toBe(0);
    await other.close();
    expect(otherErrors).toEqual([]);
    expect(errors).toEqual([]);
  });
});
