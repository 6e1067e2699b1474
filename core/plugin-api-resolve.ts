/**
 * A module-resolution hook (node:module `register`) for third-party plugins: their
 * `import { definePlugin } from 'liveagent/plugin-api'` resolves to this host's own runtime half
 * of the contract, wherever the plugin's folder is (`$LIVEAGENT_HOME/plugins/<name>`, a global
 * npm prefix) and whether or not it installed a `liveagent` of its own. One copy for every
 * plugin: the error classes a plugin throws are the ones the kernel knows.
 *
 * Runs on Node's loader thread; it imports nothing.
 */
let target: string | undefined;

export function initialize(data: { url: string }): void {
  target = data.url;
}

type Next = (specifier: string, context: unknown) => Promise<{ url: string }>;

export async function resolve(specifier: string, context: unknown, next: Next): Promise<{ url: string; shortCircuit?: boolean }> {
  if (target && specifier === 'liveagent/plugin-api') return { url: target, shortCircuit: true };
  return next(specifier, context);
}
