/** Page helpers shared by the browser tests: drive the app the way a user does. */
import { deflateSync } from 'node:zlib';
import type { Locator, Page } from 'playwright-core';

export async function openApp(page: Page, appUrl: string): Promise<void> {
  await page.goto(appUrl);
  await page.getByTestId('app').waitFor();
  await waitConnected(page);
}

export async function waitConnected(page: Page): Promise<void> {
  await page.locator('.brand-dot.ok').waitFor();
}

/** Start a new conversation with default model, tools mode and no workdir (or the one given). */
export async function newChat(page: Page, mode: 'text' | 'tools' | 'agent-dev' = 'tools', workdir?: string): Promise<void> {
  if (await page.getByTestId('settings-page').isVisible()) await page.getByTestId('settings-close').click();
  await page.getByTestId('new-conversation').click();
  await page.getByTestId('welcome').waitFor();
  await page.getByTestId('model-picker').selectOption('');
  await page.getByTestId(`mode-${mode}`).click();
  const input = page.getByTestId('workdir-input');
  // Emptied, the field folds back into its button.
  if (await input.isVisible()) await input.fill('');
  if (workdir) {
    await page.getByTestId('workdir-button').click();
    await input.fill(workdir);
    await page.getByTestId('composer-input').focus();
  }
}

export async function send(page: Page, text: string): Promise<void> {
  const box = page.getByTestId('composer-input');
  await box.fill(text);
  await box.press('Enter');
}

/** Wait until no run is active in the open conversation. */
export async function waitIdle(page: Page): Promise<void> {
  await page.getByTestId('stop-button').waitFor({ state: 'detached' });
}

export async function sendAndWait(page: Page, text: string, expected: string | RegExp): Promise<void> {
  await send(page, text);
  await lastReply(page).getByText(expected).first().waitFor();
  await waitIdle(page);
}

export function lastReply(page: Page): Locator {
  return page.getByTestId('assistant-message').last();
}

export async function currentConversationId(page: Page): Promise<string> {
  await page.waitForFunction(() => /#\/c\//.test(location.hash));
  return page.evaluate(() => location.hash.replace('#/c/', ''));
}

export function conversationItem(page: Page, id: string): Locator {
  return page.locator(`[data-testid="conversation-item"][data-id="${id}"]`);
}

function crc32(buf: Buffer): number {
  let c = ~0;
  for (const b of buf) {
    c ^= b;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0xedb88320 : c >>> 1;
  }
  return ~c >>> 0;
}

/** A solid-colour PNG (for attachment tests). */
export function makePng(width: number, height: number, [r, g, b]: [number, number, number]): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    return Buffer.concat([len, body, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // truecolour
  const row = Buffer.concat([Buffer.from([0]), Buffer.alloc(width * 3, Buffer.from([r, g, b]))]);
  const raw = Buffer.concat(Array.from({ length: height }, () => row));
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', ihdr), chunk('IDAT', deflateSync(raw)), chunk('IEND', Buffer.alloc(0))]);
}
