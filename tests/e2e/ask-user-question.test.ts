/**
 * AskUserQuestion end to end (issue 6): the real claude_code provider against the Anthropic
 * mock, whose round 1 is an AskUserQuestion tool_use with two questions (the recommended option
 * not first) and round 2 a text reply. Two clients on one conversation, answers, stop, the
 * timeout, a refused answer, reloads, and the card in light and dark.
 */
import fs from 'node:fs';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket as NodeWebSocket } from 'ws';
import type { AskUserQuestionService } from '../../plugins/tool-ask-user-question/service.js';
import { conversationItem, currentConversationId, lastReply, newChat, openApp, send, waitIdle } from './helpers/app.js';
import { hasChromium, launchBrowser, newContext, SCREENSHOTS, trackErrors } from './helpers/browser.js';
import { startE2EServer, type E2EServer } from './helpers/e2e-server.js';
import { toolResultsOf } from './helpers/mock-model.js';
import { ensureWebuiBuilt } from './helpers/webui-build.js';

describe.skipIf(!hasChromium)('WebUI AskUserQuestion (e2e)', () => {
  let srv: E2EServer;
  let browser: Browser;
  let contexts: BrowserContext[];
  let a: Page;
  let b: Page;
  let errors: string[][];

  beforeAll(async () => {
    await ensureWebuiBuilt();
    [srv, browser] = await Promise.all([startE2EServer(), launchBrowser()]);
    // Two clients: separate contexts, so neither is a background tab of the other.
    contexts = await Promise.all([newContext(browser), newContext(browser)]);
    [a, b] = await Promise.all(contexts.map((c) => c.newPage()));
    errors = [trackErrors(a), trackErrors(b)];
    await Promise.all([openApp(a, srv.appUrl), openApp(b, srv.appUrl)]);
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await srv?.close();
  });

  const service = () => srv.server.kernel.services.get<AskUserQuestionService>('askUserQuestion')!;
  const setTimeoutMs = (timeoutMs: number) => srv.server.kernel.settings.update({ askUserQuestion: { timeoutMs } });
  const card = (p: Page): Locator => lastReply(p).getByTestId('ask-user-question-card');
  const options = (c: Locator, q: string) => c.locator(`[data-testid="ask-option"][data-question-id="${q}"]`);
  const option = (c: Locator, q: string, label: string) => c.locator(`[data-testid="ask-option"][data-question-id="${q}"][data-label="${label}"]`);
  const echo = (c: Locator) => c.getByTestId('ask-echo-text').allTextContents();

  /** Seconds the card's countdown shows (m:ss). */
  async function shownSeconds(c: Locator): Promise<number> {
    const text = (await c.getByTestId('ask-countdown').textContent()) ?? '';
    const m = /^(\d+):(\d\d)$/.exec(text.trim());
    if (!m) throw new Error(`the countdown reads "${text}"`);
    return Number(m[1]) * 60 + Number(m[2]);
  }

  /** Ask in page `p` (a new chat) and wait for the card; returns the conversation and the call. */
  async function ask(p: Page): Promise<{ conversationId: string; toolCallId: string; deadlineAt: number | null }> {
    await newChat(p);
    await send(p, '/ask');
    await card(p).waitFor();
    expect(await card(p).getAttribute('data-state')).toBe('open');
    const conversationId = await currentConversationId(p);
    const pending = service().pending(conversationId);
    expect(pending).toHaveLength(1);
    return { conversationId, toolCallId: pending[0]!.toolCallId, deadlineAt: pending[0]!.deadlineAt };
  }

  async function follow(p: Page, conversationId: string): Promise<void> {
    await p.bringToFront();
    await conversationItem(p, conversationId).getByTestId('conversation-title').click();
  }

  /** The request of round 2: the one carrying the AskUserQuestion result back to the model. */
  async function resultToModel(toolCallId: string): Promise<{ text: string; isError: boolean }> {
    let found: { text: string; isError: boolean } | undefined;
    await expect
      .poll(() => {
        for (const r of srv.mock.requests) found = toolResultsOf(r.body).find((t) => t.toolUseId === toolCallId) ?? found;
        return !!found;
      })
      .toBe(true);
    return found!;
  }

  it('two clients: the same card and countdown in both, tabs, recommended first, Submit once all are answered; one answers and the other turns read-only; the model gets the choices', async () => {
    await setTimeoutMs(60_000);
    const { conversationId, toolCallId, deadlineAt } = await ask(a);
    await follow(b, conversationId);
    const [ca, cb] = [card(a), card(b)];
    await cb.waitFor();
    expect(await cb.getAttribute('data-state')).toBe('open');
    expect(await cb.getAttribute('data-tool-call-id')).toBe(toolCallId);

    // One deadline: both count down to it, and it is the server's.
    const [sa, sb] = await Promise.all([shownSeconds(ca), shownSeconds(cb)]);
    const expected = Math.ceil((deadlineAt! - Date.now()) / 1000);
    expect(Math.abs(sa - sb)).toBeLessThanOrEqual(1);
    expect(Math.abs(sa - expected)).toBeLessThanOrEqual(2);
    expect(sa).toBeGreaterThan(50);

    // Tabs per question; the recommended option is marked and shown first (the model put it second).
    await a.bringToFront();
    expect(await ca.getByTestId('ask-tab').allTextContents()).toEqual([expect.stringContaining('Database'), expect.stringContaining('Tests')]);
    expect(await options(ca, 'q1').evaluateAll((els) => els.map((e) => `${e.getAttribute('data-label')}:${e.getAttribute('data-recommended')}`))).toEqual([
      'SQLite:true',
      'PostgreSQL:false',
      'DuckDB:false',
    ]);
    expect(await options(ca, 'q1').first().getByTestId('ask-recommended').textContent()).toBe('Recommended');
    expect(await ca.getByTestId('ask-recommended').count()).toBe(1);

    const submit = ca.getByTestId('ask-submit');
    expect(await submit.isDisabled()).toBe(true);
    await option(ca, 'q1', 'PostgreSQL').click();
    expect(await ca.getByTestId('ask-progress').textContent()).toBe('1/2 answered');
    expect(await submit.isDisabled()).toBe(true);
    // Picking moved on to the next question's tab.
    await option(ca, 'q2', 'No').waitFor({ state: 'visible' });
    await option(ca, 'q2', 'No').click();
    expect(await submit.isEnabled()).toBe(true);
    await submit.click();

    await expect.poll(() => ca.getAttribute('data-state')).toBe('answered');
    await expect.poll(() => cb.getAttribute('data-state')).toBe('answered');
    for (const c of [ca, cb]) {
      expect(await c.getByTestId('ask-outcome').textContent()).toBe('Answered');
      expect(await echo(c)).toEqual(['PostgreSQL', 'No']);
      expect(await c.locator('button:not([disabled]), input:not([disabled])').count()).toBe(0);
    }

    const toModel = await resultToModel(toolCallId);
    expect(toModel.isError).toBe(false);
    expect(toModel.text).toContain('The user answered the questions:');
    expect(toModel.text).toContain('- q1 (Database) "Which database should we use?": PostgreSQL');
    expect(toModel.text).toContain('- q2 (Tests) "Add tests?": No');
    await lastReply(a).getByText('Noted.').waitFor();
    await lastReply(b).getByText('Noted.').waitFor();
    await Promise.all([waitIdle(a), waitIdle(b)]);
    // History replays the settled card.
    await b.reload();
    await card(b).waitFor();
    expect(await card(b).getAttribute('data-state')).toBe('answered');
    expect(await echo(card(b))).toEqual(['PostgreSQL', 'No']);
    expect(errors.flat()).toEqual([]);
  });

  it('Stop while a question is pending settles it as cancelled', async () => {
    await setTimeoutMs(60_000);
    const { conversationId, toolCallId } = await ask(a);
    await a.getByTestId('stop-button').click();
    await waitIdle(a);
    await expect.poll(() => card(a).getAttribute('data-state')).toBe('cancelled');
    expect(await card(a).getByTestId('ask-outcome').textContent()).toContain('Cancelled');
    expect(service().pending(conversationId)).toEqual([]);
    // Nothing was chosen, and no round 2 was asked for.
    expect(srv.mock.requests.some((r) => toolResultsOf(r.body).some((t) => t.toolUseId === toolCallId))).toBe(false);
    await a.reload();
    await card(a).waitFor();
    expect(await card(a).getAttribute('data-state')).toBe('cancelled');
    expect(errors.flat()).toEqual([]);
  });

  it('a short timeout takes the recommended options (timed out), and the model is told so', async () => {
    await setTimeoutMs(1500);
    try {
      const { toolCallId } = await ask(a);
      expect(await shownSeconds(card(a))).toBeLessThanOrEqual(2);
      await expect.poll(() => card(a).getAttribute('data-state'), { timeout: 5000 }).toBe('timedOut');
      expect(await card(a).getByTestId('ask-outcome').textContent()).toContain('Timed out');
      // The recommended option, and the first one where none is recommended.
      expect(await echo(card(a))).toEqual(['SQLite', 'Yes']);
      const toModel = await resultToModel(toolCallId);
      expect(toModel.text).toContain('did not answer within 1500 ms');
      expect(toModel.text).toContain('recommended option was taken');
      expect(toModel.text).toContain('": SQLite');
      expect(toModel.text).toContain('"Add tests?": Yes');
      await lastReply(a).getByText('Noted.').waitFor();
      await waitIdle(a);
    } finally {
      await setTimeoutMs(60_000);
    }
  });

  it('an answer for another conversation is refused (raw socket and the app) and the question stays pending', async () => {
    await setTimeoutMs(60_000);
    const { conversationId, toolCallId } = await ask(a);
    const answers = JSON.stringify([
      { questionId: 'q1', selectedLabel: 'DuckDB' },
      { questionId: 'q2', selectedLabel: 'Later' },
    ]);

    // A raw gateway client, with the right token but the wrong conversation_id.
    const ws = new NodeWebSocket(`${srv.url.replace('http', 'ws')}/ws?token=${srv.token}`);
    try {
      const reply = await new Promise<{ ok: boolean; error?: { code: string; message: string } }>((resolve, reject) => {
        ws.on('error', reject);
        ws.on('message', (data) => {
          for (const m of [JSON.parse(String(data))].flat() as Array<{ type: string; id?: string }>) {
            if (m.type === 'hello') ws.send(JSON.stringify({ type: 'chat_queue', id: 'wrong-1', item: { action: 'tool_answer', item_id: toolCallId, request_json: answers, conversation_id: 'someone-elses' } }));
            if (m.type === 'reply' && m.id === 'wrong-1') resolve(m as never);
          }
        });
      });
      expect(reply.ok).toBe(false);
      expect(reply.error?.code).toBe('forbidden');
      expect(reply.error?.message).toContain('does not belong to conversation "someone-elses"');
    } finally {
      ws.close();
    }
    expect(service().pending(conversationId).map((q) => q.toolCallId)).toEqual([toolCallId]);
    expect(await card(a).getAttribute('data-state')).toBe('open');
    // Esc inside the card is the card's, not "stop the run".
    await card(a).locator('[data-testid="ask-other-input"][data-question-id="q1"]').press('Escape');
    await a.waitForTimeout(100);
    expect(service().pending(conversationId)).toHaveLength(1);

    // The app's own transport, its tool_answer re-addressed once: the card shows the refusal and stays open.
    await a.evaluate(() => {
      const w = window as unknown as { __misaddress: boolean };
      w.__misaddress = true;
      const proto = window.WebSocket.prototype;
      const send = proto.send;
      proto.send = function (this: WebSocket, data: Parameters<WebSocket['send']>[0]) {
        if (w.__misaddress && typeof data === 'string' && data.includes('"tool_answer"')) {
          const m = JSON.parse(data) as { item: { conversation_id: string } };
          m.item.conversation_id = 'someone-elses';
          data = JSON.stringify(m);
          w.__misaddress = false;
        }
        send.call(this, data);
      };
    });
    const c = card(a);
    await option(c, 'q1', 'DuckDB').click();
    await option(c, 'q2', 'Later').click();
    await c.getByTestId('ask-submit').click();
    await c.getByTestId('ask-error').filter({ hasText: 'does not belong to conversation' }).waitFor();
    expect(await c.getAttribute('data-state')).toBe('open');
    expect(await c.getByTestId('ask-submit').isEnabled()).toBe(true);
    expect(service().pending(conversationId)).toHaveLength(1);

    // Sent again, correctly addressed: answered.
    await c.getByTestId('ask-submit').click();
    await expect.poll(() => c.getAttribute('data-state')).toBe('answered');
    expect(await echo(c)).toEqual(['DuckDB', 'Later']);
    expect((await resultToModel(toolCallId)).text).toContain('": DuckDB');
    await lastReply(a).getByText('Noted.').waitFor();
    await waitIdle(a);
  });

  it('a reloaded page shows the pending card with the true remaining time; past the deadline it shows it expired', async () => {
    await setTimeoutMs(30_000);
    const { conversationId, deadlineAt } = await ask(a);
    // Let some of the time pass, so a countdown that restarted would show it.
    await new Promise((r) => setTimeout(r, 2500));
    await a.reload();
    await card(a).waitFor();
    expect(await card(a).getAttribute('data-state')).toBe('open');
    const shown = await shownSeconds(card(a));
    expect(Math.abs(shown - Math.ceil((deadlineAt! - Date.now()) / 1000))).toBeLessThanOrEqual(1);
    expect(shown).toBeLessThanOrEqual(28);

    // A client whose clock is past the deadline (the server has not settled it yet): expired, nothing to submit.
    const late = await newContext(browser);
    try {
      const p = await late.newPage();
      await p.clock.setFixedTime(deadlineAt! + 5000);
      await openApp(p, srv.appUrl);
      await follow(p, conversationId);
      const c = card(p);
      await c.waitFor();
      expect(await c.getAttribute('data-state')).toBe('expired');
      expect(await c.getByTestId('ask-countdown').textContent()).toBe('Time is up');
      expect(await c.getByTestId('ask-expired').textContent()).toContain('SQLite, Yes will be taken');
      expect(await c.getByTestId('ask-submit').isDisabled()).toBe(true);

      // The first page answers; the late one follows to the outcome.
      await a.bringToFront();
      await option(card(a), 'q1', 'SQLite').click();
      await option(card(a), 'q2', 'Yes').click();
      await card(a).getByTestId('ask-submit').click();
      await expect.poll(() => c.getAttribute('data-state')).toBe('answered');
      await waitIdle(a);
    } finally {
      await late.close();
      await setTimeoutMs(60_000);
    }
  });

  it('the card in light and dark', async () => {
    await setTimeoutMs(180_000);
    const { conversationId } = await ask(a);
    await option(card(a), 'q1', 'SQLite').click();
    // Back to the first tab (picking moved on), to show the recommended marker and the choice.
    await card(a).locator('[data-testid="ask-tab"][data-question-id="q1"]').click();
    await a.mouse.move(0, 0);
    await shot(a, 'ask-user-question-light');
    const dark = await newContext(browser, { colorScheme: 'dark' });
    try {
      const p = await dark.newPage();
      await openApp(p, srv.appUrl);
      expect(await p.evaluate(() => document.documentElement.dataset.theme)).toBe('dark');
      await follow(p, conversationId);
      await card(p).waitFor();
      await option(card(p), 'q1', 'PostgreSQL').click();
      await card(p).locator('[data-testid="ask-tab"][data-question-id="q1"]').click();
      await p.mouse.move(0, 0);
      await shot(p, 'ask-user-question-dark');
      await card(p).locator('[data-testid="ask-tab"][data-question-id="q2"]').click();
      await option(card(p), 'q2', 'Yes').click();
      await card(p).getByTestId('ask-submit').click();
      await expect.poll(() => card(a).getAttribute('data-state')).toBe('answered');
      await lastReply(p).getByText('Noted.').waitFor();
      await waitIdle(p);
      await shot(p, 'ask-user-question-answered-dark');
    } finally {
      await dark.close();
      await setTimeoutMs(60_000);
    }
  });

  /** The card with a margin of its surroundings. */
  async function shot(p: Page, name: string): Promise<void> {
    const c = card(p);
    await c.scrollIntoViewIfNeeded();
    const box = (await c.boundingBox())!;
    const pad = 16;
    fs.mkdirSync(SCREENSHOTS, { recursive: true });
    await p.screenshot({ path: `${SCREENSHOTS}/${name}.png`, clip: { x: Math.max(0, box.x - pad), y: Math.max(0, box.y - pad), width: box.width + 2 * pad, height: box.height + 2 * pad } });
  }
});
