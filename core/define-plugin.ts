/**
 * The runtime half of `liveagent/plugin-api`: an identity helper, the documented hook stages and
 * two helpers for wrapping untrusted text in the tags a model reads. Third-party plugins need
 * none of it at runtime; it exists for type inference, readability and safe prompts.
 */
import type { Plugin } from '../plugin-api.js';

export function definePlugin(plugin: Plugin): Plugin {
  return plugin;
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
