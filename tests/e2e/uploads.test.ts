/**
 * Browser tests of uploads, previews and resend against the real server host: a picked PNG
 * uploads with a progress bar (held at the network until the test lets it through), shows its
 * thumbnail, goes to the model as an image, opens in the lightbox (keyboard and click), is resent
 * alone and regenerated; edit-and-resend asks before it removes later turns; drop, paste, cancel
 * and text mode; the chip row fits at 390 px. Screenshots go to /tmp/la-uploads-shots.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, Page, Route } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Plugin } from '../../plugin-api.js';
import { fakeProvider } from '../helpers/fake-provider.js';
import { lastReply, makePng, newChat, send, waitConnected, waitIdle } from './helpers/app.js';
import { hasChromium, tmpFile } from './helpers/browser.js';
import type { E2EServer } from './helpers/e2e-server.js';
import { openBrowserSession } from './helpers/session.js';

const SHOTS = '/tmp/la-uploads-shots';
const LIMIT = 64 * 1024;

interface WireBlock {
  type: string;
  text?: string;
  source?: { type: string; media_type?: string; data?: string };
}
interface WireMessage {
  role: string;
  content: string | WireBlock[];
}

/** The model requests of runs (a tools-mode run offers tools; title and summary requests do not). */
const runRequests = (srv: E2EServer) => srv.control.requests.filter((r) => Array.isArray(r.body?.tools) && r.body.tools.length > 0);

/** The blocks of the last user message of the newest run request. */
function lastUserBlocks(srv: E2EServer): WireBlock[] {
  const req = runRequests(srv).at(-1);
  const messages = (req?.body?.messages ?? []) as WireMessage[];
  const user = [...messages].reverse().find((m) => m.role === 'user' && (typeof m.content === 'string' || m.content.some((b) => b.type !== 'tool_result')));
  if (!user) return [];
  return typeof user.content === 'string' ? [{ type: 'text', text: user.content }] : user.content;
}

async function shot(page: Page, name: string): Promise<void> {
  fs.mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: `${SHOTS}/${name}.png` });
}

/**
 * A provider that looks at pictures: asked in a run, it loads two images with the real Image
 * tool, then answers; anything else (a title request) gets text.
 */
const picturesProvider = (workdir: () => string): Plugin => ({
  name: 'test-pictures-provider',
  apply: (ctx) =>
    void ctx.registerProvider(
      fakeProvider((req) => {
        const last = req.messages.at(-1);
        if (!req.tools.length || last?.role === 'tool') return { text: 'Here are both pictures.' };
        return {
          toolCalls: [
            { id: 'img_red', name: 'Image', input: { file_path: path.join(workdir(), 'red.png') } },
            { id: 'img_green', name: 'Image', input: { file_path: path.join(workdir(), 'green.png') } },
          ],
        };
      }, 'pictures'),
    ),
});

/** A new chat in tools mode with an empty composer (files stay in the composer across chats, as text does). */
async function freshChat(page: Page): Promise<void> {
  await newChat(page, 'tools');
  while ((await page.getByTestId('attachment').count()) > 0) await page.getByTestId('attachment-remove').first().click();
  await page.getByTestId('composer-input').fill('');
}

/** Hold upload requests at the network until released (the real server answers them after). */
function holdUploads(page: Page) {
  const held: Route[] = [];
  const handler = (route: Route) => void held.push(route);
  return {
    held,
    async start() {
      await page.route('**/api/uploads?**', handler);
    },
    async releaseAll() {
      for (const r of held.splice(0)) await r.continue();
      await page.unroute('**/api/uploads?**', handler);
    },
  };
}

describe.skipIf(!hasChromium)('WebUI uploads (e2e)', () => {
  let srv: E2EServer;
  let browser: Browser;
  let page: Page;
  let errors: string[];
  const png = makePng(96, 64, [40, 120, 220]);
  // The browser logs every refused request itself; the refusals these tests provoke are expected.
  const appErrors = () => errors.filter((e) => !/status of 413/.test(e));

  beforeAll(async () => {
    // A small upload limit, so a "too large" refusal is cheap to provoke.
    // The workdir is known once the server made its home: the provider reads it when asked.
    ({ srv, browser, page, errors } = await openBrowserSession({ server: { settings: { uploads: { maxBytes: LIMIT } }, extraPlugins: [picturesProvider(() => srv.workdir)] } }));
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await srv?.close();
  });

  it('upload with progress, preview, send (the model gets the image), lightbox, resend with attachments only, regenerate', async () => {
    await freshChat(page);
    const gate = holdUploads(page);
    await gate.start();
    await page.getByTestId('file-input').setInputFiles(tmpFile(srv.home, 'blue.png', png));
    const chip = page.getByTestId('attachment');
    await chip.waitFor();
    // Uploading: a progress bar, and Send waits for it.
    expect(await chip.getAttribute('data-status')).toBe('uploading');
    await chip.getByTestId('attachment-progress').waitFor();
    await page.getByTestId('composer-input').fill('what is in this picture?');
    expect(await page.getByTestId('send-button').isDisabled()).toBe(true);
    expect(await page.getByTestId('send-button').getAttribute('title')).toContain('finish uploading');
    await expect.poll(() => gate.held.length).toBe(1);
    const req = gate.held[0]!.request();
    expect(req.method()).toBe('POST');
    expect(req.url()).toContain('name=blue.png');
    expect(req.headers()['authorization']).toBe(`Bearer ${srv.token}`);
    expect(req.headers()['content-type']).toBe('image/png');
    await shot(page, 'desktop-uploading');
    await gate.releaseAll();

    await expect.poll(() => chip.getAttribute('data-status')).toBe('done');
    await page.waitForFunction(() => (document.querySelector('[data-testid="attachment-preview"]') as HTMLImageElement | null)?.naturalWidth === 96);
    expect(await chip.getByTestId('attachment-status').textContent()).toMatch(/PNG · \d+ B/);
    expect(await page.getByTestId('send-button').isDisabled()).toBe(false);
    await shot(page, 'desktop-uploaded');

    const before = runRequests(srv).length;
    await page.getByTestId('composer-input').press('Enter');
    await lastReply(page).getByText('Echo:').first().waitFor();
    await waitIdle(page);
    expect(await page.getByTestId('attachment').count()).toBe(0);
    // The model received the picture itself, as an image block with the PNG's bytes.
    expect(runRequests(srv).length).toBeGreaterThan(before);
    const blocks = lastUserBlocks(srv);
    const image = blocks.find((b) => b.type === 'image');
    expect(image?.source?.media_type, JSON.stringify(blocks).slice(0, 1500)).toBe('image/png');
    expect(image?.source?.data).toBe(png.toString('base64'));
    expect(blocks.some((b) => b.type === 'text' && b.text?.includes('what is in this picture?'))).toBe(true);

    // The sent message shows the thumbnail (fetched from GET /api/uploads/<id>).
    const user = page.getByTestId('user-message').last();
    const thumb = user.getByTestId('user-image');
    await thumb.waitFor();
    await page.waitForFunction(() => (document.querySelector('[data-testid="user-message"] [data-testid="user-image"] img') as HTMLImageElement | null)?.naturalWidth === 96);
    await shot(page, 'desktop-sent');
    const uploadId = await thumb.getAttribute('data-upload-id');
    expect(uploadId).toBeTruthy();
    const fetched = await page.evaluate(async ([id, token]) => {
      const r = await fetch(`/api/uploads/${encodeURIComponent(id!)}`, { headers: { Authorization: `Bearer ${token}` } });
      return { status: r.status, size: (await r.arrayBuffer()).byteLength };
    }, [uploadId, srv.token] as const);
    expect(fetched).toEqual({ status: 200, size: png.length });

    // Lightbox: opens on click with focus inside, Tab stays inside, Esc closes and focus returns.
    await thumb.click();
    const box = page.getByTestId('lightbox');
    await box.waitFor();
    expect(await box.getAttribute('role')).toBe('dialog');
    expect(await box.getAttribute('aria-modal')).toBe('true');
    expect(await box.getAttribute('aria-label')).toContain('blue.png');
    await page.waitForFunction(() => (document.querySelector('[data-testid="lightbox-image"]') as HTMLImageElement | null)?.naturalWidth === 96);
    await expect.poll(() => page.evaluate(() => document.activeElement?.getAttribute('data-testid'))).toBe('lightbox-close');
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => !!document.activeElement?.closest('[data-testid="lightbox"]'))).toBe(true);
    await shot(page, 'desktop-lightbox');
    await page.keyboard.press('Escape');
    await box.waitFor({ state: 'detached' });
    expect(await page.evaluate(() => document.activeElement?.getAttribute('data-testid'))).toBe('user-image');
    // A click outside the image closes it too.
    await thumb.click();
    await box.waitFor();
    await page.mouse.click(20, 400);
    await box.waitFor({ state: 'detached' });

    // Resend with the attachments only: no text goes, the image does.
    const sentBefore = runRequests(srv).length;
    await user.hover();
    await user.getByTestId('resend-attachments').click();
    await expect.poll(() => runRequests(srv).length).toBeGreaterThan(sentBefore);
    await waitIdle(page);
    await expect.poll(() => page.getByTestId('user-message').count()).toBe(1);
    expect(await page.getByTestId('user-text').count()).toBe(0);
    await page.getByTestId('user-message').getByTestId('user-image').waitFor();
    const resent = lastUserBlocks(srv);
    expect(resent.find((b) => b.type === 'image')?.source?.data).toBe(png.toString('base64'));
    expect(resent.some((b) => b.type === 'text' && b.text?.includes('what is in this picture?'))).toBe(false);

    // Regenerate the last reply: the same message goes again, one reply stays.
    const beforeRegen = runRequests(srv).length;
    await lastReply(page).getByTestId('regenerate').click();
    await expect.poll(() => runRequests(srv).length).toBeGreaterThan(beforeRegen);
    await waitIdle(page);
    await expect.poll(() => page.getByTestId('assistant-message').count()).toBe(1);
    expect(await page.getByTestId('user-message').count()).toBe(1);
    expect(lastUserBlocks(srv).find((b) => b.type === 'image')?.source?.data).toBe(png.toString('base64'));
    // The server agrees: a reload shows the same.
    await page.reload();
    await page.getByTestId('user-message').getByTestId('user-image').waitFor();
    expect(await page.getByTestId('user-message').count()).toBe(1);

    // Edit: the attachments are in the edit box and can be left out; what is left out is not resent.
    await page.getByTestId('user-message').hover();
    await page.getByTestId('edit-message').click();
    await page.getByTestId('edit-input').fill('no picture this time');
    await page.getByTestId('user-message').getByTestId('user-image').waitFor();
    await shot(page, 'desktop-edit-attachments');
    await page.getByTestId('edit-remove-attachment').click();
    expect(await page.getByTestId('user-message').getByTestId('user-image').count()).toBe(0);
    await page.getByTestId('edit-submit').click();
    await lastReply(page).getByText('Echo: no picture this time').waitFor();
    await waitIdle(page);
    expect(lastUserBlocks(srv).some((b) => b.type === 'image')).toBe(false);
    expect(await page.getByTestId('user-message').getByTestId('user-image').count()).toBe(0);
    expect(appErrors()).toEqual([]);
  });

  it('edit and resend of an earlier message says how many later messages go, and asks first', async () => {
    await freshChat(page);
    await send(page, 'first question');
    await lastReply(page).getByText('Echo: first question').waitFor();
    await waitIdle(page);
    await send(page, 'second question');
    await lastReply(page).getByText('Echo: second question').waitFor();
    await waitIdle(page);
    const first = page.getByTestId('user-message').first();
    await first.hover();
    await first.getByTestId('edit-message').click();
    await page.getByTestId('edit-input').fill('first, edited');
    await page.getByTestId('edit-input').press('Enter');
    const confirm = page.getByTestId('resend-confirm');
    await confirm.waitFor();
    expect(await confirm.getByTestId('resend-confirm-text').textContent()).toBe('Resending removes the 3 later messages (1 of yours, 2 replies).');
    expect(await page.evaluate(() => document.activeElement?.getAttribute('data-testid'))).toBe('confirm-resend');
    await shot(page, 'desktop-resend-confirm');
    // Cancel keeps everything; confirming resends.
    await confirm.getByTestId('cancel-resend').click();
    expect(await page.getByTestId('user-message').count()).toBe(2);
    await page.getByTestId('edit-input').press('Enter');
    await page.getByTestId('confirm-resend').click();
    await lastReply(page).getByText('Echo: first, edited').waitFor();
    await waitIdle(page);
    expect(await page.getByTestId('user-text').allTextContents()).toEqual(['first, edited']);
    // Editing the last message replaces only its own reply: no question.
    await page.getByTestId('user-message').first().hover();
    await page.getByTestId('edit-message').click();
    await page.getByTestId('edit-input').fill('first, again');
    await page.getByTestId('edit-input').press('Enter');
    await lastReply(page).getByText('Echo: first, again').waitFor();
    expect(await page.getByTestId('resend-confirm').count()).toBe(0);
    await waitIdle(page);
  });

  it('drop and paste attach files; cancel stops an upload; text mode refuses files with a hint', async () => {
    await freshChat(page);
    const b64 = png.toString('base64');
    // Drop onto the transcript area.
    await page.evaluate((data) => {
      const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
      const dt = new DataTransfer();
      dt.items.add(new File([bytes], 'dropped.png', { type: 'image/png' }));
      const target = document.querySelector('[data-testid="chat-view"]')!;
      for (const type of ['dragenter', 'dragover', 'drop']) target.dispatchEvent(new DragEvent(type, { dataTransfer: dt, bubbles: true, cancelable: true }));
    }, b64);
    await page.locator('[data-testid="attachment"][data-status="done"]').filter({ hasText: 'dropped.png' }).waitFor();
    expect(await page.getByTestId('drop-overlay').count()).toBe(0);
    // Paste an image into the box (other bytes: the server stores the same bytes once).
    await page.getByTestId('composer-input').evaluate((el, data) => {
      const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
      const dt = new DataTransfer();
      dt.items.add(new File([bytes], 'image.png', { type: 'image/png' }));
      el.dispatchEvent(new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true }));
    }, makePng(20, 20, [250, 200, 0]).toString('base64'));
    await expect.poll(() => page.locator('[data-testid="attachment"][data-status="done"]').count()).toBe(2);
    // The same file again: one chip stays, and the composer says so.
    await page.getByTestId('file-input').setInputFiles(tmpFile(srv.home, 'again.png', png));
    await page.getByTestId('attachment-hint').filter({ hasText: 'again.png is attached already' }).waitFor();
    expect(await page.getByTestId('attachment').count()).toBe(2);
    await page.getByTestId('attachment-hint-dismiss').click();

    // Cancel: an upload held at the network is aborted by its x and leaves no chip.
    const gate = holdUploads(page);
    await gate.start();
    await page.getByTestId('file-input').setInputFiles(tmpFile(srv.home, 'slow.txt', 'some notes'));
    const slow = page.getByTestId('attachment').filter({ hasText: 'slow.txt' });
    await slow.getByTestId('attachment-progress').waitFor();
    await slow.getByTestId('attachment-remove').click();
    await slow.waitFor({ state: 'detached' });
    await gate.releaseAll();
    expect(await page.getByTestId('attachment').count()).toBe(2);

    // Too large: the server refuses it and its reason shows on the chip; Send waits until it goes.
    await page.getByTestId('file-input').setInputFiles(tmpFile(srv.home, 'huge.bin', Buffer.alloc(LIMIT + 1024, 7)));
    const huge = page.locator('[data-testid="attachment"][data-status="error"]');
    await huge.waitFor();
    expect(await huge.getByTestId('attachment-status').textContent()).toMatch(/over the (64(\.0)? KB|65536 bytes) an upload may be/);
    await page.getByTestId('composer-input').fill('with a broken file');
    expect(await page.getByTestId('send-button').isDisabled()).toBe(true);
    expect(await page.getByTestId('send-button').getAttribute('title')).toContain('failed to upload');
    await shot(page, 'desktop-error');
    await huge.getByTestId('attachment-remove').click();
    expect(await page.getByTestId('send-button').isDisabled()).toBe(false);

    // Text mode: attached files block Send with the hint; the clip only explains.
    await page.getByTestId('mode-text').click();
    const hint = page.getByTestId('attachment-hint');
    await hint.waitFor();
    expect(await hint.textContent()).toContain('Tools or Agent-dev mode');
    await page.getByTestId('composer-input').fill('hello');
    expect(await page.getByTestId('send-button').isDisabled()).toBe(true);
    while ((await page.getByTestId('attachment').count()) > 0) await page.getByTestId('attachment-remove').first().click();
    await page.getByTestId('attach-button').click();
    await hint.waitFor();
    expect(await page.getByTestId('attachment').count()).toBe(0);
    await hint.getByTestId('attachment-hint-tools').click();
    await expect(page.getByTestId('mode-tools').getAttribute('aria-checked')).resolves.toBe('true');
    await hint.waitFor({ state: 'detached' });
    await page.getByTestId('composer-input').fill('');
  });

  it("Image-tool images show under their calls and open in the lightbox; the arrow keys go through the reply's images", async () => {
    fs.writeFileSync(path.join(srv.workdir, 'red.png'), makePng(80, 60, [220, 40, 40]));
    fs.writeFileSync(path.join(srv.workdir, 'green.png'), makePng(60, 80, [40, 170, 80]));
    const run = srv.server.kernel.runtime.startRun({ input: [{ type: 'text', text: 'show me the pictures' }], provider: 'pictures', mode: 'tools', workdir: srv.workdir, keepEvents: false });
    const result = await run.result;
    expect(result.status).toBe('completed');
    await page.goto(`${srv.url}/#/c/${run.conversationId}`);
    await page.reload();
    await waitConnected(page);
    await lastReply(page).getByText('Here are both pictures.').waitFor();
    const thumbs = lastReply(page).getByTestId('tool-image');
    await expect.poll(() => thumbs.count()).toBe(2);
    await page.waitForFunction(() => [...document.querySelectorAll('[data-testid="tool-image"] img')].every((i) => (i as HTMLImageElement).naturalWidth > 0));
    await shot(page, 'desktop-tool-images');
    await thumbs.nth(1).click();
    const box = page.getByTestId('lightbox');
    await box.waitFor();
    expect(await box.getByTestId('lightbox-name').textContent()).toBe('green.png');
    expect(await box.getByTestId('lightbox-count').textContent()).toBe('2 / 2');
    await page.keyboard.press('ArrowLeft');
    expect(await box.getByTestId('lightbox-name').textContent()).toBe('red.png');
    await page.waitForFunction(() => (document.querySelector('[data-testid="lightbox-image"]') as HTMLImageElement | null)?.naturalWidth === 80);
    await box.getByTestId('lightbox-next').click();
    expect(await box.getByTestId('lightbox-name').textContent()).toBe('green.png');
    await page.keyboard.press('Escape');
    await box.waitFor({ state: 'detached' });
    expect(appErrors()).toEqual([]);
  });

  it('at 390 px the chip row wraps inside the composer, and the lightbox fits', async () => {
    await freshChat(page);
    await page.setViewportSize({ width: 390, height: 844 });
    try {
      await page.getByTestId('file-input').setInputFiles([
        tmpFile(srv.home, 'a-rather-long-screenshot-name-from-the-phone.png', makePng(120, 90, [200, 60, 60])),
        tmpFile(srv.home, 'second.png', makePng(64, 64, [60, 160, 90])),
        tmpFile(srv.home, 'quarterly-report-final-v3.csv', 'a,b\n1,2\n'),
        tmpFile(srv.home, 'notes.md', '# notes\n'),
        tmpFile(srv.home, 'too-big-video-capture.mov', Buffer.alloc(LIMIT + 1, 1)),
      ]);
      await expect.poll(() => page.locator('[data-testid="attachment"][data-status="done"]').count()).toBe(4);
      await page.locator('[data-testid="attachment"][data-status="error"]').waitFor();
      const fits = await page.evaluate(() => {
        const row = document.querySelector('[data-testid="attachments"]') as HTMLElement;
        const composer = document.querySelector('[data-testid="composer"]') as HTMLElement;
        const c = composer.getBoundingClientRect();
        const chips = [...row.querySelectorAll('[data-testid="attachment"]')].map((el) => el.getBoundingClientRect());
        return {
          rowOverflow: row.scrollWidth - row.clientWidth,
          pageOverflow: document.documentElement.scrollWidth - window.innerWidth,
          outside: chips.filter((r) => r.left < c.left - 0.5 || r.right > c.right + 0.5).length,
          rows: new Set(chips.map((r) => Math.round(r.top))).size,
        };
      });
      expect(fits.rowOverflow).toBeLessThanOrEqual(0);
      expect(fits.pageOverflow).toBeLessThanOrEqual(0);
      expect(fits.outside).toBe(0);
      expect(fits.rows).toBeGreaterThan(1); // it wrapped rather than overflowed
      await shot(page, 'mobile-chips');
      await page.locator('[data-testid="attachment"][data-status="error"]').getByTestId('attachment-remove').click();

      await page.getByTestId('composer-input').fill('two pictures and two files');
      await page.getByTestId('composer-input').press('Enter');
      await lastReply(page).getByText('Echo:').first().waitFor();
      await waitIdle(page);
      const user = page.getByTestId('user-message').last();
      await expect.poll(() => user.getByTestId('user-image').count()).toBe(2);
      await expect.poll(() => user.getByTestId('user-file').count()).toBe(2);
      expect(await user.getByTestId('user-file').first().textContent()).toMatch(/CSV · \d+ B/);
      await user.getByTestId('user-image').first().scrollIntoViewIfNeeded();
      await shot(page, 'mobile-sent');
      const msgOverflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      expect(msgOverflow).toBeLessThanOrEqual(0);

      // Arrow keys step between the message's images.
      await user.getByTestId('user-image').first().click();
      const box = page.getByTestId('lightbox');
      await box.waitFor();
      expect(await box.getByTestId('lightbox-count').textContent()).toBe('1 / 2');
      await page.keyboard.press('ArrowRight');
      expect(await box.getByTestId('lightbox-count').textContent()).toBe('2 / 2');
      expect(await box.getByTestId('lightbox-name').textContent()).toBe('second.png');
      await page.keyboard.press('ArrowRight');
      expect(await box.getByTestId('lightbox-count').textContent()).toBe('1 / 2');
      const img = await box.getByTestId('lightbox-image').boundingBox();
      expect(img!.x).toBeGreaterThanOrEqual(0);
      expect(img!.x + img!.width).toBeLessThanOrEqual(390);
      await shot(page, 'mobile-lightbox');
      await page.keyboard.press('Escape');
      await box.waitFor({ state: 'detached' });
    } finally {
      await page.setViewportSize({ width: 1280, height: 820 });
    }
    expect(appErrors()).toEqual([]);
  });
});
