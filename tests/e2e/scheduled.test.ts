/**
 * Browser tests of the Scheduled page (the cron plugin through the gateway): add a task through
 * the form with the schedule checked live, its runs in the history with a link to the run's
 * conversation, pause and delete; tasks changed elsewhere show up without a reload.
 */
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CronService } from '../../plugins/cron/service.js';
import { hasChromium } from './helpers/browser.js';
import type { E2EServer } from './helpers/e2e-server.js';
import { openBrowserSession } from './helpers/session.js';

const CRON_FAST = { pollIntervalMs: 200, leaseMs: 3000, leaseRenewMs: 500, lateToleranceMs: 1500 };

describe.skipIf(!hasChromium)('WebUI scheduled tasks (e2e)', () => {
  let srv: E2EServer;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let errors: string[];
  const cron = () => srv.server.kernel.services.get<CronService>('cron')!;
  const taskRow = (name: string) => page.locator(`[data-testid="cron-task"][data-name="${name}"]`);

  beforeAll(async () => {
    ({ srv, browser, context, page, errors } = await openBrowserSession({ server: { settings: { cron: CRON_FAST } } }));
    await page.setViewportSize({ width: 1200, height: 900 });
  }, 60_000);

  afterAll(async () => {
    await context?.close();
    await browser?.close();
    await srv?.close();
  });

  async function openScheduled(): Promise<void> {
    if (!(await page.getByTestId('scheduled-page').isVisible())) await page.getByTestId('open-scheduled').click();
    await page.getByTestId('scheduled-page').waitFor();
  }

  it('adds a prompt task through the form: a bad expression shows the reason, a good one its next fire times', async () => {
    await openScheduled();
    expect(await page.evaluate(() => location.hash)).toBe('#/scheduled');
    await page.getByTestId('cron-empty').waitFor();
    await page.getByTestId('cron-new').click();
    const form = page.getByTestId('cron-form');
    await form.getByTestId('cron-name').fill('e2e tick');
    await form.getByTestId('cron-kind-prompt').click();
    await form.getByTestId('cron-prompt').fill('hello from cron');

    await form.getByTestId('cron-schedule').fill('61 * * * *');
    const err = form.getByTestId('cron-schedule-error');
    await err.waitFor();
    expect(await err.textContent()).toMatch(/minute.*61|61.*minute/i);
    await page.screenshot({ path: '/tmp/scheduled-form-error.png' });

    await form.getByTestId('cron-schedule').fill('*/2 * * * * *');
    await form.getByTestId('cron-schedule-next').waitFor();
    await expect.poll(() => form.getByTestId('cron-next-time').count()).toBe(3);
    expect(await err.count()).toBe(0);
    await form.getByTestId('cron-timezone').fill('UTC');
    await page.screenshot({ path: '/tmp/scheduled-form.png' });

    await form.getByTestId('cron-save').click();
    await form.waitFor({ state: 'detached' });
    const row = taskRow('e2e tick');
    await row.waitFor();
    expect(await row.getByTestId('cron-task-kind').textContent()).toBe('prompt');
    expect(await row.getByTestId('cron-task-schedule').textContent()).toBe('*/2 * * * * *');
    expect(await row.getByTestId('cron-task-timezone').textContent()).toBe('UTC');
    expect(await row.getByTestId('cron-task-created-by').textContent()).toBe('created by you');
    expect(await row.getByTestId('cron-task-next').textContent()).toMatch(/^Next: /);

    const stored = (await cron().listTasks()).find((t) => t.name === 'e2e tick');
    expect(stored).toMatchObject({ schedule: '*/2 * * * * *', timezone: 'UTC', enabled: true, createdBy: 'gateway', action: { kind: 'prompt', prompt: 'hello from cron' } });
  });

  it('shows the run in the history live; pausing stops it; the run link opens its conversation', async () => {
    await openScheduled();
    const row = taskRow('e2e tick');
    // The history opened when the task was added; the run arrives by the cron.run broadcasts.
    const run = row.locator('[data-testid="cron-run"][data-status="done"]').first();
    await run.waitFor({ timeout: 20_000 });
    expect(await run.getByTestId('cron-run-output').textContent()).toContain('hello from cron');
    await row.locator('[data-testid="cron-task-last-status"]').filter({ hasText: /done|running/ }).waitFor();

    await row.getByTestId('cron-task-enabled').click();
    await page.locator('[data-testid="cron-task"][data-name="e2e tick"][data-enabled="false"]').waitFor();
    await expect.poll(async () => (await cron().listTasks()).find((t) => t.name === 'e2e tick')?.enabled).toBe(false);
    expect(await row.getByTestId('cron-task-next').textContent()).toBe('Paused');
    await page.screenshot({ path: '/tmp/scheduled-list.png', fullPage: true });

    const { runs } = await cron().runs('e2e tick');
    const conversationId = runs.find((r) => r.status === 'done')!.conversationId!;
    expect(conversationId).toBeTruthy();
    await row.locator(`[data-testid="cron-run"][data-status="done"]`).last().getByTestId('cron-run-conversation').click();
    await page.getByTestId('scheduled-page').waitFor({ state: 'detached' });
    const hash = await page.evaluate(() => location.hash);
    expect(hash).toMatch(/^#\/c\//);
    expect(runs.map((r) => r.conversationId)).toContain(hash.slice('#/c/'.length));
    await page.getByTestId('user-message').getByText('hello from cron').first().waitFor();
    await page.getByTestId('assistant-message').getByText(/Echo: hello from cron/).first().waitFor();
    await page.screenshot({ path: '/tmp/scheduled-conversation.png' });
  });

  it('tasks added and changed elsewhere appear live; edit through the form; delete asks first', async () => {
    await openScheduled();
    // The history stayed open across the visit to the run's conversation.
    await taskRow('e2e tick').getByTestId('cron-runs').waitFor();
    await cron().addTask({ name: 'nightly backup', schedule: '0 3 * * *', timezone: 'Europe/Paris', action: { kind: 'bash', command: 'echo backup' } }, 'model');
    const model = taskRow('nightly backup');
    await model.waitFor();
    expect(await model.getByTestId('cron-task-created-by').textContent()).toBe('created by the model');
    expect(await model.getByTestId('cron-task-kind').textContent()).toBe('bash');

    await model.getByTestId('cron-task-edit').click();
    const form = page.getByTestId('cron-form');
    expect(await form.getByTestId('cron-command').inputValue()).toBe('echo backup');
    await form.getByTestId('cron-kind-http').click();
    await form.getByTestId('cron-url').fill('http://127.0.0.1:9/ping');
    await form.getByTestId('cron-method').selectOption('POST');
    await form.getByTestId('cron-save').click();
    await form.waitFor({ state: 'detached' });
    await model.getByTestId('cron-task-kind').filter({ hasText: 'http' }).waitFor();
    expect(await model.getByTestId('cron-runs').count()).toBe(0); // an edit does not open the history
    const stored = (await cron().listTasks()).find((t) => t.name === 'nightly backup');
    expect(stored?.action).toEqual({ kind: 'http', url: 'http://127.0.0.1:9/ping', method: 'POST' });

    // Refused by the server: its reason is shown in the form, nothing changes.
    await model.getByTestId('cron-task-edit').click();
    await form.getByTestId('cron-timezone').fill('Moon/Base');
    await form.getByTestId('cron-save').click();
    expect(await form.getByTestId('cron-form-error').textContent()).toMatch(/Moon\/Base/);
    await form.getByTestId('cron-cancel').click();

    await model.getByTestId('cron-task-delete').click();
    await page.screenshot({ path: '/tmp/scheduled-delete-confirm.png' });
    await model.getByTestId('cron-task-delete-confirm').click();
    await model.waitFor({ state: 'detached' });
    await taskRow('e2e tick').getByTestId('cron-task-delete').click();
    await taskRow('e2e tick').getByTestId('cron-task-delete-confirm').click();
    await page.getByTestId('cron-empty').waitFor();
    expect(await cron().listTasks()).toEqual([]);

    // Another process (the CLI, a chat's Cron tool) adding a task reaches the page by broadcast.
    await cron().addTask({ name: 'from elsewhere', schedule: '0 9 * * 1', action: { kind: 'http', url: 'https://example.com/' } }, 'cli');
    await taskRow('from elsewhere').waitFor();
    await page.screenshot({ path: '/tmp/scheduled-live.png' });
    await page.setViewportSize({ width: 420, height: 800 });
    await page.screenshot({ path: '/tmp/scheduled-narrow.png' });
    await page.setViewportSize({ width: 1200, height: 900 });
    await page.getByTestId('scheduled-close').click();
    expect(await page.evaluate(() => location.hash)).not.toBe('#/scheduled');
    expect(errors).toEqual([]);
  });
});
