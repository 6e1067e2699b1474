import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ServerMessage } from '../../lib/gateway-protocol/protocol.js';
import { TestClient, boot, cleanup, sleep, text } from './gateway-harness.js';

afterEach(cleanup);

type SettingsMsg = Extract<ServerMessage, { type: 'settings' }>;
type ListMsg = Extract<ServerMessage, { type: 'conversations' }>;

describe('gateway settings', () => {
  it('settings set from one client reach the other clients', async () => {
    const b = await boot();
    const a = await TestClient.connect(b);
    const other = await TestClient.connect(b);
    const got = await a.ok<{ settings: Record<string, unknown> }>({ type: 'settings.get' });
    expect(got.settings.defaultProvider).toBe('fake');
    const set = await a.ok<{ settings: Record<string, unknown> }>({ type: 'settings.set', settings: { systemPrompt: 'Be brief.' } });
    expect(set.settings).toMatchObject({ systemPrompt: 'Be brief.', defaultProvider: 'fake' });
    const pushed = await other.waitFor<SettingsMsg>((m) => m.type === 'settings');
    expect(pushed.settings).toMatchObject({ systemPrompt: 'Be brief.', defaultProvider: 'fake' });
    expect(b.server.kernel.settings.get().systemPrompt).toBe('Be brief.');
    // The client that made the change gets its reply, not an echo.
    await sleep(30);
    expect(a.messages.filter((m) => m.type === 'settings')).toHaveLength(1); // its own settings.get
    // null removes a section.
    await a.ok({ type: 'settings.set', settings: { systemPrompt: null } });
    expect(b.server.kernel.settings.get().systemPrompt).toBeUndefined();
  });

  it('invalid settings are refused with the field named, and nothing stored changes', async () => {
    const b = await boot();
    const a = await TestClient.connect(b);
    const other = await TestClient.connect(b);
    await a.ok({ type: 'settings.set', settings: { systemPrompt: 'keep me' } });
    await other.waitFor((m) => m.type === 'settings');
    const file = path.join(b.home, 'settings.json');
    const before = fs.readFileSync(file, 'utf8');
    const stored = b.server.kernel.settings.get();

    const r1 = await a.request({ type: 'settings.set', settings: { runtime: { maxRounds: 0 }, systemPrompt: 'changed' } });
    expect(r1.ok).toBe(false);
    expect(!r1.ok && r1.error.code).toBe('config');
    expect(!r1.ok && r1.error.message).toContain('runtime.maxRounds');
    const r2 = await a.request({ type: 'settings.set', settings: { gateway: { replayWindow: -1 } } });
    expect(!r2.ok && r2.error.message).toContain('gateway.replayWindow');
    const r3 = await a.request({ type: 'settings.set', settings: { gateway: { allowedOrigins: ['evil.example/path'] } } });
    expect(!r3.ok && r3.error.message).toContain('gateway.allowedOrigins.0');

    expect(fs.readFileSync(file, 'utf8')).toBe(before);
    expect(b.server.kernel.settings.get()).toEqual(stored);
    const got = await a.ok<{ settings: Record<string, unknown> }>({ type: 'settings.get' });
    expect(got.settings.systemPrompt).toBe('keep me');
    await sleep(30);
    expect(other.messages.filter((m) => m.type === 'settings')).toHaveLength(1);
  });
});

describe('gateway conversations', () => {
  it('lists, loads, renames and deletes conversations, broadcasting the list after changes', async () => {
    const b = await boot({ steps: [{ text: 'alpha reply' }, { text: 'beta reply' }], settings: { gateway: { listBroadcastDelayMs: 0 } } });
    const a = await TestClient.connect(b);
    const watcher = await TestClient.connect(b);
    const c1 = (await a.ok<{ conversationId: string }>(text('alpha question'))).conversationId;
    await a.terminal(c1);
    const c2 = (await a.ok<{ conversationId: string }>(text('beta question'))).conversationId;
    await a.terminal(c2);

    const list = await a.ok<{ items: Array<{ id: string; title: string | null; running: boolean }> }>({ type: 'conversations.list' });
    expect(list.items.map((i) => i.id).sort()).toEqual([c1, c2].sort());
    expect(list.items.every((i) => i.running === false)).toBe(true);
    const found = await a.ok<{ items: Array<{ id: string }> }>({ type: 'conversations.list', search: 'ALPHA' });
    expect(found.items.map((i) => i.id)).toEqual([c1]);

    await a.ok({ type: 'conversations.rename', conversationId: c1, title: 'Renamed' });
    const renamed = await watcher.waitFor<ListMsg>((m) => m.type === 'conversations' && m.items.some((i) => i.title === 'Renamed'));
    expect(renamed.items.find((i) => i.id === c1)?.title).toBe('Renamed');

    await a.ok({ type: 'conversations.load', conversationId: c1 });
    const snap = await a.waitFor<Extract<ServerMessage, { type: 'snapshot' }>>((m) => m.type === 'snapshot' && m.conversationId === c1);
    expect(snap.conversation?.title).toBe('Renamed');
    expect(snap.messages.map((m) => m.role)).toEqual(['user', 'assistant']);

    await a.ok({ type: 'conversations.delete', conversationId: c1 });
    await watcher.waitFor<ListMsg>((m) => m.type === 'conversations' && !m.items.some((i) => i.id === c1) && m.items.some((i) => i.id === c2));
    const gone = await a.request({ type: 'conversations.load', conversationId: c1 });
    expect(!gone.ok && gone.error.code).toBe('not_found');
    const providers = await a.ok<{ providers: Array<{ id: string; configured: boolean }> }>({ type: 'providers.list' });
    expect(providers.providers).toEqual([expect.objectContaining({ id: 'fake', configured: true, defaultModel: 'fake-1' })]);
  });
});
