/**
 * Browser tests of staying in step with the server: a reload mid-stream, a dropped socket
 * (banner, backoff, replay), and two tabs on one conversation.
 */
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { conversationItem, currentConversationId, lastReply, newChat, openApp, send, sendAndWait, waitConnected, waitIdle } from './helpers/app.js';
import { blockSockets, dropSocket, hasChromium } from './helpers/browser.js';
import type { E2EServer } from './helpers/e2e-server.js';
import { openBrowserSession } from './helpers/session.js';

describe.skipIf(!hasChromium)('WebUI sync (e2e)', () => {
  let srv: E2EServer;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let errors: string[];

  beforeAll(async () => {
    ({ srv, browser, context, page, errors } = await openBrowserSession());
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await srv?.close();
  });

  const words = (text: string | null) => (text ?? '').trim().split(/\s+/).filter(Boolean);

  it('reconnect mid-stream: reload the page and the streaming reply continues', async () => {
    await newChat(page);
    await send(page, '/slow 80 40');
    const text = () => lastReply(page).getByTestId('assistant-text').textContent();
    await expect.poll(text, { timeout: 5000 }).toContain('word4 ');
    await page.reload();
    await waitConnected(page);
    // The partial reply is back at once and keeps growing from where the server is.
    await page.getByTestId('stop-button').waitFor();
    await expect.poll(text).toContain('word');
    await expect.poll(text, { timeout: 10_000 }).toContain('word80');
    await waitIdle(page);
    const got = words(await text());
    expect(got).toEqual(Array.from({ length: 80 }, (_, i) => `word${i + 1}`));

    // The same with the run parked: the reloaded page knows it is still running, then sees the end.
    await newChat(page);
    await send(page, '/gate reload');
    await lastReply(page).getByText('Before the gate.').waitFor();
    await page.reload();
    await lastReply(page).getByText('Before the gate.').waitFor();
    await page.getByTestId('stop-button').waitFor();
    srv.control.release('reload');
    await lastReply(page).getByText('After the gate.').waitFor();
    await waitIdle(page);
    // Nothing doubled: the snapshot's partial and the later deltas make one reply.
    expect((await lastReply(page).getByTestId('assistant-text').allTextContents()).map((t) => t.trim()).join(' ')).toBe('Before the gate. After the gate.');
  });

  it('the transport reconnects by itself with a visible banner and replays what it missed', async () => {
    await newChat(page);
    await send(page, '/gate drop');
    await lastReply(page).getByText('Before the gate.').waitFor();
    await send(page, 'queued before the drop');
    await page.getByTestId('queue-item').waitFor();
    await blockSockets(page, true);
    await dropSocket(page);
    const banner = page.getByTestId('reconnect-banner');
    await banner.waitFor();
    // While offline the run finishes on the server, and the queued message runs after it.
    const id = await currentConversationId(page);
    srv.control.release('drop');
    await expect.poll(() => srv.control.requests.some((r) => JSON.stringify(r.body.messages.at(-1)).includes('queued before the drop'))).toBe(true);
    await expect.poll(() => srv.server.kernel.runtime.activeRun(id)).toBeUndefined();
    // Unblock and press "Retry now" in one task: the backoff timer cannot reconnect in between
    // (and take the banner away before the click).
    await banner.getByTestId('reconnect-now').waitFor();
    await page.evaluate(() => {
      (window as unknown as { __blockWs: boolean }).__blockWs = false;
      (document.querySelector('[data-testid="reconnect-now"]') as HTMLButtonElement).click();
    });
    await banner.waitFor({ state: 'detached' });
    await lastReply(page).getByText('Echo: queued before the drop').waitFor();
    await waitIdle(page);
    await page.getByTestId('queue-panel').waitFor({ state: 'detached' });
    const replies = page.getByTestId('assistant-message');
    expect((await replies.nth(0).getByTestId('assistant-text').allTextContents()).map((t) => t.trim()).join(' ')).toBe('Before the gate. After the gate.');
    expect(await page.getByTestId('user-text').allTextContents()).toEqual(['/gate drop', 'queued before the drop']);
    await sendAndWait(page, 'still here', 'Echo: still here');
  });

  it('the server restarts: the page reconnects on its own and keeps the conversation', async () => {
    await newChat(page);
    await sendAndWait(page, 'before the restart', 'Echo: before the restart');
    await srv.stop();
    await page.getByTestId('reconnect-banner').waitFor();
    await srv.restart(); // same port, same home: same token and stored history
    await page.getByTestId('reconnect-banner').waitFor({ state: 'detached', timeout: 15_000 });
    await sendAndWait(page, 'after the restart', 'Echo: after the restart');
    expect(await page.getByTestId('user-text').allTextContents()).toEqual(['before the restart', 'after the restart']);
  });

  it('two tabs in step', async () => {
    const other = await context.newPage();
    try {
      await openApp(other, srv.url); // same browser profile: the token is remembered
      await newChat(page);
      await send(page, '/slow 30 40');
      const id = await currentConversationId(page);
      // The other tab sees the new conversation appear, running, and follows its stream.
      await conversationItem(other, id).getByTestId('conversation-running').waitFor();
      await conversationItem(other, id).getByTestId('conversation-title').click();
      await expect.poll(() => lastReply(other).getByTestId('assistant-text').textContent(), { timeout: 10_000 }).toContain('word30');
      await waitIdle(page);
      await waitIdle(other);
      expect(words(await lastReply(other).getByTestId('assistant-text').textContent())).toHaveLength(30);

      // A message from either tab shows in both.
      await sendAndWait(other, 'from the other tab', 'Echo: from the other tab');
      await lastReply(page).getByText('Echo: from the other tab').waitFor();
      expect(await page.getByTestId('user-text').allTextContents()).toEqual(['/slow 30 40', 'from the other tab']);

      // Queue and rename travel too.
      await send(page, '/gate tabs');
      await lastReply(other).getByText('Before the gate.').waitFor();
      await send(page, 'queued in tab one');
      await expect.poll(() => other.getByTestId('queue-text').allTextContents()).toEqual(['queued in tab one']);
      await other.getByTestId('queue-item').getByTestId('queue-remove').click();
      await page.getByTestId('queue-panel').waitFor({ state: 'detached' });
      srv.control.release('tabs');
      await waitIdle(other);
      await page.bringToFront(); // background tabs get few animation frames, which slows actions

      // Edit and resend in one tab truncates the history the other shows.
      const edited = page.getByTestId('user-message').nth(1);
      await edited.hover();
      await edited.getByTestId('edit-message').click();
      await page.getByTestId('edit-input').fill('edited in tab one');
      await page.getByTestId('edit-input').press('Enter');
      // The later "/gate tabs" message goes too: confirmed.
      await page.getByTestId('confirm-resend').click();
      await lastReply(page).getByText('Echo: edited in tab one').waitFor();
      await expect.poll(() => other.getByTestId('user-text').allTextContents()).toEqual(['/slow 30 40', 'edited in tab one']);
      await conversationItem(page, id).hover();
      await conversationItem(page, id).getByTestId('rename-conversation').click();
      await page.getByTestId('rename-input').fill('Shared work');
      await page.getByTestId('rename-input').press('Enter');
      await conversationItem(other, id).getByText('Shared work').waitFor();
    } finally {
      await other.close();
    }
    expect(errors).toEqual([]);
  });
});
