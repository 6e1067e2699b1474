/**
 * Issue 18, items 5, 6 and 10 through the gateway: `providers.test` (a real 1-token request,
 * plain-words errors), the working folder of WebUI runs (the `<home>/workspace` default, a chosen
 * folder checked, `workdir.check`), and per-conversation settings (instructions in every run's
 * system prompt, composer choices remembered in the conversation's meta, a broadcast on change).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Plugin } from '../../plugin-api.js';
import conversationSettings from '../../plugins/conversation-settings/index.js';
import historySqlite from '../../plugins/history-sqlite/index.js';
import { boot, cleanup, sendTo, TestClient, text } from './gateway-harness.js';

/** Records the working folder of every request built. */
function workdirSpy(): { plugin: Plugin; seen: string[] } {
  const seen: string[] = [];
  return { seen, plugin: { name: 'workdir-spy', apply: (ctx) => void ctx.sessionHooks.systemPrompt.tap((parts, r) => (seen.push(r.workdir), parts)) } };
}

/** Send to a conversation and wait for that run's end. */
async function runIn(c: TestClient, id: string, words: string, workdir?: string): Promise<void> {
  const after = Math.max(0, ...c.stream(id).map((m) => m.seq));
  const msg = sendTo(id, words);
  await c.ok({ ...msg, item: { ...msg.item, ...(workdir ? { workdir } : {}) } });
  await c.terminal(id, after);
}

const systemText = (req: { system: Array<{ text: string }> }) => req.system.map((p) => p.text).join('\n');

afterEach(cleanup);

describe('gateway: working folder of WebUI runs', () => {
  it('a run without a folder works in <home>/workspace, created on first use; a chosen folder is checked with a clear error', async () => {
    const spy = workdirSpy();
    const b = await boot({ extra: [spy.plugin] });
    const c = await TestClient.connect(b);
    const workspace = path.join(b.home, 'workspace');
    expect(fs.existsSync(workspace)).toBe(false);
    expect(await c.ok({ type: 'workdir.check' })).toEqual({ path: workspace, isDefault: true });
    expect(fs.statSync(workspace).isDirectory()).toBe(true);

    const first = await c.ok<{ conversationId: string }>({ ...text('hi'), item: { ...text('hi').item, mode: 'tools' } });
    await c.terminal(first.conversationId);
    expect(spy.seen.at(-1)).toBe(workspace);

    const file = path.join(b.home, 'plain.txt');
    fs.writeFileSync(file, 'x');
    const cases: Array<[string, RegExp]> = [
      [path.join(b.home, 'missing'), /^workdir .*missing: no such folder$/],
      [file, /^workdir .*plain\.txt: not a folder$/],
      ['relative/dir', /^workdir relative\/dir: must be an absolute path \(or start with ~\/\)$/],
    ];
    for (const [dir, message] of cases) {
      const r = await c.request({ ...sendTo(first.conversationId, 'x'), item: { ...sendTo(first.conversationId, 'x').item, workdir: dir } });
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.error).toMatchObject({ code: 'bad_request', message: expect.stringMatching(message) });
      const check = await c.request({ type: 'workdir.check', path: dir });
      expect(check.ok).toBe(false);
    }
    const chosen = fs.mkdtempSync(path.join(b.home, 'chosen-'));
    expect(await c.ok({ type: 'workdir.check', path: chosen })).toEqual({ path: chosen, isDefault: false });
    await runIn(c, first.conversationId, 'in chosen', chosen);
    expect(spy.seen.at(-1)).toBe(chosen);
  });
});

describe('gateway: providers.test', () => {
  it('answers ok with the model that answered, and the provider’s refusal in plain words', async () => {
    const b = await boot({ steps: [{ text: 'OK' }, { error: { message: '401 invalid x-api-key', code: 'auth', status: 401 } }, { error: { message: 'provider "fake" has no API key: set it', code: 'auth' } }] });
    const c = await TestClient.connect(b);
    const ok = await c.ok<Record<string, unknown>>({ type: 'providers.test', provider: 'fake' });
    expect(ok).toMatchObject({ ok: true, provider: 'fake', model: 'fake-1', message: 'Connected: Fake fake answered with fake-1.' });
    expect(b.provider.requests[0]).toMatchObject({ maxOutputTokens: 1, lean: true, tools: [] });

    const refused = await c.ok<Record<string, unknown>>({ type: 'providers.test', provider: 'fake' });
    expect(refused).toMatchObject({ ok: false, code: 'auth', status: 401 });
    expect(refused.message).toMatch(/^The provider refused the API key \(check that it is complete and still valid\)\. The provider said: .*401 invalid x-api-key$/);
    const missing = await c.ok<Record<string, unknown>>({ type: 'providers.test', provider: 'fake' });
    expect(missing.message).toBe('No API key is set for this provider. Paste one in its API key field and save.');

    const unknown = await c.request({ type: 'providers.test', provider: 'nope' });
    expect(unknown).toMatchObject({ ok: false, error: { code: 'not_found', message: 'unknown provider "nope" (known: fake)' } });
    const bad = await c.request({ type: 'providers.test' });
    expect(bad).toMatchObject({ ok: false, error: { code: 'bad_request' } });
  });
});

describe('gateway: per-conversation settings', () => {
  it('instructions go into the system prompt of every run of that conversation only; composer choices are stored and broadcast', async () => {
    const b = await boot({ extra: [historySqlite, conversationSettings] });
    const c = await TestClient.connect(b);
    const other = await TestClient.connect(b);
    const first = await c.ok<{ conversationId: string }>(text('one'));
    await c.terminal(first.conversationId);
    const id = first.conversationId;
    expect(await c.ok({ type: 'conversation.settings.get', conversationId: id })).toEqual({ conversationId: id, settings: {} });

    const set = await c.ok({ type: 'conversation.settings.set', conversationId: id, settings: { instructions: 'Answer in French.', provider: 'fake', model: 'fake-1', mode: 'text' } });
    expect(set).toEqual({ conversationId: id, settings: { instructions: 'Answer in French.', provider: 'fake', model: 'fake-1', mode: 'text' } });
    const notice = await other.waitFor((m) => m.type === 'extension' && m.name === 'conversation.settings');
    expect(notice).toMatchObject({ data: { conversationId: id, settings: { instructions: 'Answer in French.' } } });

    await runIn(c, id, 'two');
    expect(systemText(b.provider.requests.at(-1)!)).toContain('Instructions the user gave for this conversation (they apply to every reply in it):\n\nAnswer in French.');
    expect(systemText(b.provider.requests[0]!)).not.toContain('Answer in French.');

    // Another conversation does not get them.
    const second = await c.ok<{ conversationId: string }>(text('elsewhere'));
    await c.terminal(second.conversationId);
    expect(systemText(b.provider.requests.at(-1)!)).not.toContain('Answer in French.');

    // Cleared (null, or empty text): gone from the next run; the other choices stay.
    expect(await c.ok({ type: 'conversation.settings.set', conversationId: id, settings: { instructions: '  ', mode: null } })).toEqual({ conversationId: id, settings: { provider: 'fake', model: 'fake-1' } });
    await runIn(c, id, 'three');
    expect(systemText(b.provider.requests.at(-1)!)).not.toContain('Answer in French.');
    expect(await c.ok({ type: 'conversation.settings.get', conversationId: id })).toEqual({ conversationId: id, settings: { provider: 'fake', model: 'fake-1' } });

    // Refusals name what is wrong.
    expect(await c.request({ type: 'conversation.settings.get', conversationId: 'c_missing' })).toMatchObject({ ok: false, error: { code: 'not_found', message: 'unknown conversation "c_missing"' } });
    expect(await c.request({ type: 'conversation.settings.set', conversationId: id, settings: { mode: 'fast' } })).toMatchObject({ ok: false, error: { code: 'bad_request', message: 'mode: must be "text", "tools" or "agent-dev"' } });
    expect(await c.request({ type: 'conversation.settings.set', conversationId: id, settings: { colour: 'red' } })).toMatchObject({ ok: false, error: { code: 'bad_request' } });
  });

  it("a new chat's instructions, sent with its first message, shape that first request and are stored with the conversation", async () => {
    for (const extra of [[historySqlite, conversationSettings], [conversationSettings]]) {
      const b = await boot({ extra });
      const c = await TestClient.connect(b);
      const msg = text('first words');
      const { conversationId } = await c.ok<{ conversationId: string }>({ ...msg, item: { ...msg.item, instructions: 'Answer like a pirate.' } });
      await c.terminal(conversationId);
      expect(systemText(b.provider.requests[0]!)).toContain('Answer like a pirate.');
      await runIn(c, conversationId, 'again');
      expect(systemText(b.provider.requests.at(-1)!)).toContain('Answer like a pirate.');
      // Stored with the conversation when a store keeps them (another tab, a reload see them).
      if (extra.length === 2) expect(await c.ok({ type: 'conversation.settings.get', conversationId })).toEqual({ conversationId, settings: { instructions: 'Answer like a pirate.' } });
      // Another new chat does not get them.
      const other = await c.ok<{ conversationId: string }>(text('elsewhere'));
      await c.terminal(other.conversationId);
      expect(systemText(b.provider.requests.at(-1)!)).not.toContain('pirate');
      await cleanup();
    }
  });
});
