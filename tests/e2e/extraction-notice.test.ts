/**
 * agent-dev shows silent memory extraction: after an agent-dev turn, what extraction proposed
 * appears under the transcript of that conversation (and only there), with a way to review it on
 * the Memory page; a tools-mode turn proposes silently (the Memory page's indicator only).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { hasChromium, screenshot } from './helpers/browser.js';
import { newChat, sendAndWait, waitIdle } from './helpers/app.js';
import type { E2EServer } from './helpers/e2e-server.js';
import { openBrowserSession } from './helpers/session.js';

describe.skipIf(!hasChromium)('agent-dev shows memory extraction (e2e)', () => {
  let srv: E2EServer;
  let browser: Browser;
  let page: Page;
  let errors: string[];

  beforeAll(async () => {
    ({ srv, browser, page, errors } = await openBrowserSession({ server: { settings: { memory: { idleMs: 0, spacingMs: 0, minTurnChars: 5 }, title: { enabled: false } } } }));
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await srv?.close();
  });

  it('an agent-dev turn shows what was proposed, Review opens the Memory page; a tools turn shows nothing', async () => {
    await newChat(page, 'tools');
    await sendAndWait(page, 'Please remember that I use tabs everywhere.', /Echo: Please remember/);
    await waitIdle(page);
    // Proposed silently in tools mode: the indicator, no notice.
    await page.getByTestId('memory-indicator').waitFor();
    expect(await page.getByTestId('extraction-notice').count()).toBe(0);

    await newChat(page, 'agent-dev');
    await sendAndWait(page, 'Please remember that I deploy on Fridays.', /Echo: Please remember/);
    const notice = page.getByTestId('extraction-notice');
    await notice.waitFor();
    expect(await notice.getByTestId('extraction-item').allTextContents()).toEqual([expect.stringContaining('The user says I deploy on Fridays')]);
    await screenshot(page, 'extraction-notice');
    await notice.getByTestId('extraction-review').click();
    await page.getByText('The user says I deploy on Fridays').first().waitFor();
    expect(errors).toEqual([]);
  });
});
