/** The gateway connection: its status for the banner, and the server's hello. */
import { defineStore } from 'pinia';
import { computed, ref } from 'vue';
import { client } from '../api/client.js';
import type { TransportStatus } from '../transport/index.js';

export const useConnectionStore = defineStore('connection', () => {
  const status = ref<TransportStatus>({ state: 'idle', attempt: 0, wasOpen: false });
  const server = ref<{ protocol: number; server: string } | null>(null);
  const hasToken = ref(true);
  /** Bumped on every open; stores watch it to (re)subscribe and reload. */
  const openCount = ref(0);

  const connected = computed(() => status.value.state === 'open');
  const reconnecting = computed(() => status.value.wasOpen && status.value.state !== 'open' && status.value.state !== 'closed');
  /** Never connected and failing: likely a wrong token or the server is down. */
  const failingFirst = computed(() => !status.value.wasOpen && status.value.attempt >= 2);

  function init(): void {
    const c = client();
    c.on('hello', (m) => (server.value = { protocol: m.protocol, server: m.server }));
    c.onStatus((s) => {
      status.value = s;
      if (s.state === 'open') openCount.value++;
    });
  }

  function reconnectNow(): void {
    client().transport.reconnectNow();
  }

  return { status, server, hasToken, openCount, connected, reconnecting, failingFirst, init, reconnectNow };
});
