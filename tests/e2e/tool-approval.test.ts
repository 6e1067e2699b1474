/**
 * Tool approvals in the WebUI (issue 14): the real server with the permissions plugin, whose
 * settings ask before every Bash call, and the real claude_code provider against the Anthropic
 * mock (`/pwd` is one Bash call). Two clients on one conversation: the card appears on both with
 * one countdown, Approve on one runs the tool and settles the card on the other, a reload brings
 * a pending card back, a wrong conversation id is refused, Deny refuses the call. Screenshots of
 * the card at desktop width and at 390 px go to /tmp/la-perm-shots/.
 */
import fs from 'node:fs';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PermissionsService } from '../../plugins/permissions/service.js';
import { conversationItem, currentConversationId, lastReply, newChat, openApp, send, waitIdle } from './helpers/app.js';
import { hasChromium, launchBrowser, newContext, trackErrors } from './helpers/browser.js';
import { startE2EServer, type E2EServer } from './helpers/e2e-server.js';
import { toolResultsOf } from './helpers/mock-model.js';
import { ensureWebuiBuilt } from './helpers/webui-build.js';

const SHOTS = '/tmp/la-perm-shots';

describe.skipIf(!hasChromium)('WebUI tool approvals (e2e)', () => {
  let srv: E2EServer;
  let browser: Browser;
  let contexts: BrowserContext[];
  let a: Page;
  let b: Page;
  let errors: string[][];

  beforeAll(async () => {
    await ensureWebuiBuilt();
    [srv, browser] = await Promise.all([
      startE2EServer({ settings: { permissions: { rules: [{ tool: 'Bash', action: 'ask' }], approvalTimeoutMs: 60_000 } } }),
      launchBrowser(),
    ]);
    contexts = await Promise.all([newContext(browser), newContext(browser)]);
    [a, b] = await Promise.all(contexts.map((c) => c.newPage()));
    errors = [trackErrors(a), trackErrors(b)];
    await Promise.all([openApp(a, srv.appUrl), openApp(b, srv.appUrl)]);
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await srv?.close();
  });

  const service = () => srv.server.kernel.services.get<PermissionsService>('permissions')!;
  const card = (p: Page): Locator => p.getByTestId('tool-approval-card').last();

  async function seconds(c: Locator): Promise<number> {
    const t = ((await c.getByTestId('approval-countdown').textContent()) ?? '').trim();
    const m = /^(\d+):(\d\d)$/.exec(t);
    if (!m) throw new Error(`the countdown reads "${t}"`);
    return Number(m[1]) * 60 + Number(m[2]);
  }

  /** Send `text` in a new chat on `p` and wait for its approval card. */
  async function ask(p: Page, text = '/pwd') {
    await newChat(p);
    await send(p, text);
    await card(p).waitFor();
    const conversationId = await currentConversationId(p);
    const pending = service().pending(conversationId);
    expect(pending).toHaveLength(1);
    return { conversationId, toolCallId: pending[0]!.toolCallId, deadlineAt: pending[0]!.deadlineAt };
  }

  async function follow(p: Page, conversationId: string) {
    await p.bringToFront();
    await conversationItem(p, conversationId).getByTestId('conversation-title').click();
  }

  function resultToModel(toolCallId: string) {
    for (const r of srv.mock.requests) for (const t of toolResultsOf(r.body)) if (t.toolUseId === toolCallId) return t;
    return undefined;
  }

  it('the card appears on both clients with one countdown; Approve runs the tool and settles the card on the second tab too', async () => {
    const { conversationId, toolCallId, deadlineAt } = await ask(a);
    await follow(b, conversationId);
    const [ca, cb] = [card(a), card(b)];
    await cb.waitFor();
    for (const c of [ca, cb]) {
      expect(await c.getAttribute('data-state')).toBe('open');
      expect(await c.getAttribute('data-tool-call-id')).toBe(toolCallId);
      expect(await c.getByTestId('approval-tool').textContent()).toBe('Bash');
      expect(await c.getByTestId('approval-summary').textContent()).toBe('pwd');
      expect(await c.getByTestId('approval-rule').textContent()).toBe('Asked by permissions rule #1: Bash');
    }
    const [sa, sb] = await Promise.all([seconds(ca), seconds(cb)]);
    expect(Math.abs(sa - sb)).toBeLessThanOrEqual(1);
    expect(Math.abs(sa - Math.ceil((deadlineAt - Date.now()) / 1000))).toBeLessThanOrEqual(2);
    // Nothing ran yet: the model has no result.
    expect(resultToModel(toolCallId)).toBeUndefined();

    await a.bringToFront();
    await ca.getByTestId('approval-approve').click();
    await expect.poll(() => ca.getAttribute('data-state')).toBe('approved');
    await expect.poll(() => cb.getAttribute('data-state')).toBe('approved');
    for (const c of [ca, cb]) {
      expect(await c.getByTestId('approval-outcome').textContent()).toBe('Approved');
      expect(await c.locator('button:not([disabled])').count()).toBe(0);
    }
    await lastReply(a).getByText('Reported the folder.').waitFor();
    await lastReply(b).getByText('Reported the folder.').waitFor();
    const toModel = resultToModel(toolCallId)!;
    expect(toModel.isError).toBe(false);
    expect(toModel.text).toContain(srv.workdir.split('/').pop());
    await Promise.all([waitIdle(a), waitIdle(b)]);
    expect(errors.flat()).toEqual([]);
  });

  it('a reloaded page shows the pending card with the true remaining time; a wrong conversation id is refused; Deny refuses the call', async () => {
    const { conversationId, toolCallId, deadlineAt } = await ask(a);
    await new Promise((r) => setTimeout(r, 1500));
    await a.reload();
    await card(a).waitFor();
    expect(await card(a).getAttribute('data-state')).toBe('open');
    expect(Math.abs((await seconds(card(a))) - Math.ceil((deadlineAt - Date.now()) / 1000))).toBeLessThanOrEqual(1);

    // The app's own transport with its tool_approval re-addressed once: refused, the card stays open.
    await a.evaluate(() => {
      const w = window as unknown as { __misaddress: boolean };
      w.__misaddress = true;
      const proto = window.WebSocket.prototype;
      const send = proto.send;
      proto.send = function (this: WebSocket, data: Parameters<WebSocket['send']>[0]) {
        if (w.__misaddress && typeof data === 'string' && data.includes('"tool_approval"')) {
          const m = JSON.parse(data) as { item: { conversation_id: string } };
          m.item.conversation_id = 'someone-elses';
          data = JSON.stringify(m);
          w.__misaddress = false;
        }
        send.call(this, data);
      };
    });
    await card(a).getByTestId('approval-approve').click();
    await card(a).getByTestId('approval-error').filter({ hasText: 'does not belong to conversation "someone-elses"' }).waitFor();
    expect(await card(a).getAttribute('data-state')).toBe('open');
    expect(service().pending(conversationId)).toHaveLength(1);

    await card(a).getByTestId('approval-deny').click();
    await expect.poll(() => card(a).getAttribute('data-state')).toBe('denied');
    expect(await card(a).getByTestId('approval-outcome').textContent()).toBe('Denied');
    await expect.poll(() => resultToModel(toolCallId)?.isError).toBe(true);
    expect(resultToModel(toolCallId)!.text).toContain('Tool call denied: the user did not approve Bash "pwd"');
    await waitIdle(a);
  });

  it('Stop settles a pending approval as denied on the card', async () => {
    const { conversationId } = await ask(a);
    await a.getByTestId('stop-button').click();
    await waitIdle(a);
    await expect.poll(() => card(a).getAttribute('data-state')).toBe('cancelled');
    expect(await card(a).getByTestId('approval-outcome').textContent()).toBe('Run stopped · denied');
    expect(service().pending(conversationId)).toEqual([]);
  });

  it('the card at desktop width and at 390 px (screenshots in /tmp/la-perm-shots)', async () => {
    fs.mkdirSync(SHOTS, { recursive: true });
    const { conversationId } = await ask(a, '/toolgate approval-shot');
    await a.mouse.move(0, 0);
    await shot(a, 'approval-desktop');
    await a.setViewportSize({ width: 390, height: 844 });
    try {
      await card(a).scrollIntoViewIfNeeded();
      expect(await a.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
      const box = await card(a).boundingBox();
      expect(box && box.x + box.width).toBeLessThanOrEqual(390);
      await shot(a, 'approval-390');
      await a.screenshot({ path: `${SHOTS}/approval-390-page.png` });
    } finally {
      await a.setViewportSize({ width: 1280, height: 820 });
    }
    const dark = await newContext(browser, { colorScheme: 'dark' });
    try {
      const p = await dark.newPage();
      await openApp(p, srv.appUrl);
      await follow(p, conversationId);
      await card(p).waitFor();
      await p.mouse.move(0, 0);
      await shot(p, 'approval-dark');
    } finally {
      await dark.close();
    }
    await a.bringToFront();
    await card(a).getByTestId('approval-approve-session').click();
    await expect.poll(() => card(a).getAttribute('data-state')).toBe('approved');
    expect(await card(a).getByTestId('approval-outcome').textContent()).toBe('Approved for this session');
    expect(service().sessionGrants(conversationId)).toEqual(['Bash\u0000*']);
    srv.control.release('approval-shot');
    await lastReply(a).getByText('Tool finished.').waitFor();
    await waitIdle(a);
    await shot(a, 'approval-settled-desktop');
  });

  /** The card with a margin of its surroundings. */
  async function shot(p: Page, name: string): Promise<void> {
    const c = card(p);
    await c.scrollIntoViewIfNeeded();
    const box = (await c.boundingBox())!;
    const pad = 16;
    const vw = p.viewportSize()!.width;
    await p.screenshot({ path: `${SHOTS}/${name}.png`, clip: { x: Math.max(0, box.x - pad), y: Math.max(0, box.y - pad), width: Math.min(vw - Math.max(0, box.x - pad), box.width + 2 * pad), height: box.height + 2 * pad } });
  }
});
