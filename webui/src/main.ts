/** Entry: pick the transport, wire the stores to the gateway client, mount. */
import { createPinia } from 'pinia';
import { createApp } from 'vue';
import App from './App.vue';
import { GatewayClient, setClient } from './api/client.js';
import { takeToken } from './lib/auth.js';
import { commandHandler, commands } from './lib/commands.js';
import { useChatStore } from './stores/chat.js';
import { useConnectionStore } from './stores/connection.js';
import { useConversationsStore } from './stores/conversations.js';
import { useMcpStore } from './stores/mcp.js';
import { useMemoryStore } from './stores/memory.js';
import { useSettingsStore } from './stores/settings.js';
import { createTransport } from './transport/index.js';
import './styles/base.css';
import './styles/markdown.css';

const token = takeToken();
const app = createApp(App);
app.use(createPinia());

const gateway = new GatewayClient(createTransport(token ?? ''));
setClient(gateway);
const connection = useConnectionStore();
connection.hasToken = !!token || !!window.liveagent?.transport || !!window.liveagent?.desktop;
connection.init();
const conversations = useConversationsStore();
conversations.init();
// Commands from outside the page (the desktop's menu, tray, notifications) act on the router store.
commands.handle(commandHandler(conversations));
useSettingsStore().init();
useMcpStore().init();
useMemoryStore().init();
useChatStore().init();
app.mount('#app');
if (connection.hasToken) gateway.connect();
