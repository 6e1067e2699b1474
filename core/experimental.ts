/** The contract's experimental members (plugin-api.d.ts `ExperimentalFeature`) and a plugin's opt-in to them. */
import type { ExperimentalFeature, Plugin } from '../plugin-api.js';
import { ConfigError } from './errors.js';

const EXPERIMENTAL = new Set<string>(['wire_request', 'shared_settings'] satisfies ExperimentalFeature[]);

/** The plugin's `experimental` opt-in, checked: a name that is no feature fails the plugin. */
export function experimentalOf(plugin: Pick<Plugin, 'name' | 'experimental'>): ReadonlySet<ExperimentalFeature> {
  const wanted = plugin.experimental ?? [];
  if (!Array.isArray(wanted)) throw new ConfigError(`plugin "${plugin.name}": experimental must be an array of feature names`, { plugin: plugin.name });
  for (const f of wanted) {
    if (!EXPERIMENTAL.has(f)) throw new ConfigError(`plugin "${plugin.name}": experimental feature "${String(f)}" does not exist (known: ${[...EXPERIMENTAL].join(', ')})`, { plugin: plugin.name });
  }
  return new Set(wanted);
}

