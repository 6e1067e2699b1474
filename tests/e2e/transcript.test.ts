/**
 * Browser tests of the transcript: streaming markdown with highlighting and copy, thinking,
 * hosted search, the tool trace by round and group (real builtin tools in a temp workdir), edited
 * files, usage, history rebuilt from a snapshot, and the AskUserQuestion card. One Chromium and
 * one page for the file.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lastReply, newChat, send, sendAndWait, waitIdle } from './helpers/app.js';
import { hasChromium, screenshot } from './helpers/browser.js';
import type { E2EServer } from './helpers/e2e-server.js';
import { openBrowserSession } from './helpers/session.js';

describe.skipIf(!hasChromium)('WebUI transcript (e2e)', () => {
  let srv: E2EServer;
  let browser: Browser;
  let page: Page;
  let errors: string[];

  beforeAll(async () => {
    ({ srv, browser, page, errors } = await openBrowserSession({ clipboard: true }));
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await srv?.close();
  });

  it('Transcript: streaming markdown with code highlighting and copy buttons', async () => {
    await newChat(page);
    await sendAndWait(page, '/code', 'Done.');
    const reply = lastReply(page);
    await reply.locator('h2', { hasText: 'Plan' }).waitFor();
    await reply.locator('strong', { hasText: 'bold' }).waitFor();
    const block = reply.getByTestId('code-block');
    expect(await block.locator('.code-lang').textContent()).toBe('ts');
    expect(await block.locator('.hljs-keyword').count()).toBeGreaterThan(0);
    await block.getByTestId('copy-code').click();
    await block.getByText('Copied').waitFor();
    const copied = await page.evaluate(() => navigator.clipboard.readText());
    expect(copied).toContain('const answer: number = 42;');
    expect(copied).not.toContain('Copy');
    // Markdown is sanitized: raw HTML from the model does not become live elements.
    expect(await reply.locator('script, iframe').count()).toBe(0);
  });

  it('Transcript: thinking is shown and collapsible', async () => {
    await newChat(page);
    await sendAndWait(page, '/think', 'The answer is 42.');
    const thinking = lastReply(page).getByTestId('thinking');
    await thinking.waitFor();
    // Folded once the answer came; opens and closes on demand.
    expect(await thinking.getByTestId('thinking-body').count()).toBe(0);
    await thinking.getByTestId('thinking-toggle').click();
    expect(await thinking.getByTestId('thinking-body').textContent()).toBe('Let me weigh the options carefully.');
    await thinking.getByTestId('thinking-toggle').click();
    expect(await thinking.getByTestId('thinking-body').count()).toBe(0);
  });

  it('Transcript: hosted-search blocks with their sources', async () => {
    await newChat(page);
    await sendAndWait(page, '/search', 'Vue 3.5 reworked reactivity.');
    const block = lastReply(page).getByTestId('search-block');
    expect(await block.getByTestId('search-queries').textContent()).toBe('vue 3.5 release notes');
    const sources = block.getByTestId('search-source');
    expect(await sources.count()).toBe(2);
    expect(await sources.first().locator('a').getAttribute('href')).toBe('https://blog.vuejs.org/posts/vue-3-5');
    expect(await sources.first().locator('a').textContent()).toBe('Announcing Vue 3.5');
  });

  it('the tool trace', async () => {
    await newChat(page);
    // A call in flight shows as running, then ok with its duration (a Bash command held by a gate).
    await send(page, '/toolgate hold');
    const live = lastReply(page).getByTestId('tool-call');
    await expect.poll(() => live.getAttribute('data-status')).toBe('running');
    expect(await live.getByTestId('tool-status').textContent()).toBe('running');
    srv.control.release('hold');
    await expect.poll(() => live.getAttribute('data-status')).toBe('ok');
    expect(await live.getByTestId('tool-duration').textContent()).toMatch(/\d+(\.\d+)? (ms|s)/);
    await waitIdle(page);

    await newChat(page, 'tools', srv.workdir);
    await sendAndWait(page, '/tools', 'one file written.');
    const reply = lastReply(page);
    expect(await reply.getByTestId('round-label').allTextContents()).toEqual(['Round 1', 'Round 2', 'Round 3']);
    const round1 = reply.locator('[data-testid="assistant-round"][data-round="1"]');
    const group = round1.getByTestId('tool-group');
    expect(await group.getAttribute('data-status')).toBe('error');
    expect(await group.textContent()).toContain('3 tool calls');
    expect(await group.textContent()).toContain('1 failed');
    const calls = group.getByTestId('tool-call');
    expect(await calls.evaluateAll((els) => els.map((e) => `${e.getAttribute('data-tool-name')}:${e.getAttribute('data-status')}`))).toEqual(['Bash:ok', 'Bash:ok', 'Read:error']);
    for (const d of await calls.getByTestId('tool-duration').allTextContents()) expect(d).toMatch(/\d/);
    await calls.nth(2).getByTestId('tool-call-toggle').click();
    expect(await calls.nth(2).getByTestId('tool-result').textContent()).toContain('does not exist');
    expect(await calls.nth(2).getByTestId('tool-args').textContent()).toContain(`"file_path": "${path.join(srv.workdir, 'missing.txt')}"`);
    await calls.nth(0).getByTestId('tool-call-toggle').click();
    expect(await calls.nth(0).getByTestId('tool-result').textContent()).toBe('alpha\n\nExit code: 0');
    const round2 = reply.locator('[data-testid="assistant-round"][data-round="2"]');
    expect(await round2.getByTestId('tool-call').getAttribute('data-status')).toBe('ok');
    await group.scrollIntoViewIfNeeded();
    await screenshot(page, 'tool-trace');

    // Edited files: successful writes of the reply, listed at its end.
    const edited = reply.getByTestId('edited-file');
    expect(await edited.count()).toBe(1);
    expect(await edited.getAttribute('data-action')).toBe('write');
    expect(await edited.textContent()).toContain('src/app.ts');
    expect(fs.readFileSync(path.join(srv.workdir, 'src/app.ts'), 'utf8')).toBe('export {};\n');
  });

  it('Transcript: usage per round, shown in full in agent-dev mode', async () => {
    await newChat(page, 'tools');
    await sendAndWait(page, '/think', 'The answer is 42.');
    const usage = lastReply(page).getByTestId('round-usage');
    expect(await usage.count()).toBe(1);
    // claude-sonnet-4-6 has prices: the kernel's cost of the round follows the tokens.
    expect(await usage.textContent()).toMatch(/^\d+ in · 20 out · (<)?\$\d+\.\d+$/);
    expect(await lastReply(page).getByTestId('round-usage-full').count()).toBe(0);

    await newChat(page, 'agent-dev', srv.workdir);
    await sendAndWait(page, '/tools', 'one file written.');
    const full = lastReply(page).getByTestId('round-usage-full');
    expect(await full.count()).toBe(3);
    const text = (await full.first().textContent()) ?? '';
    for (const part of ['claude_code/claude-sonnet-4-6', 'input', 'output 20', 'cache read 64', 'cost $', 'stop tool_use']) expect(text).toContain(part);
  });

  it('Transcript: history comes back from the snapshot (tool results paired by toolCallId)', async () => {
    await newChat(page, 'tools', srv.workdir);
    await sendAndWait(page, '/tools', 'one file written.');
    await page.reload();
    const reply = lastReply(page);
    await reply.getByText('one file written.').waitFor();
    const calls = reply.getByTestId('tool-call');
    expect(await calls.evaluateAll((els) => els.map((e) => `${e.getAttribute('data-tool-name')}:${e.getAttribute('data-status')}`))).toEqual(['Bash:ok', 'Bash:ok', 'Read:error', 'Write:ok']);
    await calls.nth(1).getByTestId('tool-call-toggle').click();
    expect(await calls.nth(1).getByTestId('tool-result').textContent()).toBe('beta\n\nExit code: 0');
    expect(await reply.getByTestId('edited-file').textContent()).toContain('src/app.ts');
    expect(await page.getByTestId('user-text').allTextContents()).toEqual(['/tools']);
  });

  it('AskUserQuestion: tool calls render through their own card', async () => {
    // The card in depth (two clients, stop, timeout, refusals, reloads) is in ask-user-question.test.ts.
    await newChat(page);
    await send(page, '/ask');
    const card = lastReply(page).getByTestId('ask-user-question-card');
    await card.waitFor();
    expect(await card.getAttribute('data-state')).toBe('open');
    expect(await card.getByTestId('ask-tab').count()).toBe(2);
    expect(await card.getByTestId('ask-prompt').first().textContent()).toContain('Which database should we use?');
    const options = card.locator('[data-testid="ask-option"][data-question-id="q1"]');
    expect(await options.evaluateAll((els) => els.map((e) => e.getAttribute('data-label')))).toEqual(['SQLite', 'PostgreSQL', 'DuckDB']);
    expect(await options.first().getByTestId('ask-recommended').count()).toBe(1);
    // A tool call, not a plain row: no generic tool row for it.
    expect(await lastReply(page).getByTestId('tool-call').count()).toBe(0);
    await page.getByTestId('stop-button').click();
    await waitIdle(page);
    await expect.poll(() => card.getAttribute('data-state')).toBe('cancelled');
    expect(errors).toEqual([]);
  });
});
