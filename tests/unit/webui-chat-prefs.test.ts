/**
 * The composer's choices and the conversations' stored settings without a browser: what a run
 * carries, what the settings plugin is sent, what a conversation restores, another tab's
 * broadcast, and a new chat's instructions going over to the conversation it became.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { nextTick, reactive } from 'vue';
import type { ConversationSummary } from '../../lib/gateway-protocol/protocol.js';
import { DRAFT, type ChatConversations } from '../../webui/src/lib/chat-core.js';
import {
  broadcastSettings,
  createPrefsSync,
  DEFAULT_PREFS,
  keepPrefs,
  loadPrefs,
  PREFS_KEY,
  prefsOf,
  prefsWire,
  runFieldsOf,
  settingsAfter,
  type ConversationSettings,
  type Prefs,
} from '../../webui/src/lib/chat-prefs.js';

function memoryStorage() {
  const data = new Map<string, string>();
  return { getItem: (k: string) => data.get(k) ?? null, setItem: (k: string, v: string) => void data.set(k, v), data };
}

function harness(currentId: string | null = null) {
  const prefs = reactive<Prefs>({ ...DEFAULT_PREFS });
  const convSettings = reactive<Record<string, ConversationSettings>>({});
  const conversations: ChatConversations = reactive({
    currentId,
    items: [] as ConversationSummary[],
    notice: null,
    upsert: () => undefined,
    setRunning: () => undefined,
    open: () => undefined,
  });
  const sent: Array<Record<string, unknown>> = [];
  const answers: Array<(msg: Record<string, unknown>) => unknown> = [];
  const request = <T>(msg: Record<string, unknown>): Promise<T> => {
    sent.push(msg);
    const answer = answers.shift();
    return answer ? Promise.resolve(answer(msg) as T) : Promise.reject(new Error('unknown message type'));
  };
  const sync = createPrefsSync({ prefs, convSettings, conversations, request });
  return { prefs, convSettings, conversations, sent, answers, sync };
}

const flush = () => new Promise((r) => setTimeout(r, 0));

afterEach(() => {
  vi.unstubAllGlobals();
});

describe('WebUI chat: composer choices', () => {
  it('a run carries only what was chosen; a model only with its provider; the workdir trimmed', () => {
    expect(runFieldsOf(DEFAULT_PREFS)).toEqual({});
    expect(runFieldsOf({ mode: 'agent-dev', provider: 'openai', model: 'gpt', workdir: ' /tmp/w ' })).toEqual({ mode: 'agent-dev', provider: 'openai', model: 'gpt', workdir: '/tmp/w' });
    expect(runFieldsOf({ mode: null, provider: null, model: 'gpt', workdir: '  ' })).toEqual({});
  });

  it('the settings plugin is sent every choice, null clearing one', () => {
    expect(prefsWire({ mode: null, provider: null, model: 'gpt', workdir: ' ' })).toEqual({ provider: null, model: null, mode: null, workdir: null });
    expect(prefsWire({ mode: 'agent-dev', provider: 'openai', model: 'gpt', workdir: '/w ' })).toEqual({ provider: 'openai', model: 'gpt', mode: 'agent-dev', workdir: '/w' });
  });

  it('stored settings keep their instructions and drop cleared choices', () => {
    const before: ConversationSettings = { instructions: 'be brief', provider: 'old', model: 'm' };
    expect(settingsAfter(before, { provider: 'openai', model: null, mode: null, workdir: '/w' })).toEqual({ instructions: 'be brief', provider: 'openai', workdir: '/w' });
    expect(settingsAfter(undefined, { provider: null, model: null, mode: 'agent-dev', workdir: null })).toEqual({ mode: 'agent-dev' });
  });

  it('a conversation restores what it names; a model without its provider is not restored', () => {
    expect(prefsOf({})).toEqual(DEFAULT_PREFS);
    expect(prefsOf({ provider: 'openai', model: 'gpt', mode: 'agent-dev', workdir: '/w', instructions: 'x' })).toEqual({ provider: 'openai', model: 'gpt', mode: 'agent-dev', workdir: '/w' });
    expect(prefsOf({ model: 'gpt' })).toEqual(DEFAULT_PREFS);
  });

  it("a new chat's choices are kept in this browser; without storage, or with junk in it, the defaults", () => {
    expect(loadPrefs()).toEqual(DEFAULT_PREFS);
    const storage = memoryStorage();
    vi.stubGlobal('localStorage', storage);
    keepPrefs({ mode: 'agent-dev', provider: 'p', model: 'm', workdir: '/w' });
    expect(loadPrefs()).toEqual({ mode: 'agent-dev', provider: 'p', model: 'm', workdir: '/w' });
    storage.setItem(PREFS_KEY, '{not json');
    expect(loadPrefs()).toEqual(DEFAULT_PREFS);
  });

  it("another tab's broadcast is taken only when it is a conversation's settings", () => {
    expect(broadcastSettings('conversation.settings', { conversationId: 'c1', settings: { mode: 'agent-dev' } })).toEqual({ conversationId: 'c1', settings: { mode: 'agent-dev' } });
    expect(broadcastSettings('cron.tasks', { conversationId: 'c1', settings: {} })).toBeNull();
    expect(broadcastSettings('conversation.settings', { conversationId: 1, settings: {} })).toBeNull();
    expect(broadcastSettings('conversation.settings', { conversationId: 'c1' })).toBeNull();
    expect(broadcastSettings('conversation.settings', undefined)).toBeNull();
  });
});

describe('WebUI chat: settings kept with the server', () => {
  it('in an open conversation a choice is stored with it (shown at once, then as the server stored it)', async () => {
    const h = harness('c1');
    h.convSettings.c1 = { instructions: 'be brief' };
    h.prefs.provider = 'openai';
    h.answers.push(() => ({ settings: { instructions: 'be brief', provider: 'openai', model: 'default' } }));
    h.sync.savePrefs();
    expect(h.sent[0]).toEqual({ type: 'conversation.settings.set', conversationId: 'c1', settings: { provider: 'openai', model: null, mode: null, workdir: null } });
    expect(h.convSettings.c1).toEqual({ instructions: 'be brief', provider: 'openai' });
    await flush();
    expect(h.convSettings.c1).toEqual({ instructions: 'be brief', provider: 'openai', model: 'default' });
  });

  it('a server without the plugin: the choice lasts for this page', async () => {
    const h = harness('c1');
    h.prefs.mode = 'agent-dev';
    h.sync.savePrefs();
    await flush();
    expect(h.convSettings.c1).toEqual({ mode: 'agent-dev' });
  });

  it("a new chat's instructions wait for its first message and then belong to the conversation it became", async () => {
    const h = harness(null);
    await h.sync.setInstructions(DRAFT, '  ');
    expect(h.convSettings[DRAFT]).toEqual({});
    await h.sync.setInstructions(DRAFT, ' Answer in French ');
    expect(h.sent).toEqual([]);
    expect(h.sync.draftInstructions()).toBe('Answer in French');
    h.sync.adopt('c9');
    expect(h.sent[0]).toMatchObject({ type: 'conversation.settings.set', conversationId: 'c9' });
    expect(h.convSettings.c9).toEqual({ instructions: ' Answer in French ' });
    expect(h.convSettings[DRAFT]).toBeUndefined();
  });

  it("an open conversation's instructions are set (or cleared) on the server; a refusal rejects", async () => {
    const h = harness('c1');
    h.answers.push(() => ({ settings: { instructions: 'short' } }));
    await h.sync.setInstructions('c1', 'short');
    expect(h.convSettings.c1).toEqual({ instructions: 'short' });
    h.answers.push(() => ({ settings: {} }));
    await h.sync.setInstructions('c1', '');
    expect(h.sent[1]).toEqual({ type: 'conversation.settings.set', conversationId: 'c1', settings: { instructions: null } });
    await expect(h.sync.setInstructions('c1', 'x')).rejects.toThrow('unknown message type');
  });

  it('the composer follows the conversation shown, and a broadcast for it; the draft it became keeps what it holds', async () => {
    const h = harness(null);
    h.sync.follow();
    h.prefs.mode = 'agent-dev';
    h.answers.push(() => ({ settings: { provider: 'openai', model: 'gpt' } }));
    (h.conversations as { currentId: string | null }).currentId = 'c1';
    await nextTick();
    await flush();
    expect(h.sent.at(-1)).toEqual({ type: 'conversation.settings.get', conversationId: 'c1' });
    expect({ ...h.prefs }).toEqual({ mode: null, provider: 'openai', model: 'gpt', workdir: '' });
    h.sync.onBroadcast('conversation.settings', { conversationId: 'c1', settings: { mode: 'agent-dev' } });
    expect({ ...h.prefs }).toEqual({ ...DEFAULT_PREFS, mode: 'agent-dev' });
    h.sync.onBroadcast('conversation.settings', { conversationId: 'other', settings: { mode: 'tools' } });
    expect(h.prefs.mode).toBe('agent-dev');
    expect(h.convSettings.other).toEqual({ mode: 'tools' });
    // Back to a new chat: the defaults. Then the draft becomes c2: nothing is fetched, the choices stay.
    (h.conversations as { currentId: string | null }).currentId = null;
    await nextTick();
    expect({ ...h.prefs }).toEqual(DEFAULT_PREFS);
    h.prefs.workdir = '/w';
    h.sync.adopt('c2');
    const before = h.sent.length;
    (h.conversations as { currentId: string | null }).currentId = 'c2';
    await nextTick();
    expect(h.sent.length).toBe(before);
    expect(h.prefs.workdir).toBe('/w');
  });
});
