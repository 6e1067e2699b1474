/**
 * Browser tests of settings (providers, custom providers, defaults, system prompt; validation
 * errors; live updates from another client), themes, and the first-run setup.
 */
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lastReply, newChat, openApp, sendAndWait } from './helpers/app.js';
import { hasChromium, newContext, screenshot } from './helpers/browser.js';
import { startE2EServer, type E2EServer } from './helpers/e2e-server.js';
import { openBrowserSession } from './helpers/session.js';

describe.skipIf(!hasChromium)('WebUI settings, themes and first run (e2e)', () => {
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

  async function openSettings(p: Page): Promise<void> {
    if (!(await p.getByTestId('settings-page').isVisible())) await p.getByTestId('open-settings').click();
    await p.getByTestId('system-prompt').waitFor();
  }

  it('Settings page: providers, custom providers, defaults and system prompt, with the server’s validation errors', async () => {
    await openSettings(page);
    const card = page.locator('[data-testid="provider-card"][data-provider="claude_code"]');
    expect(await card.getByTestId('provider-configured').textContent()).toBe('ready');
    await card.getByTestId('provider-api-key').fill('sk-e2e-123');
    // Still the mock's address: the later tests of this file chat through this provider.
    await card.getByTestId('provider-base-url').fill(srv.mock.url);
    await page.getByTestId('default-provider').selectOption('claude_code');
    await page.getByTestId('default-model').fill('claude-haiku-4-5');
    await page.getByTestId('default-mode-agent-dev').click();
    await page.getByTestId('system-prompt').fill('Answer briefly.');
    await page.getByTestId('add-custom-provider').click();
    const custom = page.getByTestId('custom-provider-card');
    await custom.getByTestId('custom-id').fill('local-llm');
    await custom.getByTestId('custom-name').fill('Local LLM');
    await custom.getByTestId('custom-format').selectOption('openai-chat');
    await custom.getByTestId('custom-base-url').fill('not a url');
    await custom.getByTestId('custom-models').fill('llama-3\nqwen-2');

    await page.getByTestId('settings-save').click();
    const error = page.getByTestId('settings-error');
    await error.waitFor();
    expect(await error.textContent()).toMatch(/customProviders.*local-llm.*baseUrl/);
    expect(srv.server.kernel.settings.get().customProviders).toBeUndefined(); // nothing stored

    await custom.getByTestId('custom-base-url').fill('http://127.0.0.1:9/v1');
    await page.getByTestId('settings-save').click();
    await page.getByTestId('settings-saved').waitFor();
    expect(await page.getByTestId('settings-error').count()).toBe(0);
    const stored = srv.server.kernel.settings.get();
    expect(stored).toMatchObject({
      defaultProvider: 'claude_code',
      defaultModel: 'claude-haiku-4-5',
      defaultMode: 'agent-dev',
      systemPrompt: 'Answer briefly.',
      providers: { claude_code: { apiKey: 'sk-e2e-123', baseUrl: srv.mock.url } },
      customProviders: [{ id: 'local-llm', name: 'Local LLM', format: 'openai-chat', baseUrl: 'http://127.0.0.1:9/v1', models: [{ id: 'llama-3' }, { id: 'qwen-2' }] }],
    });
    expect(stored.runtime).toBeDefined(); // sections the page does not edit are kept

    // The defaults apply to a new chat's composer.
    await page.getByTestId('settings-close').click();
    await page.getByTestId('new-conversation').click();
    expect(await page.getByTestId('mode-agent-dev').getAttribute('aria-checked')).toBe('true');
    expect(await page.getByTestId('model-picker').locator('option').first().textContent()).toContain('claude-haiku-4-5');
  });

  it('settings saved', async () => {
    await openSettings(page);
    await page.getByTestId('system-prompt').fill('Persist me.');
    await page.keyboard.press('Control+s');
    await page.getByTestId('settings-saved').waitFor();
    await page.reload();
    await page.getByTestId('settings-page').waitFor(); // the route survives the reload
    await expect.poll(() => page.getByTestId('system-prompt').inputValue()).toBe('Persist me.');
    expect(srv.server.kernel.settings.get().systemPrompt).toBe('Persist me.');
    // Clearing a field removes the setting (not an empty string).
    await page.getByTestId('system-prompt').fill('');
    await page.getByTestId('settings-save').click();
    await page.getByTestId('settings-saved').waitFor();
    expect(srv.server.kernel.settings.get().systemPrompt).toBeUndefined();
  });

  it('Settings page: a change made by another client updates the page live', async () => {
    const other = await context.newPage();
    try {
      await openApp(other, srv.url);
      await openSettings(other);
      await page.bringToFront(); // background tabs get few animation frames, which slows actions
      await openSettings(page);
      await page.getByTestId('system-prompt').fill('From tab one.');
      await page.getByTestId('settings-save').click();
      await page.getByTestId('settings-saved').waitFor();
      await expect.poll(() => other.getByTestId('system-prompt').inputValue()).toBe('From tab one.');

      // With unsaved edits the page asks before replacing them.
      await other.getByTestId('default-model').fill('my-unsaved-model');
      await page.getByTestId('system-prompt').fill('Second change.');
      await page.getByTestId('settings-save').click();
      await other.getByTestId('settings-remote-changed').waitFor();
      expect(await other.getByTestId('system-prompt').inputValue()).toBe('From tab one.');
      await other.getByTestId('settings-remote-changed').getByRole('button').click();
      await expect.poll(() => other.getByTestId('system-prompt').inputValue()).toBe('Second change.');
    } finally {
      await other.close();
    }
    expect(errors).toEqual([]);
  });

  it('Themes: light and dark, toggled and remembered, following prefers-color-scheme at first', async () => {
    const dark = await newContext(browser, { colorScheme: 'dark' });
    try {
      const p = await dark.newPage();
      await openApp(p, srv.appUrl);
      expect(await p.evaluate(() => document.documentElement.dataset.theme)).toBe('dark');
      await newChat(p, 'tools');
      await sendAndWait(p, '/think', 'The answer is 42.');
      await sendAndWait(p, '/search', 'Vue 3.5 reworked reactivity.');
      await sendAndWait(p, '/code', 'Done.');
      await lastReply(p).getByTestId('code-block').scrollIntoViewIfNeeded();
      await p.getByTestId('composer-input').fill('Can you also add tests?');
      await screenshot(p, 'chat-dark');
      const bg = await p.evaluate(() => getComputedStyle(document.body).backgroundColor);
      await p.getByTestId('theme-toggle').click();
      expect(await p.evaluate(() => document.documentElement.dataset.theme)).toBe('light');
      expect(await p.evaluate(() => getComputedStyle(document.body).backgroundColor)).not.toBe(bg);
      await screenshot(p, 'chat-light');
      await p.reload();
      await p.getByTestId('app').waitFor();
      expect(await p.evaluate(() => document.documentElement.dataset.theme)).toBe('light'); // remembered over the system's dark
    } finally {
      await dark.close();
    }
    const light = await newContext(browser, { colorScheme: 'light' });
    try {
      const p = await light.newPage();
      await openApp(p, srv.appUrl);
      expect(await p.evaluate(() => document.documentElement.dataset.theme)).toBe('light');
    } finally {
      await light.close();
    }
  });

  it('First run: with no provider configured, the first screen leads the user to set one up', async () => {
    // claude_code knows the mock's address but has no key; the mock accepts only the key typed below.
    const fresh = await startE2EServer({ withProvider: false, mockApiKey: 'key-123' });
    const ctx = await newContext(browser);
    try {
      const p = await ctx.newPage();
      await openApp(p, fresh.appUrl);
      await p.getByTestId('first-run').waitFor();
      await p.getByTestId('open-settings').filter({ hasText: 'set up' }).waitFor();
      await p.getByTestId('setup-choice-claude_code').click();
      await p.getByTestId('setup-api-key').fill('key-123');
      await p.getByTestId('setup-save').click();
      await p.getByTestId('welcome').waitFor();
      expect(await p.getByTestId('first-run').count()).toBe(0);
      expect(fresh.server.kernel.settings.get()).toMatchObject({ defaultProvider: 'claude_code', providers: { claude_code: { apiKey: 'key-123', baseUrl: fresh.mock.url } } });
      await expect.poll(() => p.getByTestId('model-picker').locator('option').first().textContent()).toContain('Claude');
      await sendAndWait(p, 'hello there', 'Echo: hello there');
      // One chat request (the title request that follows the first turn is the title plugin's).
      expect(fresh.mock.requests.filter((r) => !JSON.stringify(r.body?.system ?? '').includes('You name chat conversations'))).toHaveLength(1);
    } finally {
      await ctx.close();
      await fresh.close();
    }
  });

  it('Settings page: an unknown key is shown with its did-you-mean, and the settings still work', async () => {
    const typo = await startE2EServer({ settings: { runtime: { maxRoundz: 3 } } as never });
    const ctx = await newContext(browser);
    try {
      const p = await ctx.newPage();
      await openApp(p, typo.appUrl);
      await p.getByTestId('open-settings').first().click();
      const banner = p.getByTestId('settings-warnings');
      await banner.waitFor();
      expect(await banner.textContent()).toContain('runtime.maxRoundz (did you mean runtime.maxRounds?)');
      await p.screenshot({ path: '/tmp/settings-warnings.png' });
    } finally {
      await ctx.close();
      await typo.close();
    }
  });
});
