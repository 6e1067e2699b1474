/**
 * The conversation list (search, rename, delete) and which conversation is open. The open
 * conversation is mirrored in the URL hash (`#/c/<id>`) so a reload comes back to it.
 */
import { defineStore } from 'pinia';
import { computed, ref } from 'vue';
import type { ConversationSummary } from '../../../lib/gateway-protocol/protocol.js';
import { client } from '../api/client.js';

export type View = 'chat' | 'settings' | 'scheduled' | 'memory';

function readRoute(): { view: View; id: string | null } {
  const h = location.hash.replace(/^#\/?/, '');
  if (h === 'settings') return { view: 'settings', id: null };
  if (h === 'scheduled') return { view: 'scheduled', id: null };
  if (h === 'memory') return { view: 'memory', id: null };
  const m = /^c\/([A-Za-z0-9_-]{1,128})$/.exec(h);
  return { view: 'chat', id: m ? m[1]! : null };
}

function writeRoute(view: View, id: string | null): void {
  const hash = view === 'settings' ? '#/settings' : view === 'scheduled' ? '#/scheduled' : view === 'memory' ? '#/memory' : id ? `#/c/${id}` : '#/';
  if (location.hash !== hash) history.replaceState(history.state, '', location.pathname + location.search + hash);
}

export const useConversationsStore = defineStore('conversations', () => {
  const initial = readRoute();
  const items = ref<ConversationSummary[]>([]);
  const search = ref('');
  const searchResults = ref<ConversationSummary[] | null>(null);
  const currentId = ref<string | null>(initial.id);
  const view = ref<View>(initial.view);
  const loaded = ref(false);
  const error = ref<string | null>(null);
  /** Why the open conversation went away (deleted in another window); cleared by the next open. */
  const notice = ref<string | null>(null);
  let searchSeq = 0;
  // The gateway answers every conversations.list, searches included, with a `conversations`
  // message as well as the reply. While a search is in flight such a message is its echo (a
  // filtered list), not the full list: it is skipped and the full list fetched afterwards.
  let searchesInFlight = 0;
  let skippedWhileSearching = false;

  const visible = computed(() => {
    const list = search.value.trim() ? (searchResults.value ?? filterLocal(items.value, search.value)) : items.value;
    // Pinned first (the Pinned group), then by last activity.
    return [...list].sort((a, b) => Number(!!b.pinned) - Number(!!a.pinned) || b.updatedAt - a.updatedAt);
  });
  const current = computed(() => items.value.find((c) => c.id === currentId.value) ?? null);

  function filterLocal(list: ConversationSummary[], q: string): ConversationSummary[] {
    const needle = q.trim().toLowerCase();
    return list.filter((c) => (c.title ?? 'Untitled').toLowerCase().includes(needle));
  }

  function init(): void {
    client().on('conversations', (m) => {
      if (searchesInFlight > 0) {
        skippedWhileSearching = true;
        return;
      }
      items.value = m.items;
      loaded.value = true;
    });
  }

  async function refresh(): Promise<void> {
    try {
      items.value = (await client().request({ type: 'conversations.list' })).items;
      loaded.value = true;
      error.value = null;
    } catch (err) {
      error.value = (err as Error).message;
    }
  }

  /** Server-side search (titles and message text, as the server supports); local title filter meanwhile. */
  async function runSearch(): Promise<void> {
    const q = search.value.trim();
    const mine = ++searchSeq;
    if (!q) {
      searchResults.value = null;
      return;
    }
    searchesInFlight++;
    try {
      const list = (await client().request({ type: 'conversations.list', search: q })).items;
      if (mine === searchSeq) searchResults.value = list;
    } catch {
      if (mine === searchSeq) searchResults.value = null;
    } finally {
      searchesInFlight--;
      if (searchesInFlight === 0 && skippedWhileSearching) {
        skippedWhileSearching = false;
        void refresh();
      }
    }
  }

  function setSearch(q: string): void {
    search.value = q;
    void runSearch();
  }

  function open(id: string | null): void {
    notice.value = null;
    currentId.value = id;
    view.value = 'chat';
    writeRoute('chat', id);
  }

  function showSettings(show = true): void {
    view.value = show ? 'settings' : 'chat';
    writeRoute(view.value, currentId.value);
  }

  /** The Scheduled page (toggle: `show` false goes back to the chat). */
  function showScheduled(show = true): void {
    view.value = show ? 'scheduled' : 'chat';
    writeRoute(view.value, currentId.value);
  }

  /** The Memory page (toggle: `show` false goes back to the chat). */
  function showMemory(show = true): void {
    view.value = show ? 'memory' : 'chat';
    writeRoute(view.value, currentId.value);
  }

  /** Put a conversation the server just created at the top of the list until the server's list says more. */
  function upsert(summary: ConversationSummary): void {
    const at = items.value.findIndex((c) => c.id === summary.id);
    if (at >= 0) items.value[at] = { ...items.value[at], ...summary };
    else items.value.unshift(summary);
  }

  function setRunning(id: string, running: boolean): void {
    const c = items.value.find((x) => x.id === id);
    if (c && c.running !== running) c.running = running;
  }

  async function rename(id: string, title: string): Promise<void> {
    const t = title.trim();
    if (!t) return;
    const c = items.value.find((x) => x.id === id);
    const before = c?.title ?? null;
    if (c) c.title = t;
    try {
      await client().request({ type: 'conversations.rename', conversationId: id, title: t });
    } catch (err) {
      if (c) c.title = before;
      throw err;
    }
  }

  /** Pin or unpin; every tab learns it from the list the server sends again. */
  async function pin(id: string, pinned: boolean): Promise<void> {
    const found = [items.value.find((x) => x.id === id), searchResults.value?.find((x) => x.id === id)].filter((c): c is ConversationSummary => !!c);
    const set = (v: boolean) => {
      for (const c of found) {
        if (v) c.pinned = true;
        else delete c.pinned;
      }
    };
    set(pinned);
    try {
      await client().request({ type: 'conversations.pin', conversationId: id, pinned });
    } catch (err) {
      set(!pinned);
      throw err;
    }
  }

  async function remove(id: string): Promise<void> {
    await client().request({ type: 'conversations.delete', conversationId: id });
    items.value = items.value.filter((c) => c.id !== id);
    if (searchResults.value) searchResults.value = searchResults.value.filter((c) => c.id !== id);
    if (currentId.value === id) open(null);
  }

  return { items, notice, search, visible, current, currentId, view, loaded, error, init, refresh, setSearch, open, showSettings, showScheduled, showMemory, upsert, setRunning, rename, pin, remove };
});
