/**
 * Pins the public contract: plugin-api.d.ts exports exactly these names, every exported
 * declaration and every member of an exported interface carries a doc comment, and the
 * runtime half (`liveagent/plugin-api`) matches the declared constants.
 */
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, expectTypeOf, it } from 'vitest';
import type { Plugin, PluginContext, Provider, ProviderEvent, ProviderStream, ToolDefinition, LifecycleEvent, SessionHookTaps } from '../../plugin-api.js';
import { MessageStages, SystemPromptStages, definePlugin } from '../../core/define-plugin.js';

const file = path.resolve(import.meta.dirname, '../../plugin-api.d.ts');
const source = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);

function exported(): Array<{ name: string; node: ts.Node }> {
  const out: Array<{ name: string; node: ts.Node }> = [];
  source.forEachChild((n) => {
    const mods = ts.canHaveModifiers(n) ? ts.getModifiers(n) : undefined;
    if (!mods?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword)) return;
    if (ts.isVariableStatement(n)) for (const d of n.declarationList.declarations) out.push({ name: d.name.getText(), node: n });
    else if ('name' in n && n.name) out.push({ name: (n.name as ts.Identifier).text, node: n });
  });
  return out;
}

const hasDoc = (n: ts.Node) => ts.getJSDocCommentsAndTags(n).length > 0;

describe('plugin-api.d.ts', () => {
  it('exports the pinned set of names (a change here is a public API change: update docs/plugin-authoring.md)', () => {
    expect(exported().map((e) => e.name).sort()).toMatchInlineSnapshot(`
      [
        "AttachmentBlock",
        "Checkpoint",
        "CheckpointRecord",
        "Citation",
        "CompactionAnswer",
        "CompactionOutcome",
        "CompactionRequest",
        "CompactionTrigger",
        "CompletionOptions",
        "CompletionResult",
        "ContentBlock",
        "ContextBudget",
        "CustomProviderSettings",
        "Disposable",
        "DocumentBlock",
        "EditedFile",
        "EventBase",
        "ExecutionMode",
        "FileLedger",
        "HistorySnapshot",
        "HookTap",
        "HostedSearchBlock",
        "ImageBlock",
        "JsonObject",
        "JsonValue",
        "KernelHookTaps",
        "LifecycleEvent",
        "Logger",
        "Message",
        "MessageDelta",
        "MessageStages",
        "ModelFacts",
        "ModelInfo",
        "NamedPluginEventType",
        "Plugin",
        "PluginContext",
        "PluginModule",
        "Provider",
        "ProviderErrorInfo",
        "ProviderEvent",
        "ProviderRequest",
        "ProviderSettings",
        "ProviderStream",
        "RequestContext",
        "RoundRecord",
        "RunHandle",
        "RunInfo",
        "RunOptions",
        "RunResult",
        "RuntimeApi",
        "RuntimeErrorCode",
        "RuntimeErrorInfo",
        "RuntimePaths",
        "RuntimeSettings",
        "SchemaIssue",
        "SchemaLike",
        "SearchSource",
        "SessionHookTaps",
        "SessionInfo",
        "Settings",
        "SettingsStore",
        "StopReason",
        "SystemPart",
        "SystemPromptStages",
        "TapOptions",
        "TextBlock",
        "ThinkingBlock",
        "ToolBlock",
        "ToolCallBlock",
        "ToolCallInfo",
        "ToolContext",
        "ToolDefinition",
        "ToolProgress",
        "ToolResult",
        "ToolResultBlock",
        "ToolResultContent",
        "ToolSpec",
        "Usage",
        "definePlugin",
        "escapeAttribute",
        "neutralizeClosingTag",
      ]
    `);
  });

  it('documents every exported declaration and every interface member', () => {
    const undocumented: string[] = [];
    for (const { name, node } of exported()) {
      if (!hasDoc(node)) undocumented.push(name);
      if (ts.isInterfaceDeclaration(node)) {
        for (const m of node.members) if (!hasDoc(m) && m.name) undocumented.push(`${name}.${m.name.getText()}`);
      }
    }
    // Self-explanatory data fields are allowed without comments only in these small value types.
    const allowed = /^(TextBlock|ThinkingBlock|ToolCallBlock|ImageBlock|HostedSearchBlock|SearchSource|Citation|ToolResultBlock|Usage|Message|EditedFile|ModelInfo|CustomProviderSettings|ProviderSettings|RuntimePaths|EventBase|RunResult|HistorySnapshot|RoundRecord|ToolCallInfo|ToolBlock|ToolContext|ToolProgress|ToolResult|ToolSpec|SystemPart|ProviderRequest|ProviderErrorInfo|RequestContext|SessionInfo|RunHandle|RunInfo|RuntimeErrorInfo|SchemaIssue|Logger|Provider|Settings|TapOptions|Disposable|SchemaLike)\./;
    expect(undocumented.filter((n) => !allowed.test(n))).toEqual([]);
  });

  it('the runtime half matches the declarations', () => {
    expect(definePlugin({ name: 'x', apply() {} }).name).toBe('x');
    expect(SystemPromptStages.TOOL_RULES).toBeGreaterThan(SystemPromptStages.COMPACTION_SUMMARY);
    expect(MessageStages.REPAIR).toBeLessThan(MessageStages.COMPACTION);
  });

  it('types compose the way plugin authors use them', () => {
    expectTypeOf<Plugin['apply']>().parameter(0).toEqualTypeOf<PluginContext>();
    expectTypeOf<PluginContext['registerTool']>().parameter(0).toEqualTypeOf<ToolDefinition>();
    expectTypeOf<Provider['stream']>().returns.toEqualTypeOf<ProviderStream>();
    expectTypeOf<AsyncIterable<ProviderEvent>>().toExtend<ProviderStream>();
    expectTypeOf<LifecycleEvent['type']>().toExtend<string>();
    expectTypeOf<keyof SessionHookTaps>().toEqualTypeOf<
      | 'loadHistory'
      | 'saveUserMessage'
      | 'saveProgress'
      | 'saveRound'
      | 'truncateHistory'
      | 'saveCheckpoint'
      | 'systemPrompt'
      | 'messages'
      | 'tools'
      | 'providerRequest'
      | 'compaction'
      | 'providerEvent'
      | 'beforeToolCall'
      | 'executeTool'
      | 'afterToolCall'
      | 'event'
      | 'turnEnd'
    >();
  });
});
