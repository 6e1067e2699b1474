/**
 * MCP server state: `mcp.status` on every (re)connect, then each `mcp` broadcast replaces the
 * list. Also which saved `mcpServers` entries changed while their server kept running (the host
 * reads entries once, at start), and a request to bring the settings section into view.
 */
import { defineStore } from 'pinia';
import { computed, ref, watch } from 'vue';
import type { McpServerSummary } from '../../../plugins/gateway/protocol.js';
import { client } from '../api/client.js';
import { changedEntries } from '../lib/mcp-config.js';
import { useConversationsStore } from './conversations.js';
import { useSettingsStore } from './settings.js';

export type McpLevel = 'none' | 'ok' | 'pending' | 'warn' | 'error';

export const useMcpStore = defineStore('mcp', () => {
  /** null until the first answer. */
  const servers = ref<McpServerSummary[] | null>(null);
  const loadError = ref<string | null>(null);
  /**
   * Entries seen to change in this page's lifetime while their server ran. Only changes seen
   * here are known: the gateway does not say which entry a server started with.
   */
  const changedSinceStart = ref<string[]>([]);
  /** Set to ask the settings page to scroll the MCP section into view; the section clears it. */
  const revealPending = ref(false);
  /** Servers with a restart request in flight (their button is disabled meanwhile). */
  const restarting = ref(new Set<string>());

  const list = computed(() => servers.value ?? []);
  const connected = computed(() => list.value.filter((s) => s.state === 'connected').length);
  /** The worst state, for the indicator's colour. */
  const level = computed<McpLevel>(() => {
    const states = new Set(list.value.map((s) => s.state));
    if (!states.size) return 'none';
    if (states.has('failed')) return 'error';
    if (states.has('restarting')) return 'warn';
    if (states.has('connecting')) return 'pending';
    // Stopped means the host is shutting down: neutral, not a fault.
    return states.has('stopped') ? 'pending' : 'ok';
  });

  function init(): void {
    client().on('mcp', (m) => (servers.value = m.servers));
    const settings = useSettingsStore();
    watch(
      () => settings.settings?.mcpServers,
      (after, before) => {
        const names = changedEntries(before, after);
        if (names.length) changedSinceStart.value = [...new Set([...changedSinceStart.value, ...names])];
      },
    );
  }

  async function load(): Promise<void> {
    try {
      servers.value = (await client().request({ type: 'mcp.status' })).servers;
      loadError.value = null;
    } catch (err) {
      loadError.value = (err as Error).message;
    }
  }

  /**
   * After a reconnect the host may be a new one, started from the saved entries; what changed
   * before it is no longer known to be pending (added and removed servers are still seen).
   */
  function onReconnect(): void {
    changedSinceStart.value = [];
  }

  /** Reconnect one server now (it re-reads its saved entry), e.g. after fixing its settings. */
  async function restart(name: string): Promise<void> {
    restarting.value = new Set([...restarting.value, name]);
    try {
      servers.value = (await client().request({ type: 'mcp.restart', name })).servers;
      changedSinceStart.value = changedSinceStart.value.filter((n) => n !== name);
      loadError.value = null;
    } catch (err) {
      loadError.value = (err as Error).message;
    } finally {
      const next = new Set(restarting.value);
      next.delete(name);
      restarting.value = next;
    }
  }

  function reveal(): void {
    useConversationsStore().showSettings(true);
    revealPending.value = true;
  }

  return { servers, list, loadError, connected, level, changedSinceStart, revealPending, restarting, init, load, onReconnect, reveal, restart };
});
