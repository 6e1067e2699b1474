/**
 * Browser test of Settings → Hooks: add a hook in the editor (with its validation messages),
 * see it in settings.json and in the running hooks plugin, see it appear live in a second
 * browser context, edit and delete it. Screenshots (desktop and 390 px) go to /tmp/la-hooks-shots/.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HooksService } from '../../plugins/hooks/index.js';
import { openApp } from './helpers/app.js';
import { hasChromium, newContext } from './helpers/browser.js';
import type { E2EServer } from './helpers/e2e-server.js';
import { openBrowserSession } from './helpers/session.js';

const SHOTS = '/tmp/la-hooks-shots';

async function shot(page: Page, name: string, full = true): Promise<void> {
  fs.mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: full });
}

async function openSettings(p: Page): Promise<void> {
  if (!(await p.getByTestId('settings-page').isVisible())) await p.getByTestId('open-settings').click();
  await p.getByTestId('hooks-section').waitFor();
}

describe.skipIf(!hasChromium)('WebUI hooks editor (e2e)', () => {
  let srv: E2EServer;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let errors: string[];

  beforeAll(async () => {
    ({ srv, browser, context, page, errors } = await openBrowserSession());
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await srv?.close();
  });

  const onDisk = () => {
    const file = path.join(srv.home, 'settings.json');
    return fs.existsSync(file) ? (JSON.parse(fs.readFileSync(file, 'utf8')) as { hooks?: unknown }).hooks : undefined;
  };
  const service = () => srv.server.kernel.services.get<HooksService>('hooks')!;

  it('adds a blocking hook with the editor (validation first), stores it in settings.json, and a second context sees it live', async () => {
    await openSettings(page);
    const section = page.getByTestId('hooks-section');
    await section.scrollIntoViewIfNeeded();
    expect(await section.getByTestId('hooks-empty').isVisible()).toBe(true);

    // A second client, open on the same page before the change.
    const other = await newContext(browser);
    const otherPage = await other.newPage();
    try {
      await openApp(otherPage, srv.appUrl);
      await openSettings(otherPage);
      await page.bringToFront();

      await section.getByTestId('hooks-add').click();
      const editor = section.getByTestId('hook-editor');
      await editor.getByTestId('hook-event').selectOption('tool_execution_start');
      await editor.getByTestId('hook-matcher').fill('Write|Edit');
      await editor.getByTestId('hook-blocking').check();
      await editor.getByTestId('hook-timeout').fill('soon');
      await editor.getByTestId('hook-save').click();
      // Nothing is sent while a field is wrong: each says what.
      expect(await editor.getByTestId('hook-fix-hint').textContent()).toContain('Fix the fields');
      expect(await editor.getByTestId('hook-error-command').textContent()).toBe('Command is required');
      expect(await editor.getByTestId('hook-error-timeoutMs').textContent()).toContain('whole number of milliseconds');
      expect(onDisk()).toBeUndefined();
      await shot(page, 'editor-errors-desktop', false);

      await editor.getByTestId('hook-command').fill('./scripts/review-write.sh');
      await editor.getByTestId('hook-timeout').fill('5000');
      await editor.getByTestId('hook-on-failure').selectOption('block');
      await editor.getByTestId('hook-name').fill('review writes');
      expect(await editor.getByTestId('hook-fix-hint').count()).toBe(0); // gone once the fields are right
      await shot(page, 'editor-filled-desktop', false);
      await editor.getByTestId('hook-save').click();
      await section.getByTestId('hook-row').first().waitFor();
      await expect.poll(() => onDisk()).toEqual([
        { event: 'tool_execution_start', name: 'review writes', matcher: 'Write|Edit', type: 'command', command: './scripts/review-write.sh', timeoutMs: 5000, blocking: true },
      ]);
      // The running plugin picked it up (no restart).
      await expect.poll(() => service().stats().hooks).toBe(1);
      // The other context follows without a reload.
      const otherRow = otherPage.getByTestId('hook-row');
      await otherRow.first().waitFor();
      expect(await otherRow.getByTestId('hook-row-summary').textContent()).toBe('./scripts/review-write.sh');
      expect(await otherRow.getByTestId('hook-row-blocking').textContent()).toContain('fails closed');

      // An HTTP hook, added from the second context, shows up in the first.
      await otherPage.bringToFront();
      const otherSection = otherPage.getByTestId('hooks-section');
      await otherSection.getByTestId('hooks-add').click();
      const e2 = otherSection.getByTestId('hook-editor');
      await e2.getByTestId('hook-event').selectOption('agent_end');
      await expect.poll(() => e2.getByTestId('hook-blocking').count()).toBe(0); // agent_end cannot block
      await e2.getByTestId('hook-type-http').click();
      await e2.getByTestId('hook-url').fill('ftp://nope');
      await e2.getByTestId('hook-headers').fill('no colon here');
      await e2.getByTestId('hook-save').click();
      expect(await e2.getByTestId('hook-error-url').textContent()).toBe('URL must be an http(s) URL');
      expect(await e2.getByTestId('hook-error-headers').textContent()).toContain('write it as "Name: value"');
      await e2.getByTestId('hook-url').fill('https://hooks.example.com/liveagent');
      await e2.getByTestId('hook-headers').fill('Authorization: Bearer abc');
      await e2.getByTestId('hook-save').click();
      await page.bringToFront();
      await expect.poll(() => page.getByTestId('hook-row').count()).toBe(2);
      expect(onDisk()).toEqual([
        expect.objectContaining({ event: 'tool_execution_start' }),
        { event: 'agent_end', type: 'http', url: 'https://hooks.example.com/liveagent', headers: { Authorization: 'Bearer abc' } },
      ]);
    } finally {
      await other.close();
    }
    await shot(page, 'list-desktop');
    expect(errors).toEqual([]);
  });

  it('edits and deletes a hook; the layout holds at 390 px', async () => {
    await openSettings(page);
    const section = page.getByTestId('hooks-section');
    const first = section.locator('[data-testid="hook-row"][data-index="0"]');
    await first.getByTestId('hook-edit').click();
    const editor = section.getByTestId('hook-editor');
    expect(await editor.getByTestId('hook-matcher').inputValue()).toBe('Write|Edit');
    await editor.getByTestId('hook-matcher').fill('mcp__*');
    await editor.getByTestId('hook-on-failure').selectOption('allow');
    await editor.getByTestId('hook-save').click();
    await expect.poll(() => (onDisk() as Array<Record<string, unknown>>)[0]).toMatchObject({ matcher: 'mcp__*', onFailure: 'allow', blocking: true });
    expect(await first.getByTestId('hook-row-blocking').textContent()).toContain('fails open');

    await page.setViewportSize({ width: 390, height: 844 });
    await section.scrollIntoViewIfNeeded();
    await shot(page, 'list-mobile');
    await first.getByTestId('hook-edit').click();
    await section.getByTestId('hook-editor').scrollIntoViewIfNeeded();
    await shot(page, 'editor-mobile');
    await page.getByTestId('settings-page').getByTestId('theme-toggle').click();
    await shot(page, 'editor-mobile-dark');
    await page.getByTestId('settings-page').getByTestId('theme-toggle').click();
    // Nothing is cut off: the editor fits the narrow viewport.
    const box = await section.getByTestId('hook-editor').boundingBox();
    expect(box!.x + box!.width).toBeLessThanOrEqual(390);
    await section.getByTestId('hook-cancel').click();

    await section.locator('[data-testid="hook-row"][data-index="1"]').getByTestId('hook-delete').click();
    await section.getByTestId('hook-delete-confirm').click();
    await expect.poll(() => section.getByTestId('hook-row').count()).toBe(1);
    expect(onDisk()).toEqual([expect.objectContaining({ event: 'tool_execution_start', matcher: 'mcp__*' })]);
    await page.setViewportSize({ width: 1280, height: 820 });
    expect(errors).toEqual([]);
  });
});
