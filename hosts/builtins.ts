/**
 * The plugins every host loads, through the same door as third-party plugins. Each is imported
 * here (cheap: plugins import their heavy SDKs lazily, when first used).
 */
import type { Plugin, PluginModule } from '../plugin-api.js';
import compaction from '../plugins/compaction/index.js';
import conversationSettings from '../plugins/conversation-settings/index.js';
import cron from '../plugins/cron/index.js';
import debugLog from '../plugins/debug-log/index.js';
import historyPostgres from '../plugins/history-postgres/index.js';
import historySqlite from '../plugins/history-sqlite/index.js';
import hooks from '../plugins/hooks/index.js';
import mcp from '../plugins/mcp/index.js';
import memory from '../plugins/memory/index.js';
import modelCatalog from '../plugins/model-catalog/index.js';
import permissions from '../plugins/permissions/index.js';
import providerAnthropic from '../plugins/provider-anthropic/index.js';
import providerGemini from '../plugins/provider-gemini/index.js';
import providerOpenAI from '../plugins/provider-openai/index.js';
import projectInstructions from '../plugins/project-instructions/index.js';
import skills from '../plugins/skills/index.js';
import teamFanout from '../plugins/team-fanout/index.js';
import teamSettings from '../plugins/team-settings/index.js';
import title from '../plugins/title/index.js';
import toolAskUserQuestion from '../plugins/tool-ask-user-question/index.js';
import toolBash from '../plugins/tool-bash/index.js';
import toolDelete from '../plugins/tool-delete/index.js';
import toolEdit from '../plugins/tool-edit/index.js';
import toolImage from '../plugins/tool-image/index.js';
import toolManagedProcess from '../plugins/tool-managed-process/index.js';
import toolRead from '../plugins/tool-read/index.js';
import toolWrite from '../plugins/tool-write/index.js';
import uploads from '../plugins/uploads/index.js';

/** The builtin tools, each its own plugin registering through `registerTool` as a third-party tool would: Read, Write, Edit, Delete, Bash, ManagedProcess, Image. */
export const builtinToolPlugins: Plugin[] = [toolRead, toolWrite, toolEdit, toolDelete, toolBash, toolManagedProcess, toolImage];

export async function builtinPlugins(): Promise<PluginModule[]> {
  return [teamSettings, historySqlite, historyPostgres, modelCatalog, compaction, providerAnthropic, providerOpenAI, providerGemini, permissions, hooks, ...builtinToolPlugins, toolAskUserQuestion, uploads, mcp, projectInstructions, conversationSettings, skills, memory, title, cron, teamFanout, debugLog];
}
