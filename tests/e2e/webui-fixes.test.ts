/**
 * Browser tests of issue 18: sending scrolls to what was sent while reading back is never
 * yanked (desktop and phone width), an offline send waits and goes out once, replies cut short
 * keep their marker, and a conversation deleted in another window closes.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { conversationItem, currentConversationId, lastReply, newChat, openApp, send, sendAndWait, waitConnected, waitIdle } from './helpers/app.js';
import { hasChromium } from './helpers/browser.js';
import type { E2EServer } from './helpers/e2e-server.js';
import { openBrowserSession } from './helpers/session.js';

const SHOTS = '/tmp/la-webui18-shots';

describe.skipIf(!hasChromium)('WebUI issue 18 fixes (e2e)', () => {
  let srv: E2EServer;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let errors: string[];

  beforeAll(async () => {
    ({ srv, browser, context, page, errors } = await openBrowserSession());
    fs.mkdirSync(SHOTS, { recursive: true });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await srv?.close();
  });

  const shot = (name: string) => page.screenshot({ path: path.join(SHOTS, `${name}.png`) });
  const gap = () => page.getByTestId('transcript').evaluate((el) => el.scrollHeight - el.scrollTop - el.clientHeight);
  const top = () => page.getByTestId('transcript').evaluate((el) => el.scrollTop);
  /** Read back: a wheel up over the transcript, as a user does. */
  async function scrollUp(): Promise<void> {
    const box = (await page.getByTestId('transcript').boundingBox())!;
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    await page.mouse.wheel(0, -600);
    await expect.poll(gap).toBeGreaterThan(300);
  }

  for (const [label, viewport] of [
    ['desktop', { width: 1280, height: 820 }],
    ['390px', { width: 390, height: 800 }],
  ] as const) {
    it(`scrolling (${label}): sending brings the view down; a streaming reply never yanks it; Jump to latest`, async () => {
      await page.setViewportSize({ width: 1280, height: 820 });
      await newChat(page);
      for (let i = 1; i <= 3; i++) await sendAndWait(page, `/slow 120 1`, 'word120');
      await page.setViewportSize(viewport);
      await expect.poll(gap).toBeLessThan(2);

      // Scrolled up, a send shows what was sent.
      await scrollUp();
      await page.getByTestId('jump-latest').waitFor();
      await sendAndWait(page, `sent while reading ${label}`, `Echo: sent while reading ${label}`);
      await expect.poll(gap).toBeLessThan(2);
      await page.getByTestId('jump-latest').waitFor({ state: 'detached' });

      // While a reply streams, reading back stays where it is; the button brings the end back.
      await send(page, '/slow 150 30');
      await expect.poll(() => lastReply(page).getByTestId('assistant-text').textContent()).toContain('word5 ');
      await scrollUp();
      const at = await top();
      await expect.poll(() => lastReply(page).getByTestId('assistant-text').textContent(), { timeout: 10_000 }).toContain('word60 ');
      expect(Math.abs((await top()) - at)).toBeLessThan(2);
      const jump = page.getByTestId('jump-latest');
      await expect.poll(() => jump.textContent()).toContain('Jump to latest');
      await shot(`scroll-${label}-reading`);
      await jump.click();
      await expect.poll(gap).toBeLessThan(2);
      await jump.waitFor({ state: 'detached' });
      // Back at the bottom, it follows the stream again.
      await waitIdle(page);
      await expect.poll(gap).toBeLessThan(2);
      await shot(`scroll-${label}-bottom`);
      await page.setViewportSize({ width: 1280, height: 820 });
    });
  }

  it('offline send: shown as waiting, delivered exactly once on reconnect, composer free meanwhile', async () => {
    await newChat(page);
    await sendAndWait(page, 'before going offline', 'Echo: before going offline');
    const id = await currentConversationId(page);
    await srv.stop();
    await page.getByTestId('reconnect-banner').waitFor();
    await send(page, 'typed while offline');
    await page.getByTestId('waiting-for-server').waitFor();
    // The composer is free: emptied and usable (no error, nothing put back).
    expect(await page.getByTestId('composer-input').inputValue()).toBe('');
    expect(await page.getByTestId('composer-input').isEditable()).toBe(true);
    await page.getByTestId('composer-input').fill('a draft meanwhile');
    await shot('offline-waiting-desktop');
    await page.setViewportSize({ width: 390, height: 800 });
    await shot('offline-waiting-390px');
    await page.setViewportSize({ width: 1280, height: 820 });
    await srv.restart();
    await page.getByTestId('reconnect-banner').waitFor({ state: 'detached', timeout: 20_000 });
    await lastReply(page).getByText('Echo: typed while offline').waitFor();
    await waitIdle(page);
    await page.getByTestId('waiting-for-server').waitFor({ state: 'detached' });
    expect(await page.getByTestId('composer-error').count()).toBe(0);
    expect(await page.getByTestId('composer-input').inputValue()).toBe('a draft meanwhile');
    const users = () => page.getByTestId('user-text').allTextContents();
    expect(await users()).toEqual(['before going offline', 'typed while offline']);
    expect(await page.getByTestId('assistant-message').count()).toBe(2);
    // The model was asked once, and the server's history holds it once (a reload shows what is stored).
    const asked = srv.control.requests.filter((r) => JSON.stringify(r.body.messages.at(-1)).includes('typed while offline'));
    expect(asked).toHaveLength(1);
    await page.getByTestId('composer-input').fill('');
    await page.reload();
    await waitConnected(page);
    await lastReply(page).getByText('Echo: typed while offline').waitFor();
    expect(await users()).toEqual(['before going offline', 'typed while offline']);
    expect(await page.getByTestId('assistant-message').count()).toBe(2);
    expect(await currentConversationId(page)).toBe(id);
  });

  it('replies cut short keep their marker (restart and stop), after the next turn and a reload; Continue and Regenerate', async () => {
    await newChat(page);
    await send(page, '/slow 300 40');
    await expect.poll(() => lastReply(page).getByTestId('assistant-text').textContent()).toContain('word5 ');
    await srv.stop();
    await page.getByTestId('reconnect-banner').waitFor();
    await srv.restart();
    await page.getByTestId('reconnect-banner').waitFor({ state: 'detached', timeout: 20_000 });
    const marker = lastReply(page).getByTestId('reply-marker');
    await marker.waitFor();
    // Cut off by the server stopping, not by the user (the kernel marks a shutdown abort).
    const cutKind = await marker.getAttribute('data-kind');
    expect(cutKind).toBe('interrupted');
    await page.reload();
    await waitConnected(page);
    await lastReply(page).getByTestId('reply-marker').waitFor();
    expect(await lastReply(page).getByTestId('reply-marker').getAttribute('data-kind')).toBe(cutKind);
    await lastReply(page).getByTestId('continue-reply').waitFor();
    await lastReply(page).getByTestId('regenerate').waitFor();
    await shot('interrupted-desktop');

    // A reply the user stopped: "Stopped" stays once the next turn is in, and after a reload.
    await newChat(page);
    await send(page, '/slow 300 40');
    await expect.poll(() => lastReply(page).getByTestId('assistant-text').textContent()).toContain('word5 ');
    await page.getByTestId('stop-button').click();
    await waitIdle(page);
    await lastReply(page).getByTestId('reply-marker').waitFor();
    expect(await lastReply(page).getByTestId('reply-marker').getAttribute('data-kind')).toBe('stopped');
    await sendAndWait(page, 'the next turn', 'Echo: the next turn');
    const first = page.getByTestId('assistant-message').first();
    expect(await first.getByTestId('reply-marker').getAttribute('data-kind')).toBe('stopped');
    expect(await lastReply(page).getByTestId('reply-marker').count()).toBe(0);
    await page.reload();
    await waitConnected(page);
    await lastReply(page).getByText('Echo: the next turn').waitFor();
    expect(await page.getByTestId('assistant-message').first().getByTestId('reply-marker').getAttribute('data-kind')).toBe('stopped');

    // Continue sends a short message asking for the rest.
    await newChat(page);
    await send(page, '/slow 300 40');
    await expect.poll(() => lastReply(page).getByTestId('assistant-text').textContent()).toContain('word5 ');
    await page.getByTestId('stop-button').click();
    await waitIdle(page);
    await page.setViewportSize({ width: 390, height: 800 });
    await shot('stopped-390px');
    await page.setViewportSize({ width: 1280, height: 820 });
    await lastReply(page).getByTestId('continue-reply').click();
    await lastReply(page).getByText('Echo: Continue where you stopped.').waitFor();
    await waitIdle(page);
    expect(await page.getByTestId('user-text').allTextContents()).toEqual(['/slow 300 40', 'Continue where you stopped.']);
  });

  it('a conversation deleted in another window closes there with a notice', async () => {
    const other = await context.newPage();
    try {
      await newChat(page);
      await sendAndWait(page, 'soon deleted', 'Echo: soon deleted');
      const id = await currentConversationId(page);
      await openApp(other, srv.url);
      await conversationItem(other, id).hover();
      await conversationItem(other, id).getByTestId('delete-conversation').click();
      await other.getByTestId('confirm-delete').click();
      await page.bringToFront();
      await page.getByTestId('deleted-notice').waitFor();
      expect(await page.getByTestId('deleted-notice').textContent()).toContain('This conversation was deleted in another window');
      await page.getByTestId('welcome').waitFor();
      expect(await page.getByTestId('transcript').count()).toBe(0);
      expect(await conversationItem(page, id).count()).toBe(0);
      await shot('deleted-desktop');
      await page.setViewportSize({ width: 390, height: 800 });
      await shot('deleted-390px');
      await page.setViewportSize({ width: 1280, height: 820 });
      // The composer starts a new chat.
      await sendAndWait(page, 'a fresh start', 'Echo: a fresh start');
      expect(await currentConversationId(page)).not.toBe(id);
      await page.getByTestId('deleted-notice').waitFor({ state: 'detached' });
    } finally {
      await other.close();
    }
    expect(errors).toEqual([]);
  });
});
