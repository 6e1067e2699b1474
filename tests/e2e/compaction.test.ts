/**
 * Browser tests of context compaction with the real compaction plugin: "Compact now" makes a
 * summary request (the mock model answers it, see mock-model.ts) and the transcript gets a
 * collapsed checkpoint card at its place; the composer's context meter shows used / window and
 * follows the compaction; a reload puts the card back where it was; a failed compaction says
 * why. Screenshots at desktop and phone widths go to test-artifacts/screenshots and /tmp.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { currentConversationId, lastReply, newChat, send, sendAndWait, waitConnected, waitIdle } from './helpers/app.js';
import { hasChromium, screenshot } from './helpers/browser.js';
import type { E2EServer } from './helpers/e2e-server.js';
import { openBrowserSession } from './helpers/session.js';

/**
 * The compaction plugin's view of the models: the default one with a 200k window, a tiny one for
 * the mid-stream case; little is kept verbatim so a short chat has something to cover.
 */
const COMPACTION_SETTINGS = { compaction: { keepRecentTokens: 20, models: { 'claude-sonnet-4-6': { contextWindow: 200_000 }, 'claude-haiku-4-5': { contextWindow: 3000 } } } };

async function shot(page: Page, name: string): Promise<void> {
  const file = await screenshot(page, name);
  fs.copyFileSync(file, path.join('/tmp', `${name}.png`));
}

async function meterUsed(page: Page): Promise<number> {
  return Number(await page.getByTestId('context-meter-value').getAttribute('data-used'));
}

/** The transcript item right after the card (a user message, or the reply holding the round). */
async function nextItemMessageIds(card: Locator): Promise<string[]> {
  return card.evaluate((el) => {
    const next = el.nextElementSibling;
    if (!next) return [];
    const own = next.getAttribute('data-message-id');
    return [...(own ? [own] : []), ...[...next.querySelectorAll('[data-message-id]')].map((e) => e.getAttribute('data-message-id')!)];
  });
}

describe.skipIf(!hasChromium)('WebUI compaction (e2e)', () => {
  let srv: E2EServer;
  let browser: Browser;
  let page: Page;
  let errors: string[];

  beforeAll(async () => {
    ({ srv, browser, page, errors } = await openBrowserSession({ server: { settings: COMPACTION_SETTINGS } }));
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await srv?.close();
  });

  it('Compact now: a collapsed checkpoint card with the summary, the meter follows, a reload keeps the card in place', async () => {
    await newChat(page, 'text');
    // Long replies, so a summary is shorter than what it covers.
    for (const n of [150, 160, 170]) await sendAndWait(page, `/slow ${n} 1`, `word${n}`);
    const id = await currentConversationId(page);

    // The meter: the plugin's last estimate against the window it uses.
    const meter = page.getByTestId('context-meter-text');
    await expect.poll(() => meter.textContent()).toMatch(/^\d+(\.\d)?k? \/ 200k$/);
    const before = await meterUsed(page);
    expect(before).toBeGreaterThan(0);
    // Prices come from the model catalog through providers.list: the cost is shown.
    expect(await page.getByTestId('context-cost').textContent()).toMatch(/^· (<)?\$\d/);

    // While the summary request is held, the status line shows and the button waits.
    srv.control.holdNextSummary('summary');
    const compact = page.getByTestId('compact-now');
    await compact.click();
    const status = page.getByTestId('compaction-status');
    await status.waitFor();
    expect(await status.textContent()).toContain('Compacting context…');
    expect(await compact.isDisabled()).toBe(true);
    await shot(page, 'compaction-in-progress');
    srv.control.release('summary');
    await status.waitFor({ state: 'detached' });

    const card = page.getByTestId('checkpoint-card');
    await card.waitFor();
    expect(await card.count()).toBe(1);
    expect(await card.getByTestId('checkpoint-summary').count()).toBe(0);
    expect(await card.locator('.checkpoint-title').textContent()).toBe('Context checkpoint');
    expect(await card.getByTestId('checkpoint-covered').textContent()).toMatch(/^\d+ messages summarized$/);
    expect(await card.getByTestId('checkpoint-author').textContent()).toBe('claude_code · claude-sonnet-4-6');
    expect(await card.getByTestId('checkpoint-tokens').textContent()).toMatch(/^\S+ → \S+ tokens$/);
    const tokensAfter = Number(await card.getAttribute('data-tokens-after'));
    expect(tokensAfter).toBeLessThan(Number(await card.getAttribute('data-tokens-before')));
    // The meter follows the compaction.
    await expect.poll(() => meterUsed(page)).toBe(tokensAfter);
    expect(await compact.isDisabled()).toBe(false);

    // The summary request was an ordinary Messages API call with the checkpoint prompt.
    const summaryReq = srv.control.requests.find((r) => JSON.stringify(r.body.system ?? '').includes('context checkpoint'));
    expect(summaryReq).toBeTruthy();

    // The card sits before the first message the checkpoint kept (or last, when it kept none).
    const kept = (await card.getAttribute('data-before')) ?? '';
    const place = kept ? await nextItemMessageIds(card) : [];
    if (kept) expect(place).toContain(kept);
    else expect(await card.evaluate((el) => el.nextElementSibling?.getAttribute('data-testid') ?? null)).not.toBe('user-message');

    await card.getByTestId('checkpoint-toggle').click();
    const summary = card.getByTestId('checkpoint-summary');
    await summary.waitFor();
    await summary.locator('h2', { hasText: 'Task' }).waitFor();
    expect(await summary.locator('strong', { hasText: 'echoed' }).count()).toBe(1);
    expect(await summary.textContent()).toContain('/slow 150 1');
    await card.scrollIntoViewIfNeeded();
    await shot(page, 'compaction-card-desktop');
    await card.getByTestId('checkpoint-toggle').click();
    expect(await summary.count()).toBe(0);

    // Covered messages cannot be edited and resent any more; kept ones still can.
    const users = page.getByTestId('user-message');
    expect(await users.first().getByTestId('edit-message').count()).toBe(0);

    // A reload brings the card back, collapsed, at the same place; the meter too.
    await page.reload();
    await waitConnected(page);
    await page.getByTestId('checkpoint-card').waitFor();
    const again = page.getByTestId('checkpoint-card');
    expect(await again.count()).toBe(1);
    expect(await again.getAttribute('data-before')).toBe(kept);
    expect(await again.getByTestId('checkpoint-summary').count()).toBe(0);
    if (kept) expect(await nextItemMessageIds(again)).toEqual(place);
    await expect.poll(() => meterUsed(page)).toBe(tokensAfter);
    expect(await currentConversationId(page)).toBe(id);

    // The conversation goes on: the next reply lands after the card, the meter takes the new estimate.
    await sendAndWait(page, 'hello four', 'Echo: hello four');
    const items = await page.locator('.transcript-inner > *').evaluateAll((els) => els.map((e) => e.getAttribute('data-testid')));
    expect(items.indexOf('checkpoint-card')).toBeLessThan(items.lastIndexOf('user-message'));
    await expect.poll(() => meterUsed(page)).not.toBe(tokensAfter);

    await page.setViewportSize({ width: 390, height: 780 });
    await page.getByTestId('checkpoint-card').scrollIntoViewIfNeeded();
    await shot(page, 'compaction-card-390');
    // At phone width the composer (meter and button included) fits without a horizontal scroll.
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    const box = await page.getByTestId('context-meter').boundingBox();
    expect(box && box.x + box.width).toBeLessThanOrEqual(390);
    await page.getByTestId('checkpoint-toggle').click();
    await page.getByTestId('checkpoint-summary').waitFor();
    await shot(page, 'compaction-card-390-open');
    await page.setViewportSize({ width: 1280, height: 820 });
    await page.evaluate(() => (document.documentElement.dataset.theme = 'dark'));
    await page.getByTestId('checkpoint-card').scrollIntoViewIfNeeded();
    await shot(page, 'compaction-card-desktop-dark');
    await page.evaluate(() => (document.documentElement.dataset.theme = 'light'));
    expect(errors).toEqual([]);
  });

  it('Compact now waits while a reply runs, and a failed compaction says why', async () => {
    await newChat(page, 'tools');
    await send(page, '/gate hold');
    await srv.control.reached('hold');
    expect(await page.getByTestId('compact-now').isDisabled()).toBe(true);
    srv.control.release('hold');
    await lastReply(page).getByText('After the gate.').waitFor();
    await waitIdle(page);

    // The mock answers this conversation's summary with something unusable, and there is no tool output to prune.
    await newChat(page, 'text');
    // Long enough to be worth summarizing (a conversation of a few words has nothing to compact).
    await sendAndWait(page, `/nosummary one ${'filler words to summarize '.repeat(60)}`, /^Echo: \/nosummary one/);
    await sendAndWait(page, 'two', 'Echo: two');
    await page.getByTestId('compact-now').click();
    const notice = page.getByTestId('compaction-notice');
    await notice.waitFor();
    expect(await notice.getAttribute('data-kind')).toBe('error');
    expect(await notice.textContent()).toMatch(/Compacting the context failed: .*summary/);
    expect(await page.getByTestId('checkpoint-card').count()).toBe(0);
    await shot(page, 'compaction-failed-notice');
    await notice.getByTestId('compaction-notice-dismiss').click();
    expect(await notice.count()).toBe(0);
    expect(errors).toEqual([]);
  });

  it('a reply that outgrows the context is compacted mid-stream and continues after a muted note', async () => {
    await newChat(page, 'text');
    await page.getByTestId('model-picker').selectOption({ label: 'Claude Haiku 4.5' });
    const first = `first turn ${'with words worth a summary '.repeat(60)}`;
    await sendAndWait(page, first, /^Echo: first turn/);
    // 2500 words do not fit the 3000-token window: the kernel stops the reply, compacts, and asks the model to go on.
    await send(page, '/slow 2500 1');
    await page.locator('[data-testid="checkpoint-card"][data-trigger="mid-stream"]').waitFor({ timeout: 20_000 });
    await lastReply(page).getByText('Echo: Your previous reply was cut off').waitFor({ timeout: 20_000 });
    // Live, the continuation comes after the cards (and after the cut-off reply, kept as it was).
    const order = () => page.locator('.transcript-inner > *').evaluateAll((els) => els.map((e) => e.getAttribute('data-testid')));
    const live = await order();
    expect(live.lastIndexOf('checkpoint-card')).toBeLessThan(live.lastIndexOf('assistant-message'));
    expect(live.filter((t) => t === 'checkpoint-card').length).toBeGreaterThanOrEqual(1);
    await waitIdle(page);
    // The kernel's "continue" turn is stored, not announced: it shows once the list says history grew.
    const note = page.getByTestId('synthetic-continue');
    await note.waitFor();
    expect(await note.textContent()).toBe('continued after a context checkpoint');
    const typed = await page.getByTestId('user-text').allTextContents();
    expect(typed.map((t) => t.trim())).toEqual([first.trim(), '/slow 2500 1']);
    await page.reload();
    await waitConnected(page);
    await page.getByTestId('synthetic-continue').waitFor();
    expect(await page.getByTestId('user-text').allTextContents()).toEqual(typed);
    // After the reload the cards sit before the messages they kept: the note follows the last one.
    const stored = await order();
    expect(stored.indexOf('synthetic-continue')).toBeGreaterThan(stored.lastIndexOf('checkpoint-card'));
    expect(stored.slice(0, stored.indexOf('synthetic-continue')).filter((t) => t === 'checkpoint-card').length).toBe(stored.filter((t) => t === 'checkpoint-card').length);
    await page.getByTestId('synthetic-continue').scrollIntoViewIfNeeded();
    await shot(page, 'compaction-mid-stream');
    await page.getByTestId('model-picker').selectOption('');
    expect(errors).toEqual([]);
  });
});
