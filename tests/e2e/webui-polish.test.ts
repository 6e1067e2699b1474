/**
 * Issue 18 item 7: a fence without a language holding prose is labelled "text" (not a weak
 * auto-detected guess such as css); the search box's shortcut hint gives way to what is typed
 * (the clear button sits there); on a phone the composer keeps Send on the row of the model
 * picker and the welcome shows no keyboard shortcut hints.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { hasChromium, newContext, screenshot } from './helpers/browser.js';
import { newChat, sendAndWait } from './helpers/app.js';
import type { E2EServer } from './helpers/e2e-server.js';
import { openBrowserSession } from './helpers/session.js';

describe.skipIf(!hasChromium)('WebUI polish (e2e)', () => {
  let srv: E2EServer;
  let browser: Browser;
  let page: Page;
  let errors: string[];

  beforeAll(async () => {
    ({ srv, browser, page, errors } = await openBrowserSession({ server: { settings: { title: { enabled: false } } } }));
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await srv?.close();
  });

  it('a plain fence is labelled text, a ts fence keeps its language', async () => {
    await newChat(page);
    await sendAndWait(page, '/plain', 'remember to buy milk');
    expect(await page.getByTestId('code-block').last().locator('.code-lang').textContent()).toBe('text');
    await sendAndWait(page, '/code', 'Done.');
    expect(await page.getByTestId('code-block').last().locator('.code-lang').textContent()).toBe('ts');
  });

  it('the search hint gives way to the typed text', async () => {
    await page.getByTestId('search-kbd').waitFor();
    await page.getByTestId('conversation-search').fill('milk');
    await expect.poll(() => page.getByTestId('search-kbd').count()).toBe(0);
    await page.getByTestId('conversation-search').fill('');
    await page.getByTestId('search-kbd').waitFor();
    expect(errors).toEqual([]);
  });

  it('at 390 px Send shares the model picker row and no shortcut hints show', async () => {
    const ctx = await newContext(browser, { viewport: { width: 390, height: 844 }, hasTouch: true, isMobile: true });
    const phone = await ctx.newPage();
    try {
      // The sidebar (and its connection dot) is folded away on a phone: wait for the composer.
      await phone.goto(srv.appUrl);
      await phone.getByTestId('welcome').waitFor();
      await phone.getByTestId('send-button').waitFor();
      expect(await phone.getByTestId('shortcut-hints').isVisible()).toBe(false);
      const send = (await phone.getByTestId('send-button').boundingBox())!;
      const model = (await phone.getByTestId('model-picker').boundingBox())!;
      expect(Math.abs(send.y + send.height / 2 - (model.y + model.height / 2))).toBeLessThan(8);
      const composer = (await phone.getByTestId('composer-input').boundingBox())!;
      expect(send.x + send.width).toBeLessThanOrEqual(390);
      expect(composer.width).toBeGreaterThan(300);
      await screenshot(phone, 'polish-390-composer');
    } finally {
      await ctx.close();
    }
  });
});
