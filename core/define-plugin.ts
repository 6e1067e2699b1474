/**
 * The runtime half of `liveagent/plugin-api`: the typing helpers (`definePlugin`, `defineTool`),
 * the `experimental` opt-in, the documented hook stages, two helpers for wrapping untrusted text
 * in the tags a model reads, the error classes, the message-delta fold and the settings patch rule. A third-party plugin may use none of it.
 */
import type { LifecycleEvent, Plugin, PluginEvents, ToolDefinition } from '../plugin-api.js';
import { experimentalOf } from './experimental.js';

export { CancelledError, ConfigError, DependencyError, PluginError, ProviderError, RuntimeError, ToolError, UsageError } from './errors.js';
export { MessageFold } from './message-fold.js';
export { applySettingsPatch } from './settings-patch.js';

/**
 * Types the plugin and checks its `experimental` opt-in at once (the kernel checks it again and
 * applies it for every plugin, plain objects included: core/plugin-context.ts).
 */
export function definePlugin<Config = unknown>(plugin: Plugin<Config>): Plugin<Config> {
  experimentalOf(plugin);
  return plugin;
}

/** Types `execute`'s arguments from `parameters` (a zod schema's output). Identity at runtime. */
export function defineTool<Args>(tool: ToolDefinition<Args>): ToolDefinition<Args> {
  return tool;
}

/** The payload of `event` when it is the plugin event `name`, in either form it travels in. */
export function pluginEvent<K extends keyof PluginEvents>(event: LifecycleEvent, name: K): PluginEvents[K] | undefined {
  const e = event as { type: string; name?: string; payload?: unknown };
  const named = e.type === 'custom' ? e.name : e.type;
  return named === name && e.payload !== undefined ? (e.payload as PluginEvents[K]) : undefined;
}

export const SystemPromptStages = Object.freeze({
  BASE: 0,
  USER_SETTINGS: 100,
  SKILLS: 200,
  MEMORY: 300,
  COMPACTION_SUMMARY: 400,
  TOOL_RULES: 1000,
} as const);

export const MessageStages = Object.freeze({
  REPAIR: -100,
  COMPACTION: 0,
  CONTEXT_POLICY: 100,
  SANITIZE: 200,
} as const);

// C0 controls (newlines included), DEL, C1 controls, line/paragraph separators, bidi controls.
const UNSAFE_IN_ATTRIBUTE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' };

export function escapeAttribute(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ENTITIES[c]!).replace(UNSAFE_IN_ATTRIBUTE, (c) => `&#x${c.charCodeAt(0).toString(16).toUpperCase()};`);
}

export function neutralizeClosingTag(text: string, tag: string): string {
  return text.replace(new RegExp(`<(\\s*/\\s*${tag})(?![\\w-])`, 'gi'), '&lt;$1');
}
