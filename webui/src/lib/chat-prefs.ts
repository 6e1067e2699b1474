/**
 * The composer's choices (mode, provider, model, workdir) and each conversation's stored
 * settings (the conversation-settings plugin: its instructions and those choices). In an open
 * conversation the choices are stored with it, so it restores them later in any tab; a new
 * chat's are kept in this browser until its first message makes it a conversation.
 */
import { watch } from 'vue';
import type { ExecutionMode } from '../../../plugin-api.js';
import { DRAFT, type ChatConversations } from './chat-core.js';

export const PREFS_KEY = 'liveagent.composer';

export interface Prefs {
  mode: ExecutionMode | null;
  provider: string | null;
  model: string | null;
  workdir: string;
}

/** What a conversation remembers (the conversation-settings plugin): its instructions and composer choices. */
export interface ConversationSettings {
  instructions?: string;
  provider?: string;
  model?: string;
  mode?: ExecutionMode;
  workdir?: string;
}

/** The choices a message or run carries (what is not chosen is the server's default). */
export interface RunFields {
  mode?: ExecutionMode;
  provider?: string;
  model?: string;
  workdir?: string;
}

/** The choices as `conversation.settings.set` takes them: null clears one. */
export interface PrefsWire {
  provider: string | null;
  model: string | null;
  mode: ExecutionMode | null;
  workdir: string | null;
}

export const DEFAULT_PREFS: Prefs = { mode: null, provider: null, model: null, workdir: '' };

/** The composer choices a conversation's settings restore (what it does not name is the default). */
export function prefsOf(c: ConversationSettings): Prefs {
  return { mode: c.mode ?? null, provider: c.provider ?? null, model: c.provider ? (c.model ?? null) : null, workdir: c.workdir ?? '' };
}

/** A new chat's choices as this browser kept them (the defaults when storage is unavailable or holds junk). */
export function loadPrefs(): Prefs {
  try {
    const p = JSON.parse(localStorage.getItem(PREFS_KEY) ?? '{}') as Partial<Prefs>;
    return { mode: p.mode ?? null, provider: p.provider ?? null, model: p.model ?? null, workdir: p.workdir ?? '' };
  } catch {
    return { mode: null, provider: null, model: null, workdir: '' };
  }
}

/** Keep a new chat's choices in this browser. */
export function keepPrefs(prefs: Prefs): void {
  try {
    localStorage.setItem(PREFS_KEY, JSON.stringify(prefs));
  } catch {
    // storage unavailable: selections last for this page only
  }
}

/** The fields a message sent with these choices carries (a model only with its provider). */
export function runFieldsOf(prefs: Prefs): RunFields {
  return {
    ...(prefs.mode ? { mode: prefs.mode } : {}),
    ...(prefs.provider ? { provider: prefs.provider } : {}),
    ...(prefs.provider && prefs.model ? { model: prefs.model } : {}),
    ...(prefs.workdir.trim() ? { workdir: prefs.workdir.trim() } : {}),
  };
}

export function prefsWire(prefs: Prefs): PrefsWire {
  return { provider: prefs.provider, model: prefs.provider ? prefs.model : null, mode: prefs.mode, workdir: prefs.workdir.trim() || null };
}

/** The settings a conversation will have once `wire` is stored: its instructions kept, cleared choices gone. */
export function settingsAfter(before: ConversationSettings | undefined, wire: PrefsWire): ConversationSettings {
  return { ...(before?.instructions ? { instructions: before.instructions } : {}), ...Object.fromEntries(Object.entries(wire).filter(([, v]) => v)) };
}

/** The settings another tab broadcast (`extension` message `conversation.settings`), or null when it is not one. */
export function broadcastSettings(name: string, data: unknown): { conversationId: string; settings: ConversationSettings } | null {
  if (name !== 'conversation.settings') return null;
  const d = data as { conversationId?: unknown; settings?: unknown } | undefined;
  if (typeof d?.conversationId !== 'string' || !d.settings || typeof d.settings !== 'object') return null;
  return { conversationId: d.conversationId, settings: d.settings as ConversationSettings };
}

export interface PrefsSyncDeps {
  prefs: Prefs;
  /** A reactive record: per-conversation settings as the server stored them. */
  convSettings: Record<string, ConversationSettings>;
  conversations: ChatConversations;
  /** A plugin message to the gateway (the conversation-settings plugin's). */
  request: <T>(msg: Record<string, unknown>) => Promise<T>;
}

/** Keeps the composer's choices and the conversations' stored settings in step with the server. */
export function createPrefsSync({ prefs, convSettings, conversations, request }: PrefsSyncDeps) {
  /** The conversation the draft just became (its composer choices were stored with it). */
  let adopted: string | null = null;

  function applyPrefs(next: Prefs): void {
    Object.assign(prefs, next);
  }

  /** Keep the composer's choices: with the open conversation, or in this browser for a new chat. */
  function savePrefs(): void {
    const id = conversations.currentId;
    if (id) return void storePrefs(id);
    keepPrefs(prefs);
  }

  function storePrefs(id: string): void {
    const wire = prefsWire(prefs);
    convSettings[id] = settingsAfter(convSettings[id], wire);
    request<{ settings: ConversationSettings }>({ type: 'conversation.settings.set', conversationId: id, settings: wire }).then(
      (r) => (convSettings[id] = r.settings),
      () => undefined, // a server without the plugin: the choice lasts for this page
    );
  }

  /** The composer follows the conversation shown: its stored choices, or the defaults for a new chat. */
  function showConversation(id: string | null): void {
    if (!id) {
      applyPrefs(DEFAULT_PREFS);
      keepPrefs(prefs);
      return;
    }
    if (convSettings[id]) applyPrefs(prefsOf(convSettings[id]!));
    request<{ settings: ConversationSettings }>({ type: 'conversation.settings.get', conversationId: id }).then(
      (r) => {
        convSettings[id] = r.settings;
        if (conversations.currentId === id) applyPrefs(prefsOf(r.settings));
      },
      () => undefined,
    );
  }

  /** Set (or, with empty text, clear) the instructions of a conversation. Rejects with the server's reason. */
  async function setInstructions(id: string, instructions: string): Promise<void> {
    if (id === DRAFT) {
      // Nothing is stored yet: they go with the first message (send's `instructions`).
      convSettings[DRAFT] = instructions.trim() ? { instructions } : {};
      return;
    }
    const r = await request<{ settings: ConversationSettings }>({ type: 'conversation.settings.set', conversationId: id, settings: { instructions: instructions.trim() ? instructions : null } });
    convSettings[id] = r.settings;
  }

  /** Another tab changed a conversation's settings. */
  function onBroadcast(name: string, data: unknown): void {
    const b = broadcastSettings(name, data);
    if (!b) return;
    convSettings[b.conversationId] = b.settings;
    if (conversations.currentId === b.conversationId) applyPrefs(prefsOf(b.settings));
  }

  /** Follow the conversation shown (from init). */
  function follow(): void {
    watch(() => conversations.currentId, (id, was) => {
      // The draft becoming its conversation keeps what the composer holds (adopt stored it).
      if (id && was === null && adopted === id) return;
      showConversation(id);
    }, { immediate: !!conversations.currentId });
  }

  /** The instructions a new chat's first message takes along. */
  function draftInstructions(): string | undefined {
    return convSettings[DRAFT]?.instructions?.trim();
  }

  /**
   * The draft became conversation `id`: store the composer's choices with it; the draft's
   * instructions went with its first message, so they are the conversation's now.
   */
  function adopt(id: string): void {
    adopted = id;
    storePrefs(id);
    const given = convSettings[DRAFT]?.instructions;
    if (given) convSettings[id] = { ...convSettings[id], instructions: given };
    delete convSettings[DRAFT];
  }

  return { savePrefs, setInstructions, onBroadcast, follow, draftInstructions, adopt, runFields: () => runFieldsOf(prefs) };
}
