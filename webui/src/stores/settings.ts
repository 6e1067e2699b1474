/**
 * Settings (settings.get / settings.set, updated live by `settings` broadcasts from other
 * clients), the provider list for the model picker, and the theme.
 */
import { defineStore } from 'pinia';
import { computed, ref, watch } from 'vue';
import type { Settings } from '../../../plugin-api.js';
import type { ProviderSummary, SettingsWarningWire } from '../../../lib/gateway-protocol/protocol.js';
import { client } from '../api/client.js';

export type Theme = 'light' | 'dark';
const THEME_KEY = 'liveagent.theme';

function initialTheme(): Theme {
  try {
    const t = localStorage.getItem(THEME_KEY);
    if (t === 'light' || t === 'dark') return t;
  } catch {
    // fall back to the system preference
  }
  return typeof matchMedia === 'function' && matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
}

export const useSettingsStore = defineStore('settings', () => {
  const settings = ref<Settings | null>(null);
  const providers = ref<ProviderSummary[] | null>(null);
  const theme = ref<Theme>(initialTheme());
  /** Bumped when another client changed settings, so an open form can offer to reload. */
  const remoteVersion = ref(0);
  const saving = ref(false);
  /** What the server says about the settings without refusing them: unknown keys (with a did-you-mean), an invalid file on disk. */
  const warnings = ref<SettingsWarningWire[]>([]);
  const takeWarnings = (data: { warnings?: SettingsWarningWire[] }) => {
    if (data.warnings) warnings.value = data.warnings;
  };

  const configuredProviders = computed(() => (providers.value ?? []).filter((p) => p.configured));
  /** First run: providers are known and none is usable. */
  const needsSetup = computed(() => providers.value !== null && configuredProviders.value.length === 0);

  watch(
    theme,
    (t) => {
      document.documentElement.dataset.theme = t;
      try {
        localStorage.setItem(THEME_KEY, t);
      } catch {
        // not remembered, still applied
      }
    },
    { immediate: false },
  );

  function applyTheme(): void {
    document.documentElement.dataset.theme = theme.value;
  }

  function toggleTheme(): void {
    theme.value = theme.value === 'dark' ? 'light' : 'dark';
  }

  function init(): void {
    applyTheme();
    client().on('settings', (m) => {
      takeWarnings(m);
      // settings.get also answers with this message: only a real change counts as remote.
      if (JSON.stringify(m.settings) === JSON.stringify(settings.value)) return;
      const first = settings.value === null;
      settings.value = m.settings as Settings;
      // Provider readiness may follow from settings (a key was added); the first load asks itself.
      if (!first) {
        remoteVersion.value++;
        void loadProviders();
      }
    });
  }

  async function load(): Promise<void> {
    const [s] = await Promise.all([client().request({ type: 'settings.get' }), loadProviders()]);
    settings.value = s.settings as Settings;
    takeWarnings(s);
  }

  async function loadProviders(): Promise<void> {
    try {
      providers.value = (await client().request({ type: 'providers.list' })).providers;
    } catch {
      if (!providers.value) providers.value = [];
    }
  }

  /**
   * Save the whole settings object. The gateway merges top-level sections, so a section that
   * `next` drops is sent as null (removed). Rejects with the server's validation message.
   */
  async function save(next: Settings): Promise<void> {
    saving.value = true;
    const patch: Record<string, unknown> = { ...next };
    for (const key of Object.keys(settings.value ?? {})) if (!(key in next)) patch[key] = null;
    try {
      const data = await client().request({ type: 'settings.set', settings: patch });
      takeWarnings(data);
      // The reply is the stored settings (the merge of ours with changes made elsewhere).
      settings.value = data.settings as Settings;
      await loadProviders();
    } finally {
      saving.value = false;
    }
  }

  return { settings, providers, theme, remoteVersion, saving, warnings, configuredProviders, needsSetup, toggleTheme, init, load, loadProviders, save };
});
