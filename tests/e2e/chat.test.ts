/**
 * Browser tests of the chat surface: conversation list, composer, streaming and stop, the queue,
 * edit-and-resend and errors. One Chromium and one page for the file; each test starts a new chat.
 */
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { conversationItem, currentConversationId, lastReply, makePng, newChat, send, sendAndWait, waitIdle } from './helpers/app.js';
import { hasChromium, tmpFile } from './helpers/browser.js';
import type { E2EServer } from './helpers/e2e-server.js';
import { openBrowserSession } from './helpers/session.js';

describe.skipIf(!hasChromium)('WebUI chat (e2e)', () => {
  let srv: E2EServer;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let errors: string[];

  beforeAll(async () => {
    ({ srv, browser, context, page, errors } = await openBrowserSession({ clipboard: true }));
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await srv?.close();
  });

  it('send, stream and stop', async () => {
    await newChat(page);
    await send(page, '/slow 300 25');
    const text = lastReply(page).getByTestId('assistant-text');
    await expect.poll(() => text.textContent(), { timeout: 5000 }).toContain('word5 ');
    // Still streaming: the caret class is on, the stop button shows, the list marks the run.
    await expect(page.locator('.md.streaming').count()).resolves.toBe(1);
    const id = await currentConversationId(page);
    await conversationItem(page, id).getByTestId('conversation-running').waitFor();
    await page.getByTestId('stop-button').click();
    await waitIdle(page);
    await page.getByTestId('run-notice').filter({ hasText: 'Stopped.' }).waitFor();
    const stopped = (await text.textContent()) ?? '';
    expect(stopped).toContain('word5 ');
    expect(stopped).not.toContain('word300');
    expect(await page.locator('.md.streaming').count()).toBe(0);
    // The conversation goes on after a stop.
    await sendAndWait(page, 'are you there?', 'Echo: are you there?');
    expect(errors).toEqual([]);
  });

  it('Composer: model picker, execution mode, workdir, attachments, Enter sends and Shift+Enter breaks the line', async () => {
    await newChat(page);
    const picker = page.getByTestId('model-picker');
    const labels = await picker.locator('option').allTextContents();
    expect(labels.map((l) => l.trim())).toEqual(expect.arrayContaining(['Claude Sonnet 4.6', 'Claude Haiku 4.5']));
    expect(labels[0]).toContain('Default');
    await picker.selectOption({ label: 'Claude Haiku 4.5' });
    await page.getByTestId('mode-text').click();
    await expect(page.getByTestId('mode-text').getAttribute('aria-checked')).resolves.toBe('true');

    const box = page.getByTestId('composer-input');
    await box.fill('line one');
    await box.press('Shift+Enter');
    await box.pressSequentially('line two');
    expect(await box.inputValue()).toBe('line one\nline two');
    expect(await page.getByTestId('user-message').count()).toBe(0);

    // Files go with tools modes only (the model reads them by path): attaching switches back.
    await page.getByTestId('mode-tools').click();
    await page.getByTestId('file-input').setInputFiles([tmpFile(srv.home, 'pixel.png', makePng(8, 8, [220, 40, 40])), tmpFile(srv.home, 'notes.txt', 'remember the milk')]);
    await expect.poll(() => page.getByTestId('attachment').count()).toBe(2);
    const preview = page.getByTestId('attachment-preview');
    await preview.waitFor();
    await page.waitForFunction(() => (document.querySelector('[data-testid="attachment-preview"]') as HTMLImageElement | null)?.naturalWidth === 8);
    // Enter sends once every upload is in (Send stays disabled meanwhile).
    await expect.poll(() => page.locator('[data-testid="attachment"][data-status="uploading"]').count()).toBe(0);
    await expect.poll(() => page.getByTestId('send-button').isEnabled()).toBe(true);
    await box.press('Enter');
    await lastReply(page).getByText('Echo: line one line two [images: 1] [files: notes.txt]').waitFor();
    await waitIdle(page);
    expect(await page.getByTestId('attachment').count()).toBe(0);
    const user = page.getByTestId('user-message').last();
    await user.getByTestId('user-image').waitFor();
    await user.getByTestId('user-file').filter({ hasText: 'notes.txt' }).waitFor();
    // The turn's own request: the first to carry it (the title request that follows quotes it too).
    const req = srv.control.requests.map((r) => r.body).find((b) => JSON.stringify(b.messages ?? []).includes('line two'))!;
    expect(req.model).toBe('claude-haiku-4-5');
    expect((req.tools ?? []).map((t: { name: string }) => t.name)).toContain('Read'); // tools mode: the model may Read the files

    // Tools mode with a workdir: the tool sees the folder.
    await page.getByTestId('mode-tools').click();
    await page.getByTestId('workdir-button').click();
    await page.getByTestId('workdir-input').fill('/tmp');
    await box.focus();
    await sendAndWait(page, '/pwd', 'Reported the folder.');
    await lastReply(page).getByTestId('tool-call-toggle').click();
    await expect(lastReply(page).getByTestId('tool-result').textContent()).resolves.toMatch(/^\/tmp\n/); // Bash `pwd`
    expect(srv.control.requests.at(-1)!.body.tools.map((t: { name: string }) => t.name)).toContain('Bash');
  });

  it('Conversation list: new, rename, delete, search', async () => {
    await newChat(page);
    await sendAndWait(page, 'alpha apples', 'Echo: alpha apples');
    const first = await currentConversationId(page);
    await page.keyboard.press('Control+Shift+O'); // new chat from the keyboard
    await page.getByTestId('welcome').waitFor();
    await sendAndWait(page, 'beta bananas', 'Echo: beta bananas');
    const second = await currentConversationId(page);
    expect(second).not.toBe(first);
    // Untitled conversations show what the user said first.
    await conversationItem(page, first).getByText('alpha apples').waitFor();

    await conversationItem(page, first).hover();
    await conversationItem(page, first).getByTestId('rename-conversation').click();
    await page.getByTestId('rename-input').fill('Fruit talk');
    await page.getByTestId('rename-input').press('Enter');
    await conversationItem(page, first).getByTestId('conversation-title').filter({ hasText: 'Fruit talk' }).waitFor();

    await page.keyboard.press('Control+k');
    await expect(page.evaluate(() => document.activeElement?.getAttribute('data-testid'))).resolves.toBe('conversation-search');
    await page.keyboard.type('bananas');
    await expect.poll(() => page.getByTestId('conversation-item').count()).toBe(1);
    await conversationItem(page, second).waitFor();
    await page.keyboard.press('Escape');
    await expect.poll(() => page.getByTestId('conversation-item').count()).toBeGreaterThanOrEqual(2);

    await conversationItem(page, first).getByTestId('conversation-title').click();
    await page.getByTestId('chat-title').filter({ hasText: 'Fruit talk' }).waitFor();
    await conversationItem(page, first).hover();
    await conversationItem(page, first).getByTestId('delete-conversation').click();
    await page.getByTestId('confirm-delete').click();
    await conversationItem(page, first).waitFor({ state: 'detached' });
    await page.getByTestId('welcome').waitFor(); // the open conversation was deleted
    const list = await srv.server.kernel.runtime.providers(); // the server is still healthy
    expect(list.length).toBeGreaterThan(0);
  });

  it('Queue: messages sent during a run wait in a visible queue (remove, reorder, edit, send now)', async () => {
    await newChat(page);
    await send(page, '/gate q1');
    await lastReply(page).getByText('Before the gate.').waitFor();
    for (const t of ['first', 'second', 'third']) await send(page, t);
    const texts = () => page.getByTestId('queue-text').allTextContents();
    await expect.poll(texts).toEqual(['first', 'second', 'third']);
    expect(await page.getByTestId('send-button').textContent()).toContain('Queue');

    await page.getByTestId('queue-item').first().getByTestId('queue-down').click();
    await expect.poll(texts).toEqual(['second', 'first', 'third']);
    await page.getByTestId('queue-item').nth(2).getByTestId('queue-edit').click();
    await page.getByTestId('queue-edit-input').fill('third, edited');
    await page.getByTestId('queue-edit-input').press('Enter');
    await expect.poll(texts).toEqual(['second', 'first', 'third, edited']);
    await page.getByTestId('queue-item').nth(1).getByTestId('queue-remove').click();
    await expect.poll(texts).toEqual(['second', 'third, edited']);

    // Send now: the gated run stops, the item runs next, then the rest of the queue.
    await page.getByTestId('queue-item').nth(1).getByTestId('queue-send-now').click();
    await page.getByText('Echo: third, edited').waitFor();
    await page.getByText('Echo: second').waitFor();
    await waitIdle(page);
    await page.getByTestId('queue-panel').waitFor({ state: 'detached' });
    const users = await page.getByTestId('user-text').allTextContents();
    expect(users).toEqual(['/gate q1', 'third, edited', 'second']);
    srv.control.release('q1');
  });

  it('edit and resend', async () => {
    await newChat(page);
    await sendAndWait(page, 'original question', 'Echo: original question');
    await sendAndWait(page, 'follow up', 'Echo: follow up');
    const firstUser = page.getByTestId('user-message').first();
    await firstUser.hover();
    await firstUser.getByTestId('edit-message').click();
    await page.getByTestId('edit-input').fill('edited question');
    await page.getByTestId('edit-input').press('Enter');
    // A later message of the user's goes too: the UI asks first, saying how many.
    await page.getByTestId('confirm-resend').click();
    await lastReply(page).getByText('Echo: edited question').waitFor();
    await waitIdle(page);
    await expect.poll(() => page.getByTestId('user-text').allTextContents()).toEqual(['edited question']);
    expect(await page.getByText('Echo: follow up').count()).toBe(0);
    // Up in the empty composer opens the last message for editing; Escape leaves it.
    await page.getByTestId('composer-input').press('ArrowUp');
    expect(await page.getByTestId('edit-input').inputValue()).toBe('edited question');
    await page.getByTestId('edit-input').press('Escape');
    await page.getByTestId('edit-input').waitFor({ state: 'detached' });
    // The server truncated its history too: a reload shows the same.
    await page.reload();
    await lastReply(page).getByText('Echo: edited question').waitFor();
    expect(await page.getByTestId('user-text').allTextContents()).toEqual(['edited question']);
  });

  it('Editing and errors: edit a user message and resend it; provider errors are shown clearly with a retry button', async () => {
    await newChat(page);
    await send(page, '/fail-auth');
    const err = page.getByTestId('run-error');
    await err.waitFor();
    await err.getByText('The provider refused the API key').waitFor();
    expect(await err.getByTestId('run-error-message').textContent()).toContain('invalid x-api-key');
    expect(await err.textContent()).toContain('HTTP 401');
    await waitIdle(page);

    await newChat(page);
    await send(page, '/fail-once please');
    await err.getByText('The provider is unavailable').waitFor();
    await err.getByTestId('retry').click();
    await lastReply(page).getByText('Recovered on retry.').waitFor();
    await waitIdle(page);
    expect(await page.getByTestId('run-error').count()).toBe(0);
    expect(await page.getByTestId('user-text').allTextContents()).toEqual(['/fail-once please']);

    // The edit itself: an edited message replaces the failed one.
    await page.getByTestId('user-message').first().hover();
    await page.getByTestId('edit-message').click();
    await page.getByTestId('edit-input').fill('plain now');
    await page.getByTestId('edit-submit').click();
    await lastReply(page).getByText('Echo: plain now').waitFor();
    expect(await page.getByTestId('user-text').allTextContents()).toEqual(['plain now']);
    expect(errors).toEqual([]);
  });
});
