/**
 * MCP server state: `mcp.status` on every (re)connect, then each `mcp` broadcast replaces the
 * list (the host applies a saved `mcpServers` change at once: servers added start, removed ones
 * stop, changed ones restart), and a request to bring the settings section into view.
 */
import { defineStore } from 'pinia';
import { computed, ref } from 'vue';
import type { McpServerSummary } from '../../../lib/gateway-protocol/protocol.js';
import { client } from '../api/client.js';
import { useConversationsStore } from './conversations.js';

export type McpLevel = 'none' | 'ok' | 'pending' | 'warn' | 'error';

export const useMcpStore = defineStore('mcp', () => {
  /** null until the first answer. */
  const servers = ref<McpServerSummary[] | null>(null);
  const loadError = ref<string | null>(null);
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
  }

  async function load(): Promise<void> {
    try {
      servers.value = (await client().request({ type: 'mcp.status' })).servers;
      loadError.value = null;
    } catch (err) {
      loadError.value = (err as Error).message;
    }
  }

  /** After a reconnect the host may be a new one: ask it again (`mcp` broadcasts were missed meanwhile). */
  function onReconnect(): void {
    void load();
  }

  /** Reconnect one server now (it re-reads its saved entry), e.g. after fixing its settings. */
  async function restart(name: string): Promise<void> {
    restarting.value = new Set([...restarting.value, name]);
    try {
      servers.value = (await client().request({ type: 'mcp.restart', name })).servers;
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

  return { servers, list, loadError, connected, level, revealPending, restarting, init, load, onReconnect, reveal, restart };
});
