/**
 * Browser tests of paged history: a conversation of a few hundred messages (seeded through the
 * runtime with an instant in-process provider, so it takes a moment) opens at its end with only
 * the newest page; scrolling to the top loads older pages in order, without duplicates, and what
 * the user was looking at stays where it was; once everything is loaded nothing is shown above.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Plugin } from '../../plugin-api.js';
import { fakeProvider } from '../helpers/fake-provider.js';
import { waitConnected } from './helpers/app.js';
import { hasChromium, newContext, trackErrors } from './helpers/browser.js';
import type { E2EServer } from './helpers/e2e-server.js';
import { openBrowserSession } from './helpers/session.js';

const TURNS = 150;
const PAGE = 100; // the gateway's default snapshotMessages

const seedProvider: Plugin = {
  name: 'test-seed-provider',
  // Replies of a few shapes, so the rows have different heights.
  apply: (ctx) => void ctx.registerProvider(fakeProvider((_req, i) => ({ text: i % 3 === 0 ? `Answer ${i}.\n\nA second paragraph, so that this reply is taller than the others.` : `Answer ${i}.` }), 'seed')),
};

async function seed(srv: E2EServer, turns: number): Promise<string> {
  let conversationId: string | undefined;
  for (let i = 0; i < turns; i++) {
    const run = srv.server.kernel.runtime.startRun({ ...(conversationId ? { conversationId } : {}), input: [{ type: 'text', text: `question ${i}` }], provider: 'seed', mode: 'text', keepEvents: false });
    conversationId = run.conversationId;
    const r = await run.result;
    if (r.status !== 'completed') throw new Error(`seeding failed at ${i}: ${r.error?.message}`);
  }
  return conversationId!;
}

/** The numbers of the user messages shown, top to bottom. */
function shownQuestions(page: Page): Promise<number[]> {
  return page.$$eval('[data-testid="user-message"]', (els) => els.map((e) => Number(/question (\d+)/.exec(e.textContent ?? '')?.[1] ?? -1)));
}

/** Scroll the transcript to its top and, in the same turn, measure where a message sits in the view. */
function scrollTopAndMeasure(page: Page, messageId: string): Promise<number> {
  return page.evaluate((id) => {
    const sc = document.querySelector<HTMLElement>('[data-testid="transcript"]')!;
    sc.scrollTop = 0;
    return document.querySelector(`[data-message-id="${id}"]`)!.getBoundingClientRect().top - sc.getBoundingClientRect().top;
  }, messageId);
}

function offsetOf(page: Page, messageId: string): Promise<number> {
  return page.evaluate((id) => {
    const sc = document.querySelector<HTMLElement>('[data-testid="transcript"]')!;
    return document.querySelector(`[data-message-id="${id}"]`)!.getBoundingClientRect().top - sc.getBoundingClientRect().top;
  }, messageId);
}

/** Open a conversation by its address (the token is already stored), as a reload of a bookmarked link does. */
async function openConversation(page: Page, srv: E2EServer, id: string): Promise<void> {
  await page.goto(`${srv.url}/#/c/${id}`);
  await page.reload();
  await waitConnected(page);
}

const firstUserId = (page: Page) => page.locator('[data-testid="user-message"]').first().getAttribute('data-message-id');
const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);

describe.skipIf(!hasChromium)('WebUI paged history (e2e)', () => {
  let srv: E2EServer;
  let browser: Browser;
  let page: Page;
  let errors: string[];
  let conversationId: string;

  beforeAll(async () => {
    ({ srv, browser, page, errors } = await openBrowserSession({ server: { extraPlugins: [seedProvider] } }));
    conversationId = await seed(srv, TURNS);
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await srv?.close();
  });

  it('a long conversation opens at its end; scrolling up loads older pages in order, without duplicates, and the view holds still', async () => {
    await openConversation(page, srv, conversationId);
    await expect.poll(() => shownQuestions(page)).toEqual(range(TURNS - PAGE / 2, TURNS));
    // Only the newest page, at the bottom, with the (off-screen) line that says more is coming.
    await page.getByTestId('older-messages').waitFor({ state: 'attached' });
    const atBottom = await page.getByTestId('transcript').evaluate((el) => el.scrollHeight - el.scrollTop - el.clientHeight);
    expect(atBottom).toBeLessThan(2);
    expect(await page.getByText('Answer 149.').count()).toBe(1);
    await page.screenshot({ path: '/tmp/liveagent-pages-desktop-open.png' });

    // Up to the top: the page before arrives above, and the message that was first stays put.
    let anchor = (await firstUserId(page))!;
    let was = await scrollTopAndMeasure(page, anchor);
    await expect.poll(() => shownQuestions(page)).toEqual(range(TURNS - PAGE, TURNS));
    expect(Math.abs((await offsetOf(page, anchor)) - was)).toBeLessThanOrEqual(1);
    expect(await page.getByTestId('transcript').evaluate((el) => el.scrollTop)).toBeGreaterThan(400);

    // Once more: the rest (a shorter page), then nothing at all above the first message.
    anchor = (await firstUserId(page))!;
    was = await scrollTopAndMeasure(page, anchor);
    await expect.poll(() => shownQuestions(page)).toEqual(range(0, TURNS));
    expect(Math.abs((await offsetOf(page, anchor)) - was)).toBeLessThanOrEqual(1);
    expect(await page.getByTestId('older-messages').count()).toBe(0);
    const ids = await page.$$eval('[data-message-id]', (els) => els.map((e) => e.getAttribute('data-message-id')));
    expect(new Set(ids).size).toBe(ids.length);
    await page.getByTestId('transcript').evaluate((el) => (el.scrollTop = 0));
    await page.getByTestId('transcript').getByText('question 0', { exact: true }).waitFor();
    await page.screenshot({ path: '/tmp/liveagent-pages-desktop-top.png' });

    // The conversation goes on at the bottom as before.
    await page.getByTestId('jump-latest').click();
    expect(await page.getByText('Answer 149.').isVisible()).toBe(true);
    expect(errors).toEqual([]);
  });

  it('while an older page is on its way the top of the list says so; when it lands the view holds still', async () => {
    const context = await newContext(browser);
    try {
      const p = await context.newPage();
      const pErrors = trackErrors(p);
      // Hold the frames that carry a page until the line has been seen.
      let hold = true;
      const held: Array<() => void> = [];
      await p.routeWebSocket(/\/ws/, (ws) => {
        const server = ws.connectToServer();
        server.onMessage((m) => {
          if (hold && typeof m === 'string' && m.includes('"type":"page"')) held.push(() => ws.send(m));
          else ws.send(m);
        });
      });
      await p.goto(srv.appUrl);
      await waitConnected(p);
      await openConversation(p, srv, conversationId);
      await expect.poll(() => shownQuestions(p)).toEqual(range(TURNS - PAGE / 2, TURNS));
      const anchor = (await firstUserId(p))!;
      const was = await scrollTopAndMeasure(p, anchor);
      const line = p.getByTestId('older-messages');
      await line.getByText('Loading earlier messages…').waitFor();
      expect(await line.isVisible()).toBe(true);
      await expect.poll(() => held.length).toBe(1);
      await p.screenshot({ path: '/tmp/liveagent-pages-desktop-loading.png' });
      hold = false;
      for (const send of held.splice(0)) send();
      await expect.poll(() => shownQuestions(p)).toEqual(range(TURNS - PAGE, TURNS));
      expect(Math.abs((await offsetOf(p, anchor)) - was)).toBeLessThanOrEqual(1);
      expect(pErrors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('on a phone-sized screen: the newest page first, older ones while scrolling up', async () => {
    const context = await newContext(browser);
    try {
      const phone = await context.newPage();
      const phoneErrors = trackErrors(phone);
      await phone.goto(srv.appUrl);
      await waitConnected(phone);
      await openConversation(phone, srv, conversationId);
      await phone.setViewportSize({ width: 390, height: 844 });
      await expect.poll(() => shownQuestions(phone)).toEqual(range(TURNS - PAGE / 2, TURNS));
      await phone.screenshot({ path: '/tmp/liveagent-pages-390-open.png' });
      // Wheel up, the way a user scrolls, until the second page is in.
      await phone.getByTestId('transcript').hover();
      for (let i = 0; i < 200 && (await shownQuestions(phone)).length < PAGE; i++) await phone.mouse.wheel(0, -4000);
      // In order and without duplicates, however many pages the wheel got in.
      const shown = await shownQuestions(phone);
      expect(shown.length).toBeGreaterThanOrEqual(PAGE);
      expect(shown).toEqual(range(TURNS - shown.length, TURNS));
      await phone.screenshot({ path: '/tmp/liveagent-pages-390-scrolled.png' });
      expect(phoneErrors).toEqual([]);
    } finally {
      await context.close();
    }
  });
});
