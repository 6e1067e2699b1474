/**
 * Issue 18 items 9, 11 and 12 in a real browser: export a whole conversation (every page, not
 * only those loaded) as Markdown and JSON and copy a reply; pin conversations (a Pinned group at
 * the top, kept over a reload, synced to another tab) and search message text (snippet, opens
 * the conversation, hostile queries harmless); the diff of what Write and Edit changed, in the
 * tool trace and in the edited-files list. At desktop width and at 390 px.
 */
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { hasChromium, newContext, screenshot } from './helpers/browser.js';
import { conversationItem, currentConversationId, lastReply, newChat, openApp, sendAndWait, waitConnected } from './helpers/app.js';
import type { E2EServer } from './helpers/e2e-server.js';
import { openBrowserSession } from './helpers/session.js';

describe.skipIf(!hasChromium)('WebUI organize: export, pins, search, diffs (e2e)', () => {
  let srv: E2EServer;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let errors: string[];
  let diffConversation = '';

  beforeAll(async () => {
    // Snapshots of 4 messages: an export must fetch the older pages itself.
    ({ srv, browser, context, page, errors } = await openBrowserSession({ clipboard: true, server: { settings: { title: { enabled: false }, gateway: { snapshotMessages: 4 } } } }));
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await srv?.close();
  });

  async function download(p: Page, testid: string): Promise<string> {
    await p.getByTestId('export-button').click();
    const [file] = await Promise.all([p.waitForEvent('download'), p.getByTestId(testid).click()]);
    return fs.readFileSync((await file.path())!, 'utf8');
  }

  it('shows what Write and Edit changed as a diff, in the trace and the edited files', async () => {
    await newChat(page, 'tools', srv.workdir);
    await sendAndWait(page, '/diff', 'Diffs done.');
    diffConversation = await currentConversationId(page);
    const reply = lastReply(page);
    const edit = reply.locator('[data-testid="tool-call"][data-tool-name="Edit"]');
    await edit.getByTestId('tool-call-toggle').click();
    const view = edit.getByTestId('diff-view');
    await view.waitFor();
    expect(await view.getByTestId('diff-added').textContent()).toBe('+2');
    expect(await view.getByTestId('diff-removed').textContent()).toBe('−1');
    const rows = await view.getByTestId('diff-line').evaluateAll((els) => els.map((e) => [e.getAttribute('data-kind'), ...[...e.querySelectorAll('td')].map((td) => td.textContent ?? '')]));
    // Three lines of context on each side, numbered as in the file.
    expect(rows[0]).toEqual(['ctx', '3', '3', ' ', 'note 3']);
    expect(rows.find((r) => r[0] === 'del')).toEqual(['del', '6', '', '−', 'note 6']);
    expect(rows.filter((r) => r[0] === 'add').map((r) => [r[2], r[4]])).toEqual([
      ['6', 'note six'],
      ['7', 'note six and a half'],
    ]);
    // Collapsible.
    await view.getByTestId('diff-toggle').click();
    expect(await view.getByTestId('diff-line').count()).toBe(0);
    await view.getByTestId('diff-toggle').click();
    await screenshot(page, 'organize-diff-trace');

    // The edited-files list opens to every change of the file, in order.
    // Opened again while it is still closed: a click that landed while the list re-rendered at the
    // reply's end (seen in the full suite only) is not a missing diff.
    const toggle = reply.getByTestId('edited-file-toggle');
    const views = reply.getByTestId('edited-files').getByTestId('diff-view');
    await expect.poll(async () => ((await views.count()) === 0 && (await toggle.click()), views.count()), { timeout: 10_000, interval: 1000 }).toBe(3);
    expect(await views.locator('.diff-tool').allTextContents()).toEqual(['Write', 'Edit', 'Write']);
    // The second Write: the first line changed, the Edit undone (two lines back to one), the last line gone.
    expect(await views.nth(2).getByTestId('diff-added').textContent()).toBe('+2');
    expect(await views.nth(2).getByTestId('diff-removed').textContent()).toBe('−4');
    await reply.getByTestId('edited-files').scrollIntoViewIfNeeded();
    await screenshot(page, 'organize-diff-edited-files');
  });

  it('exports every page of the conversation as Markdown and as JSON', async () => {
    for (const t of ['first follow-up', 'second follow-up', 'third follow-up']) await sendAndWait(page, t, `Echo: ${t}`);
    // Reloaded, the transcript holds only the newest page.
    await page.reload();
    await waitConnected(page);
    await lastReply(page).getByText('Echo: third follow-up').waitFor();
    expect(await page.getByText('Writing notes.').count()).toBe(0);

    const md = await download(page, 'export-md');
    expect(md).toMatch(/^# /);
    expect(md).toContain('## User\n\n/diff');
    expect(md).toContain('Writing notes.');
    expect(md).toContain('**Tool call: Write**');
    expect(md).toContain('**Result of Edit**');
    expect(md).toContain('Echo: third follow-up');
    expect(md).toContain('Files changed: `notes.txt` (write)');

    const json = JSON.parse(await download(page, 'export-json')) as { format: string; conversation: { id: string; messageCount: number }; messages: Array<{ role: string; ordinal: number; content: unknown[] }> };
    expect(json.format).toBe('liveagent-conversation');
    expect(json.conversation.id).toBe(diffConversation);
    expect(json.messages.length).toBe(json.conversation.messageCount);
    expect(json.messages.map((m) => m.ordinal)).toEqual(json.messages.map((_, i) => i + 1));
    // Lossless: the tool results keep their structured details.
    const results = json.messages.filter((m) => m.role === 'tool').flatMap((m) => m.content as Array<{ details?: { diff?: unknown } }>);
    expect(results.every((r) => r.details?.diff)).toBe(true);
    await page.getByTestId('export-button').click();
    await page.getByTestId('export-menu').waitFor();
    await screenshot(page, 'organize-export-menu');
    await page.keyboard.press('Escape');
  });

  it('copies a whole reply as its Markdown source', async () => {
    await newChat(page);
    await sendAndWait(page, '/code', 'Done.');
    await lastReply(page).hover();
    await lastReply(page).getByTestId('copy-reply').click();
    await lastReply(page).getByTestId('copy-reply').getByText('Copied').waitFor();
    const copied = await page.evaluate(() => navigator.clipboard.readText());
    expect(copied).toContain('## Plan');
    expect(copied).toContain('- first **bold** item');
    expect(copied).toContain('```ts\nconst answer: number = 42;');
  });

  it('pins a conversation to a Pinned group, kept over a reload and synced to another tab', async () => {
    const other = await context.newPage();
    try {
      await openApp(other, srv.appUrl);
      const item = conversationItem(page, diffConversation);
      await item.hover();
      await item.getByTestId('pin-conversation').click();
      const firstGroup = () => page.getByTestId('conversation-group').first().getAttribute('data-group');
      await expect.poll(firstGroup).toBe('Pinned');
      expect(await page.getByTestId('conversation-item').first().getAttribute('data-id')).toBe(diffConversation);
      // The other tab hears of it from the server.
      await expect.poll(() => conversationItem(other, diffConversation).getAttribute('data-pinned')).toBe('true');
      expect(await other.getByTestId('conversation-group').first().getAttribute('data-group')).toBe('Pinned');
      await page.reload();
      await waitConnected(page);
      await expect.poll(() => conversationItem(page, diffConversation).getAttribute('data-pinned')).toBe('true');
      await screenshot(page, 'organize-pinned');
      // Unpin: back among the days.
      await conversationItem(other, diffConversation).hover();
      await conversationItem(other, diffConversation).getByTestId('pin-conversation').click();
      await expect.poll(() => conversationItem(page, diffConversation).getAttribute('data-pinned')).toBe(null);
      expect(await page.locator('[data-testid="conversation-group"][data-group="Pinned"]').count()).toBe(0);
      // Pinned again for the phone screenshots.
      await conversationItem(page, diffConversation).hover();
      await conversationItem(page, diffConversation).getByTestId('pin-conversation').click();
      await expect.poll(() => conversationItem(other, diffConversation).getAttribute('data-pinned')).toBe('true');
    } finally {
      await other.close();
    }
  });

  it('search matches message text, shows a snippet and opens the conversation; hostile queries are harmless', async () => {
    await newChat(page);
    await sendAndWait(page, 'the quartz xylophone plays in the hall of mirrors tonight', 'Echo: the quartz');
    const wanted = await currentConversationId(page);
    await newChat(page);
    const search = page.getByTestId('conversation-search');
    await search.fill('XYLOPHONE hall');
    await expect.poll(() => page.getByTestId('conversation-item').count()).toBe(1);
    const hit = conversationItem(page, wanted);
    expect(await hit.getByTestId('conversation-snippet').textContent()).toContain('quartz xylophone plays in the hall');
    await screenshot(page, 'organize-search-snippet');
    await hit.locator('.conv-open').click();
    await expect.poll(() => currentConversationId(page)).toBe(wanted);
    for (const q of ['"unbalanced (', 'NEAR(a b', '*', '"', 'a OR', ') AND (']) {
      await search.fill(q);
      await page.waitForTimeout(250);
    }
    await search.fill('"xylophone"');
    await expect.poll(() => page.getByTestId('conversation-item').count()).toBe(0);
    await search.fill('xylophone*');
    await expect.poll(() => page.getByTestId('conversation-empty').count()).toBe(1);
    await search.fill('');
    expect(await page.getByTestId('conversation-error').count()).toBe(0);
    expect(errors).toEqual([]);
  });

  it('at 390 px: the export menu, the diff and the pinned list fit', async () => {
    const ctx = await newContext(browser, { viewport: { width: 390, height: 844 }, hasTouch: true, isMobile: true });
    const phone = await ctx.newPage();
    try {
      await phone.goto(srv.appUrl);
      await phone.getByTestId('sidebar-open').click();
      await conversationItem(phone, diffConversation).waitFor();
      expect(await phone.getByTestId('conversation-group').first().getAttribute('data-group')).toBe('Pinned');
      const pin = (await conversationItem(phone, diffConversation).getByTestId('pin-conversation').boundingBox())!;
      expect(pin.x + pin.width).toBeLessThanOrEqual(390);
      await screenshot(phone, 'organize-390-list');
      await conversationItem(phone, diffConversation).locator('.conv-open').click();
      await phone.getByText('Echo: third follow-up').waitFor();
      await phone.getByTestId('export-button').click();
      const menu = (await phone.getByTestId('export-menu').boundingBox())!;
      expect(menu.x).toBeGreaterThanOrEqual(0);
      expect(menu.x + menu.width).toBeLessThanOrEqual(390);
      await screenshot(phone, 'organize-390-export');
      await phone.getByTestId('export-button').click();
      // Scrolled back to the /diff reply (older pages load at the top), the diff stays inside the screen.
      for (let i = 0; i < 10 && (await phone.getByTestId('older-messages').count()); i++) {
        await phone.getByTestId('transcript').evaluate((el) => (el.scrollTop = 0));
        await phone.waitForTimeout(200);
      }
      await phone.getByTestId('edited-file-toggle').first().click();
      const view = phone.getByTestId('edited-files').getByTestId('diff-view').nth(1);
      await view.scrollIntoViewIfNeeded();
      await screenshot(phone, 'organize-390-diff');
      const box = (await view.boundingBox())!;
      expect(box.x + box.width).toBeLessThanOrEqual(390);
      expect(await phone.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    } finally {
      await ctx.close();
    }
  });
});
