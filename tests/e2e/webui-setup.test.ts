/**
 * Issue 18, items 5, 6 and 10 in the browser: the first-run form and provider settings refuse a
 * blank key, "Test connection" says in plain words what the provider answered, and every
 * no-provider / no-key error leads to Settings → Providers; tools runs work in the dedicated
 * workspace (its real path in the composer), a typed folder is checked by the server, recent
 * folders can be picked; a conversation carries its own instructions and its model and mode,
 * restored on reload and in another tab, while a new chat starts from the defaults.
 */
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HistoryService } from '../../plugins/history-sqlite/service.js';
import { currentConversationId, lastReply, newChat, openApp, send, sendAndWait } from './helpers/app.js';
import { hasChromium, launchBrowser, newContext, screenshot } from './helpers/browser.js';
import { startE2EServer, type E2EServer } from './helpers/e2e-server.js';
import { ensureWebuiBuilt } from './helpers/webui-build.js';

const KEY = 'key-right-123';
const chatRequests = (srv: E2EServer) => srv.mock.requests.filter((r) => !JSON.stringify(r.body?.system ?? '').includes('You name chat conversations'));
const systemOf = (r: { body?: { system?: unknown } }) => JSON.stringify(r.body?.system ?? '');

describe.skipIf(!hasChromium)('WebUI setup: keys, connection test, working folder, per-chat settings (e2e)', () => {
  let browser: Browser;

  beforeAll(async () => {
    await ensureWebuiBuilt();
    browser = await launchBrowser();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
  });

  it('First run refuses a blank key; no-key errors lead to provider settings; Test connection reports the refusal, then success', async () => {
    const srv = await startE2EServer({ withProvider: false, mockApiKey: KEY });
    const ctx = await newContext(browser);
    try {
      const p = await ctx.newPage();
      await openApp(p, srv.appUrl);
      await p.getByTestId('first-run').waitFor();
      await p.getByTestId('setup-choice-claude_code').click();
      await p.getByTestId('setup-save').click();
      expect(await p.getByTestId('setup-key-error').textContent()).toContain('Paste the API key');
      await p.getByTestId('setup-api-key').fill('   ');
      await p.getByTestId('setup-save').click();
      expect(await p.getByTestId('setup-key-error').textContent()).toContain('only spaces');
      expect(srv.server.kernel.settings.get().providers?.claude_code?.apiKey).toBeUndefined(); // nothing stored
      await screenshot(p, 'setup-first-run-blank-key');
      await p.setViewportSize({ width: 390, height: 780 });
      await screenshot(p, 'setup-first-run-blank-key-390');
      await p.setViewportSize({ width: 1280, height: 820 });

      // Skipped: the send is refused (no provider), and the refusal leads to Settings → Providers.
      await p.getByTestId('setup-skip').click();
      await send(p, 'hello?');
      const refusal = p.getByTestId('composer-error');
      await refusal.waitFor();
      expect(await refusal.textContent()).toContain('no provider is configured');
      await p.getByTestId('composer-error-settings').click();
      await p.getByTestId('settings-providers').waitFor();
      expect(await p.getByTestId('settings-providers').isVisible()).toBe(true);

      // A wrong key: the run's error says the key was refused and leads to the provider's card.
      const card = p.locator('[data-testid="provider-card"][data-provider="claude_code"]');
      await card.getByTestId('provider-api-key').fill('key wrong');
      expect(await card.getByTestId('provider-key-error').textContent()).toContain('spaces or line breaks');
      await p.getByTestId('settings-save').click();
      expect(await p.getByTestId('settings-error').textContent()).toContain('claude_code: The API key contains spaces');
      await card.getByTestId('provider-api-key').fill('key-wrong');
      await p.getByTestId('default-provider').selectOption('claude_code');
      expect(await card.getByTestId('provider-test').textContent()).toContain('Save and test');
      await card.getByTestId('provider-test').click();
      const result = card.getByTestId('provider-test-result');
      await result.waitFor();
      expect(await result.getAttribute('data-ok')).toBe('false');
      expect(await result.textContent()).toMatch(/^The provider refused the API key \(check that it is complete and still valid\)\. The provider said: /);
      expect(srv.server.kernel.settings.get().providers?.claude_code?.apiKey).toBe('key-wrong'); // saved before the test
      await card.scrollIntoViewIfNeeded();
      await screenshot(p, 'setup-provider-test-refused');

      await p.getByTestId('settings-close').click();
      await newChat(p, 'text');
      await send(p, 'hello again');
      const err = p.getByTestId('run-error');
      await err.waitFor();
      expect(await err.textContent()).toContain('The provider refused the API key');
      expect(await p.getByTestId('run-error-fix').textContent()).toContain('Settings → Providers');
      await p.getByTestId('run-error-settings').click();
      await card.waitFor();

      await card.getByTestId('provider-api-key').fill(KEY);
      await card.getByTestId('provider-test').click();
      await expect.poll(() => result.getAttribute('data-ok')).toBe('true');
      expect(await result.textContent()).toMatch(/^Connected: .* answered with /);
      await screenshot(p, 'setup-provider-test-ok');
      await p.setViewportSize({ width: 390, height: 780 });
      await card.scrollIntoViewIfNeeded();
      await screenshot(p, 'setup-provider-test-ok-390');
    } finally {
      await ctx.close();
      await srv.close();
    }
  });

  it('Tools runs work in <home>/workspace, shown in the composer; a typed folder is checked; recent folders can be picked', async () => {
    const srv = await startE2EServer();
    const ctx = await newContext(browser);
    try {
      const p = await ctx.newPage();
      await openApp(p, srv.appUrl);
      const workspace = path.join(srv.home, 'workspace');
      await newChat(p, 'tools');
      await expect.poll(() => p.getByTestId('workdir-path').getAttribute('data-path')).toBe(workspace);
      await sendAndWait(p, 'where am I', 'Echo: where am I');
      const history = srv.server.kernel.services.get<HistoryService>('history')!;
      const first = await currentConversationId(p);
      expect((await history.getConversation(first))?.workdir).toBe(workspace);

      // A folder that does not exist is refused by the server's check, and by the send.
      await newChat(p, 'tools');
      await p.getByTestId('workdir-button').click();
      await p.getByTestId('workdir-input').fill(path.join(srv.home, 'nope'));
      await p.getByTestId('composer-input').focus();
      expect(await p.getByTestId('workdir-error').textContent()).toMatch(/workdir .*nope: no such folder/);
      await screenshot(p, 'setup-workdir-error');
      await send(p, 'in nope');
      expect(await p.getByTestId('composer-error').textContent()).toMatch(/workdir .*nope: no such folder/);

      await p.getByTestId('workdir-button').click();
      await p.getByTestId('workdir-input').fill(srv.workdir);
      await p.getByTestId('composer-input').focus();
      expect(await p.getByTestId('workdir-error').count()).toBe(0);
      await p.getByTestId('composer-input').fill('in the work folder');
      await p.getByTestId('composer-input').press('Enter');
      await lastReply(p).getByText('Echo: in the work folder').waitFor();
      expect((await history.getConversation(await currentConversationId(p)))?.workdir).toBe(srv.workdir);

      // A new chat starts from the default workspace; the folder used is one pick away.
      await newChat(p, 'tools');
      expect(await p.getByTestId('workdir-path').getAttribute('data-path')).toBe(workspace);
      await p.getByTestId('workdir-button').click();
      await p.getByTestId('workdir-recent').waitFor();
      await screenshot(p, 'setup-workdir-recent');
      await p.setViewportSize({ width: 390, height: 780 });
      await screenshot(p, 'setup-workdir-recent-390');
      await p.setViewportSize({ width: 1280, height: 820 });
      await p.getByTestId('workdir-recent-item').filter({ hasText: srv.workdir }).click();
      expect(await p.getByTestId('workdir-path').getAttribute('data-path')).toBe(srv.workdir);
    } finally {
      await ctx.close();
      await srv.close();
    }
  });

  it('A conversation keeps its own instructions, model and mode (reload, another tab); a new chat starts from the defaults', async () => {
    const srv = await startE2EServer();
    const ctx = await newContext(browser);
    try {
      const p = await ctx.newPage();
      await openApp(p, srv.appUrl);
      await newChat(p, 'text');
      const haiku = p.getByTestId('model-picker').locator('option[data-provider="claude_code"]').nth(1);
      const model = (await haiku.getAttribute('data-model'))!;
      await p.getByTestId('model-picker').selectOption((await haiku.getAttribute('value'))!);
      await sendAndWait(p, 'first', 'Echo: first');
      const id = await currentConversationId(p);

      await p.getByTestId('chat-instructions-button').click();
      await p.getByTestId('chat-instructions-input').fill('Answer like a pirate.');
      await screenshot(p, 'setup-chat-instructions');
      await p.getByTestId('chat-instructions-save').click();
      await p.getByTestId('chat-instructions-set').waitFor();
      await sendAndWait(p, 'second', 'Echo: second');
      const last = chatRequests(srv).at(-1)!;
      expect(systemOf(last)).toContain('Answer like a pirate.');
      expect(systemOf(chatRequests(srv)[0]!)).not.toContain('pirate');
      expect((last.body as { model?: string }).model).toBe(model);

      // A new chat: the defaults, and no instructions.
      await p.getByTestId('new-conversation').click();
      await p.getByTestId('welcome').waitFor();
      expect(await p.getByTestId('mode-tools').getAttribute('aria-checked')).toBe('true');
      expect(await p.getByTestId('model-picker').inputValue()).toBe('');
      expect(await p.getByTestId('chat-instructions-set').count()).toBe(0);
      // Instructions before the first message: they shape its first request and stay with it.
      await p.getByTestId('chat-instructions-button').click();
      await p.getByTestId('chat-instructions-input').fill('Reply in haiku.');
      await p.getByTestId('chat-instructions-save').click();
      await p.getByTestId('chat-instructions-set').waitFor();
      const before = chatRequests(srv).length;
      await sendAndWait(p, 'third', 'Echo: third');
      expect(systemOf(chatRequests(srv)[before]!)).toContain('Reply in haiku.');
      await p.getByTestId('chat-instructions-set').waitFor();
      const third = await currentConversationId(p);
      expect(third).not.toBe(id);

      // Back to it after a reload, and in another tab: its model, mode and instructions.
      await p.goto(`${srv.url}/#/c/${id}`);
      await p.reload();
      await p.getByTestId('chat-instructions-set').waitFor();
      await expect.poll(() => p.getByTestId('mode-text').getAttribute('aria-checked')).toBe('true');
      expect(await p.getByTestId('model-picker').locator('option:checked').getAttribute('data-model')).toBe(model);
      const tab = await ctx.newPage();
      await tab.goto(`${srv.url}/#/c/${id}`);
      await tab.getByTestId('chat-instructions-set').waitFor();
      await expect.poll(() => tab.getByTestId('mode-text').getAttribute('aria-checked')).toBe('true');
      await tab.setViewportSize({ width: 390, height: 780 });
      await tab.getByTestId('chat-instructions-button').click();
      expect(await tab.getByTestId('chat-instructions-input').inputValue()).toBe('Answer like a pirate.');
      await screenshot(tab, 'setup-chat-instructions-390');

      // Changing the mode in one tab is what the other shows for that conversation.
      await p.getByTestId('mode-agent-dev').click();
      await expect.poll(() => tab.getByTestId('mode-agent-dev').getAttribute('aria-checked')).toBe('true');
      await tab.close();
    } finally {
      await ctx.close();
      await srv.close();
    }
  });
});

