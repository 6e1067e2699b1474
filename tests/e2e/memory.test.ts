/**
 * Browser tests of the Memory page (proposals waiting for review, accepted into a file; memory
 * files viewed, edited, saved and deleted; the sidebar indicator) and of the Settings → Skills
 * switches, against the real server host with the memory and skills plugins.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UnreviewedList } from '../../plugins/memory/unreviewed.js';
import type { MemoryService } from '../../plugins/memory/service.js';
import { waitConnected } from './helpers/app.js';
import { hasChromium } from './helpers/browser.js';
import type { E2EServer } from './helpers/e2e-server.js';
import { openBrowserSession } from './helpers/session.js';

describe.skipIf(!hasChromium)('WebUI memory page and skills switches (e2e)', () => {
  let srv: E2EServer;
  let browser: Browser;
  let page: Page;
  let errors: string[];
  let accepted: string;
  let dismissed: string;

  beforeAll(async () => {
    ({ srv, browser, page, errors } = await openBrowserSession({ server: { settings: { memory: { autoExtract: false } } } }));
    const home = srv.home;
    fs.mkdirSync(path.join(home, 'skills', 'pdf-tools'), { recursive: true });
    fs.writeFileSync(path.join(home, 'skills', 'pdf-tools', 'SKILL.md'), '---\nname: pdf-tools\ndescription: Fill, merge and split PDF files with pdftk.\n---\nUse pdftk.\n');
    fs.mkdirSync(path.join(home, 'skills', 'broken'), { recursive: true });
    fs.writeFileSync(path.join(home, 'skills', 'broken', 'SKILL.md'), 'no front matter\n');
    fs.mkdirSync(path.join(home, 'memory'), { recursive: true });
    fs.writeFileSync(path.join(home, 'memory', 'preferences.md'), '# Preferences\n- Uses pnpm, never npm\n');
    fs.writeFileSync(path.join(home, 'memory', 'scratch.md'), '# Scratch\nthrowaway\n');
    // The file extraction writes its proposals to (the memory service only reviews them).
    const [a, b] = await new UnreviewedList(path.join(home, 'memory')).add([
      { text: 'The user deploys on Fridays', scope: 'user', file: 'preferences.md', source: { conversationId: 'c_source1' }, provider: 'claude_code' },
      { text: 'The user likes tabs', scope: 'user', file: 'style.md', source: { conversationId: 'c_source2' } },
    ]);
    accepted = a!.id;
    dismissed = b!.id;
    expect((await srv.server.kernel.services.get<MemoryService>('memory')!.unreviewed()).map((p) => p.id)).toEqual([accepted, dismissed]);
    await page.reload(); // the page listed the memory at its first connect, before these existed
    await waitConnected(page);
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await srv?.close();
  });

  it('Memory page: proposals with their source first, then the files; accept writes a file, dismiss drops one', async () => {
    await page.getByTestId('memory-indicator').waitFor();
    await page.getByTestId('open-memory').click();
    await page.getByTestId('memory-page').waitFor();
    expect(new URL(page.url()).hash).toBe('#/memory');
    const proposals = page.getByTestId('memory-proposal');
    await expect.poll(() => proposals.count()).toBe(2);
    const first = page.locator(`[data-testid="memory-proposal"][data-id="${accepted}"]`);
    expect(await first.getByTestId('memory-proposal-text').textContent()).toBe('The user deploys on Fridays');
    expect(await first.getByTestId('memory-proposal-file').textContent()).toBe('/memories/preferences.md');
    expect(await first.getByTestId('memory-proposal-source').getAttribute('href')).toBe('#/c/c_source1');
    const files = page.locator('[data-testid="memory-scope-user"] [data-testid="memory-file"]');
    expect(await files.evaluateAll((els) => els.map((e) => e.getAttribute('data-path')))).toEqual(['/memories/preferences.md', '/memories/scratch.md']);
    await page.locator('[data-testid="memory-file"][data-path="/memories/preferences.md"]').getByTestId('memory-file-open').click();
    await page.getByTestId('memory-editor').waitFor();
    await page.screenshot({ path: '/tmp/memory-page.png', fullPage: true });

    await first.getByTestId('memory-accept').click();
    await first.waitFor({ state: 'detached' });
    expect(fs.readFileSync(path.join(srv.home, 'memory', 'preferences.md'), 'utf8')).toBe('# Preferences\n- Uses pnpm, never npm\n- The user deploys on Fridays\n');
    expect(await page.getByTestId('memory-indicator').isVisible()).toBe(true); // one still waits
    await page.locator(`[data-testid="memory-proposal"][data-id="${dismissed}"]`).getByTestId('memory-dismiss').click();
    await proposals.first().waitFor({ state: 'detached' });
    await page.getByTestId('memory-indicator').waitFor({ state: 'detached' });
    expect(await srv.server.kernel.services.get<MemoryService>('memory')!.unreviewed()).toEqual([]);
    expect(fs.existsSync(path.join(srv.home, 'memory', 'style.md'))).toBe(false);
    expect(errors).toEqual([]);
  });

  it('Memory page: a file is edited and saved to disk, and deleted after a confirmation', async () => {
    const prefs = page.locator('[data-testid="memory-file"][data-path="/memories/preferences.md"]');
    // The editor opened before the accept still holds the old text: reopen to read the new one.
    await prefs.getByTestId('memory-file-open').click();
    await prefs.getByTestId('memory-file-open').click();
    const editor = prefs.getByTestId('memory-editor');
    await expect.poll(() => editor.inputValue()).toContain('Fridays');
    await editor.fill('# Preferences\n- Uses pnpm\n- Deploys on Fridays\n');
    await prefs.getByTestId('memory-save').click();
    await prefs.getByTestId('memory-saved').waitFor();
    expect(fs.readFileSync(path.join(srv.home, 'memory', 'preferences.md'), 'utf8')).toBe('# Preferences\n- Uses pnpm\n- Deploys on Fridays\n');

    const scratch = page.locator('[data-testid="memory-file"][data-path="/memories/scratch.md"]');
    await scratch.getByTestId('memory-file-open').click();
    await scratch.getByTestId('memory-delete').click();
    expect(fs.existsSync(path.join(srv.home, 'memory', 'scratch.md'))).toBe(true); // not before the confirmation
    await scratch.getByTestId('memory-confirm-delete').click();
    await scratch.waitFor({ state: 'detached' });
    expect(fs.existsSync(path.join(srv.home, 'memory', 'scratch.md'))).toBe(false);

    await page.getByTestId('memory-close').click();
    await page.getByTestId('memory-page').waitFor({ state: 'detached' });
    expect(errors).toEqual([]);
  });

  it('Settings → Skills: lists skills and broken ones; the switch turns a skill off and back on', async () => {
    await page.getByTestId('open-settings').click();
    const section = page.getByTestId('skills-section');
    await section.waitFor();
    const skill = section.locator('[data-testid="skill"][data-name="pdf-tools"]');
    await skill.waitFor();
    expect(await skill.getByTestId('skill-description').textContent()).toBe('Fill, merge and split PDF files with pdftk.');
    expect(await skill.getByTestId('skill-location').textContent()).toBe(path.join(srv.home, 'skills', 'pdf-tools'));
    expect(await section.getByTestId('skill-problem').textContent()).toMatch(/broken.SKILL\.md.*front matter/s);
    expect(await skill.getAttribute('data-enabled')).toBe('true');
    await section.scrollIntoViewIfNeeded();
    await page.screenshot({ path: '/tmp/skills-section.png' });

    await skill.getByTestId('skill-switch').click();
    await expect.poll(() => (srv.server.kernel.settings.get().skills as { disabled?: string[] } | undefined)?.disabled).toEqual(['pdf-tools']);
    await expect.poll(() => skill.getAttribute('data-enabled')).toBe('false');
    expect(await skill.getByTestId('skill-switch').isChecked()).toBe(false);
    await skill.getByTestId('skill-switch').click();
    await expect.poll(() => (srv.server.kernel.settings.get().skills as { disabled?: string[] } | undefined)?.disabled).toEqual([]);
    await expect.poll(() => skill.getAttribute('data-enabled')).toBe('true');
    // The settings form did not become dirty: the switch saves on its own.
    expect(await page.getByTestId('settings-save').isDisabled()).toBe(true);
    expect(errors).toEqual([]);
  });
});
