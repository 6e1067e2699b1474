/**
 * The runtime half of `liveagent/plugin-api`: an identity helper and the documented hook stages.
 * Third-party plugins need none of it at runtime; it exists for type inference and readability.
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
