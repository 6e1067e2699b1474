/**
 * The AskUserQuestion card in a real browser (system Chromium), mounted alone: the component is
 * bundled with Vite and @vitejs/plugin-vue into a tiny harness page with the app's theme CSS.
 * Tabs, single choice, the recommended marker, "Other", Submit gating, a double submit, the
 * countdown and an expired deadline, the read-only echo once settled, and the dark theme.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasChromium, launchBrowser } from '../e2e/helpers/browser.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const CARD = path.join(ROOT, 'webui/src/components/ask-user-question/AskUserQuestionCard.vue');

const HARNESS = `
import { createApp, h, reactive } from 'vue';
import Card from ${JSON.stringify(CARD)};
const state = reactive({ key: 0, props: null });
window.__submits = [];
window.__mount = (props) => { window.__submits = []; state.key++; state.props = props; };
window.__patch = (patch) => { state.props = { ...state.props, ...patch }; };
createApp({
  render: () => state.props
    ? h(Card, { key: state.key, ...state.props, onSubmit: (answers) => window.__submits.push(JSON.parse(JSON.stringify(answers))) })
    : null,
}).mount('#app');
`;

async function buildHarness(): Promise<string> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'la-ask-card-'));
  try {
    fs.writeFileSync(path.join(dir, 'harness.js'), HARNESS);
    const { build } = await import('vite');
    const { default: vue } = await import('@vitejs/plugin-vue');
    await build({
      configFile: false,
      root: dir,
      logLevel: 'silent',
      plugins: [vue()],
      resolve: { alias: [{ find: /^vue$/, replacement: path.join(ROOT, 'node_modules/vue/dist/vue.runtime.esm-bundler.js') }] },
      define: { __VUE_OPTIONS_API__: 'true', __VUE_PROD_DEVTOOLS__: 'false', __VUE_PROD_HYDRATION_MISMATCH_DETAILS__: 'false', 'process.env.NODE_ENV': '"production"' },
      build: {
        outDir: path.join(dir, 'out'),
        minify: false,
        lib: { entry: path.join(dir, 'harness.js'), formats: ['iife'], name: 'AskCardHarness', fileName: () => 'harness.js', cssFileName: 'harness' },
      },
    });
    const out = path.join(dir, 'out');
    const js = fs.readFileSync(path.join(out, 'harness.js'), 'utf8');
    const css = fs.readdirSync(out).filter((f) => f.endsWith('.css')).map((f) => fs.readFileSync(path.join(out, f), 'utf8')).join('\n');
    const theme = fs.readFileSync(path.join(ROOT, 'webui/src/styles/base.css'), 'utf8');
    const esc = (s: string) => s.replace(/<\/(script|style)/gi, '<\\/$1');
    return `<!doctype html><html><head><meta charset="utf-8"><style>${esc(theme)}\n${esc(css)}</style></head><body><div id="app"></div><script>${esc(js)}</script></body></html>`;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const two = [
  { id: 'q1', header: 'Database', prompt: 'Which database?', options: [{ label: 'SQLite', description: 'one file', recommended: true }, { label: 'Postgres' }] },
  { id: 'q2', header: 'Deploy', prompt: 'Deploy where?', options: [{ label: 'Cloud' }, { label: 'Laptop' }] },
];

describe.skipIf(!hasChromium)('AskUserQuestion card (browser)', () => {
  let browser: Browser;
  let page: Page;
  const errors: string[] = [];

  beforeAll(async () => {
    const [html, b] = await Promise.all([buildHarness(), launchBrowser()]);
    browser = b;
    page = await browser.newPage();
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
    await page.setContent(html);
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
  });

  const mount = (props: Record<string, unknown>) => page.evaluate((p) => (window as any).__mount(p), props);
  const patch = (props: Record<string, unknown>) => page.evaluate((p) => (window as any).__patch(p), props);
  const submits = () => page.evaluate(() => (window as any).__submits as unknown[]);
  const tid = (id: string) => page.getByTestId(id);
  const base = { toolCallId: 't1', conversationId: 'c1', questions: two };

  it('tabs, the recommended option first and marked, Submit once every question is answered, a double submit ignored', async () => {
    await mount({ ...base, deadlineAt: Date.now() + 90_000 });
    expect(await tid('ask-tab').allTextContents()).toEqual(['1Database', '2Deploy']);
    const firstPanel = page.locator('[data-testid="ask-panel"][data-question-id="q1"]');
    expect(await firstPanel.getByTestId('ask-option').evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset.label))).toEqual(['SQLite', 'Postgres']);
    expect(await firstPanel.getByTestId('ask-recommended').count()).toBe(1);
    expect(await firstPanel.locator('[data-recommended="true"]').getAttribute('data-label')).toBe('SQLite');
    expect(await tid('ask-submit').isDisabled()).toBe(true);

    await firstPanel.locator('[data-label="Postgres"]').click();
    // Picking moves on to the next unanswered question.
    await expect.poll(() => page.locator('[data-testid="ask-tab"][aria-selected="true"]').getAttribute('data-question-id')).toBe('q2');
    expect(await tid('ask-submit').isDisabled()).toBe(true);
    const other = page.locator('[data-testid="ask-other-input"][data-question-id="q2"]');
    await other.fill('  on my own server ');
    expect(await page.locator('[data-testid="ask-tab"][data-question-id="q2"]').getAttribute('data-answered')).toBe('true');
    expect(await tid('ask-submit').isDisabled()).toBe(false);

    // Back to the first tab: the choice is still there.
    await page.locator('[data-testid="ask-tab"][data-question-id="q1"]').click();
    expect(await firstPanel.locator('[data-label="Postgres"]').getAttribute('data-picked')).toBe('true');

    await tid('ask-submit').evaluate((b) => {
      (b as HTMLButtonElement).click();
      (b as HTMLButtonElement).click();
    });
    await other.press('Enter');
    expect(await submits()).toEqual([[{ questionId: 'q1', selectedLabel: 'Postgres' }, { questionId: 'q2', custom: 'on my own server' }]]);
    expect(await page.getByTestId('ask-user-question-card').getAttribute('data-state')).toBe('sending');
    expect(await firstPanel.locator('[data-label="SQLite"]').isDisabled()).toBe(true);

    // A refused answer re-opens the card with the reason.
    await patch({ submitError: 'question "t1" is already settled' });
    expect(await tid('ask-error').textContent()).toContain('already settled');
    await tid('ask-submit').click();
    expect(await submits()).toHaveLength(2);

    await patch({ settled: { outcome: 'answered', answers: [{ questionId: 'q1', selectedLabel: 'Postgres' }, { questionId: 'q2', custom: 'on my own server' }] } });
    expect(await tid('ask-outcome').getAttribute('data-outcome')).toBe('answered');
    expect(await tid('ask-submit').count()).toBe(0);
    expect(await tid('ask-countdown').count()).toBe(0);
    const echo = await tid('ask-echo-answer').evaluateAll((els) => els.map((e) => [e.querySelector('[data-testid="ask-echo-text"]')!.textContent, (e as HTMLElement).dataset.typed]));
    expect(echo).toEqual([
      ['Postgres', 'false'],
      ['on my own server', 'true'],
    ]);
    expect(await tid('ask-echo-typed').count()).toBe(1);
    expect(errors).toEqual([]);
  });

  it('counts down from deadlineAt and expires; a deadline already past shows the card expired', async () => {
    await mount({ ...base, questions: [two[0]], deadlineAt: Date.now() + 125_000 });
    expect(await tid('ask-tab').count()).toBe(0); // one question: no tabs
    expect(await tid('ask-countdown').textContent()).toMatch(/^2:0[45]$/);
    await mount({ ...base, questions: [two[0]], deadlineAt: Date.now() + 1200 });
    await page.locator('[data-label="SQLite"]').click();
    expect(await tid('ask-submit').isDisabled()).toBe(false);
    await expect.poll(() => tid('ask-countdown').getAttribute('data-expired'), { timeout: 5000 }).toBe('true');
    expect(await tid('ask-countdown').textContent()).toBe('Time is up');
    expect(await tid('ask-submit').isDisabled()).toBe(true);
    expect(await tid('ask-expired').textContent()).toContain('SQLite will be taken');

    await mount({ ...base, deadlineAt: Date.now() - 5000 });
    expect(await page.getByTestId('ask-user-question-card').getAttribute('data-state')).toBe('expired');
    expect(await tid('ask-countdown').textContent()).toBe('Time is up');
    expect(await page.locator('[data-label="SQLite"]').first().isDisabled()).toBe(true);
    await tid('ask-submit').evaluate((b) => (b as HTMLButtonElement).click());
    expect(await submits()).toEqual([]);

    // No deadline: no countdown.
    await mount({ ...base, deadlineAt: null });
    expect(await tid('ask-countdown').count()).toBe(0);
    expect(errors).toEqual([]);
  });

  it('echoes a timed-out or cancelled question read-only', async () => {
    await mount({ ...base, deadlineAt: Date.now() - 1, settled: { outcome: 'timedOut', answers: [{ questionId: 'q1', selectedLabel: 'SQLite' }, { questionId: 'q2', selectedLabel: 'Cloud' }] } });
    expect(await tid('ask-outcome').textContent()).toMatch(/Timed out/);
    expect(await tid('ask-echo-answer').allTextContents()).toEqual(['SQLite', 'Cloud'].map((s) => expect.stringContaining(s)));
    expect(await tid('ask-option').count()).toBe(0);
    await mount({ ...base, deadlineAt: null, settled: { outcome: 'cancelled', answers: [] } });
    expect(await tid('ask-outcome').textContent()).toMatch(/Cancelled/);
    expect(await tid('ask-echo-text').allTextContents()).toEqual(['No answer', 'No answer']);
  });

  it('follows the app theme (CSS variables)', async () => {
    await mount({ ...base, deadlineAt: null });
    const bg = () => page.getByTestId('ask-user-question-card').evaluate((e) => getComputedStyle(e).backgroundColor);
    await page.evaluate(() => document.documentElement.removeAttribute('data-theme'));
    expect(await bg()).toBe('rgb(255, 255, 255)');
    await page.evaluate(() => document.documentElement.setAttribute('data-theme', 'dark'));
    expect(await bg()).toBe('rgb(31, 31, 37)');
  });
});
