/**
 * Pins the public contract: plugin-api.d.ts (with the section files under plugin-api/ it
 * re-exports) exports exactly these names, the interfaces plugins merge into are declared in the
 * entry itself, every exported
 * declaration and every member of an exported interface carries a doc comment, the runtime
 * half (`liveagent/plugin-api`) holds exactly the values the file declares, and the objects a
 * kernel hands a plugin have exactly the members their interfaces document (both ways).
 */
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { z } from 'zod';
import { describe, expect, expectTypeOf, it } from 'vitest';
import type { Plugin, PluginContext, Provider, ProviderEvent, ProviderStream, ToolDefinition, LifecycleEvent, SessionHookTaps } from '../../plugin-api.js';
import * as runtimeHalf from '../../core/define-plugin.js';
import { MessageFold, MessageStages, SystemPromptStages, definePlugin, defineTool, pluginEvent } from '../../core/define-plugin.js';
import { createKernel } from '../../core/kernel.js';
import { trackResources } from '../helpers/cleanup.js';
import { fakeProvider } from '../helpers/fake-provider.js';

const file = path.resolve(import.meta.dirname, '../../plugin-api.d.ts');
const sources = new Map<string, ts.SourceFile>();
const source = (f: string) => sources.get(f) ?? sources.set(f, ts.createSourceFile(f, fs.readFileSync(f, 'utf8'), ts.ScriptTarget.Latest, true)).get(f)!;

type Exported = { name: string; node: ts.Node; file: string };

/**
 * What a contract file exports: its own `export` declarations, and what `export * from` and
 * `export { … } from` bring in from the files they name (`./x.js` is `./x.d.ts`), followed as
 * the compiler follows them. Any other export form throws, so nothing escapes these checks.
 */
function exportsOf(f: string, via: string[] = []): Exported[] {
  if (via.includes(f)) throw new Error(`re-export cycle: ${[...via, f].join(' -> ')}`);
  const out: Exported[] = [];
  source(f).forEachChild((n) => {
    if (ts.isExportDeclaration(n)) {
      if (!n.moduleSpecifier || !ts.isStringLiteral(n.moduleSpecifier)) throw new Error(`${f}: only \`export … from './x.js'\` re-exports are followed`);
      const target = path.resolve(path.dirname(f), n.moduleSpecifier.text.replace(/\.js$/, '.d.ts'));
      const theirs = exportsOf(target, [...via, f]);
      if (!n.exportClause) out.push(...theirs);
      else if (ts.isNamedExports(n.exportClause)) {
        for (const el of n.exportClause.elements) {
          const found = theirs.find((e) => e.name === (el.propertyName ?? el.name).text);
          if (!found) throw new Error(`${f}: ${target} exports no ${(el.propertyName ?? el.name).text}`);
          out.push({ ...found, name: el.name.text });
        }
      } else throw new Error(`${f}: \`export * as\` is not followed`);
      return;
    }
    if (ts.isExportAssignment(n)) throw new Error(`${f}: \`export =\` / \`export default\` is not part of the contract`);
    const mods = ts.canHaveModifiers(n) ? ts.getModifiers(n) : undefined;
    if (!mods?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword)) return;
    if (ts.isVariableStatement(n)) for (const d of n.declarationList.declarations) out.push({ name: d.name.getText(), node: n, file: f });
    else if ('name' in n && n.name) out.push({ name: (n.name as ts.Identifier).text, node: n, file: f });
  });
  return out;
}

/** Every exported declaration of the contract: the entry's own and those of the sections it re-exports. */
function exported(): Exported[] {
  return exportsOf(file);
}

/** The contract's files: the entry, then the section files it re-exports from. */
const contractFiles = () => [...new Set([file, ...exported().map((e) => e.file)])];

const hasDoc = (n: ts.Node) => ts.getJSDocCommentsAndTags(n).length > 0;

describe('plugin-api.d.ts', () => {
  it('exports the pinned set of names (a change here is a public API change: update docs/plugin-authoring.md)', () => {
    expect(exported().map((e) => e.name).sort()).toMatchInlineSnapshot(`
      [
        "AttachmentBlock",
        "CancelledError",
        "Checkpoint",
        "CheckpointRecord",
        "Citation",
        "CompactionAnswer",
        "CompactionOutcome",
        "CompactionRequest",
        "CompactionTrigger",
        "CompletionOptions",
        "CompletionResult",
        "ConfigError",
        "ContentBlock",
        "ContextBudget",
        "ConversationChange",
        "ConversationDeleted",
        "ConversationDetail",
        "ConversationPage",
        "ConversationSummary",
        "CustomProviderSettings",
        "DependencyError",
        "Disposable",
        "DocumentBlock",
        "EditedFile",
        "EventBase",
        "ExecutionMode",
        "ExperimentalFeature",
        "FileLedger",
        "FoldReadOptions",
        "GatewayHttpHandler",
        "GatewayMessage",
        "GatewayQueueItem",
        "GatewayRemote",
        "GatewayService",
        "HistoryMessage",
        "HistoryService",
        "HistorySnapshot",
        "HookTap",
        "HostedSearchBlock",
        "ImageBlock",
        "JsonObject",
        "JsonValue",
        "KernelHookTaps",
        "LifecycleEvent",
        "ListConversationsOptions",
        "Logger",
        "Message",
        "MessageDelta",
        "MessageFold",
        "MessageStages",
        "ModelFacts",
        "ModelInfo",
        "NamedPluginEventType",
        "OwnTypeEventName",
        "Plugin",
        "PluginContext",
        "PluginError",
        "PluginEvents",
        "PluginModule",
        "Provider",
        "ProviderError",
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
        "RuntimeError",
        "RuntimeErrorCode",
        "RuntimeErrorInfo",
        "RuntimePaths",
        "RuntimeSettings",
        "SchemaIssue",
        "SchemaLike",
        "SearchSource",
        "SegmentInfo",
        "ServiceMap",
        "SessionHookTaps",
        "SessionInfo",
        "Settings",
        "SettingsPatchOp",
        "SettingsStore",
        "SharedSettingsBackend",
        "StartSegmentOptions",
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
        "ToolError",
        "ToolProgress",
        "ToolResult",
        "ToolResultBlock",
        "ToolResultContent",
        "ToolSpec",
        "UploadRecord",
        "UploadStageOptions",
        "UploadStageResult",
        "UploadsCollectResult",
        "UploadsService",
        "UploadsSettings",
        "Usage",
        "UsageError",
        "UsageRecord",
        "applySettingsPatch",
        "definePlugin",
        "defineTool",
        "escapeAttribute",
        "neutralizeClosingTag",
        "pluginEvent",
      ]
    `);
  });

  it('is the entry plus every section file under plugin-api/, and declares the merged interfaces in the entry itself', () => {
    const dir = path.join(path.dirname(file), 'plugin-api');
    const sections = fs.readdirSync(dir).map((f) => path.join(dir, f));
    expect(contractFiles().slice(1).sort()).toEqual(sections.sort());
    // `declare module 'liveagent/plugin-api' { interface ServiceMap { … } }` must merge into a declaration of this module, not one it re-exports.
    const own = exported().filter((e) => e.file === file).map((e) => e.name);
    expect(own).toEqual(expect.arrayContaining(['ServiceMap', 'PluginEvents']));
    for (const name of ['ServiceMap', 'PluginEvents']) expect(ts.isInterfaceDeclaration(exported().find((e) => e.name === name)!.node)).toBe(true);
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
    const fold = new MessageFold();
    fold.apply({ kind: 'text', index: 0, text: 'he' });
    fold.apply({ kind: 'text', index: 0, text: 'llo' });
    expect(fold.content()).toEqual([{ type: 'text', text: 'hello' }]);
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
      | 'deleteConversation'
      | 'renameConversation'
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

/** Member names an exported interface of plugin-api.d.ts declares (overloads once), sorted. */
function members(iface: string): string[] {
  const node = exported().find((e) => e.name === iface)?.node;
  if (!node || !ts.isInterfaceDeclaration(node)) throw new Error(`no interface ${iface} in plugin-api.d.ts`);
  return [...new Set(node.members.flatMap((m) => (m.name ? [m.name.getText()] : [])))].sort();
}

/** Names a class in a core file keeps private or protected (fields, methods, parameter properties). */
function hiddenMembers(file: string, className: string): Set<string> {
  const src = ts.createSourceFile(file, fs.readFileSync(path.resolve(import.meta.dirname, '../..', file), 'utf8'), ts.ScriptTarget.Latest, true);
  const hidden = new Set<string>(['constructor']);
  const isHidden = (n: ts.Node) => (ts.canHaveModifiers(n) ? ts.getModifiers(n) : undefined)?.some((m) => m.kind === ts.SyntaxKind.PrivateKeyword || m.kind === ts.SyntaxKind.ProtectedKeyword);
  src.forEachChild((n) => {
    if (!ts.isClassDeclaration(n) || n.name?.text !== className) return;
    for (const m of n.members) {
      if (m.name && isHidden(m)) hidden.add(m.name.getText());
      if (ts.isConstructorDeclaration(m)) for (const p of m.parameters) if (isHidden(p)) hidden.add(p.name.getText());
    }
  });
  return hidden;
}

/** What a plugin can reach on an object: own keys and methods up the prototype chain, minus what the class hides. */
function reachable(obj: object, hidden: Set<string> = new Set()): string[] {
  const names = new Set<string>(Object.keys(obj));
  for (let p = Object.getPrototypeOf(obj); p && p !== Object.prototype; p = Object.getPrototypeOf(p)) for (const k of Object.getOwnPropertyNames(p)) names.add(k);
  for (const h of [...hidden, 'constructor']) names.delete(h);
  return [...names].sort();
}

/**
 * Public methods of the kernel classes behind `ctx.runtime` and `ctx.settings` that hosts use
 * and the contract does not promise. A plugin can reach them through the context today; a new
 * public method must be documented in plugin-api.d.ts or listed here on purpose.
 */
const HOST_ONLY = {
  RuntimeApi: ['defaultProvider', 'resolveModel'],
  SettingsStore: ['addSection', 'close', 'holdReports', 'releaseReports'],
};

function declaredValues(): string[] {
  return exported()
    .filter(({ node }) => ts.isFunctionDeclaration(node) || ts.isVariableStatement(node) || ts.isClassDeclaration(node))
    .map((e) => e.name)
    .sort();
}

describe('the contract matches the code', () => {
  const res = trackResources();

  it('the runtime half exports exactly the values plugin-api.d.ts declares', () => {
    expect(Object.keys(runtimeHalf).sort()).toEqual(declaredValues());
    const err = new runtimeHalf.ConfigError('bad field', { plugin: 'p' });
    expect(err).toBeInstanceOf(runtimeHalf.RuntimeError);
    expect(err.toInfo()).toEqual({ code: 'config', message: 'bad field', plugin: 'p' });
  });

  it('a kernel builds PluginContext, its hooks, RuntimeApi, SettingsStore and RunHandle with exactly the documented members', async () => {
    let seen: PluginContext | undefined;
    const probe: Plugin = {
      name: 'probe',
      apply(ctx) {
        seen = ctx;
        ctx.registerProvider(fakeProvider([{ text: 'hi' }]));
      },
    };
    const kernel = await createKernel({ home: res.tmp('h21-contract-'), plugins: [probe], settings: { defaultProvider: 'fake' }, thirdParty: false });
    res.kernels.push(kernel);
    const ctx = seen!;
    expect(reachable(ctx)).toEqual(members('PluginContext'));
    expect(reachable(ctx.hooks)).toEqual(members('KernelHookTaps'));
    expect(reachable(ctx.sessionHooks)).toEqual(members('SessionHookTaps'));
    expect(reachable(ctx.runtime, hiddenMembers('core/runtime.ts', 'Runtime'))).toEqual([...members('RuntimeApi'), ...HOST_ONLY.RuntimeApi].sort());
    expect(reachable(ctx.settings, hiddenMembers('core/settings.ts', 'FileSettingsStore'))).toEqual([...members('SettingsStore'), ...HOST_ONLY.SettingsStore].sort());
    const run = ctx.runtime.startRun({ input: [{ type: 'text', text: 'hello' }] });
    expect((await run.result).status).toBe('completed');
    // One way only: startRun returns the kernel's Run itself, so its internals are reachable too.
    expect(reachable(run)).toEqual(expect.arrayContaining(members('RunHandle')));
  });

  it('every @experimental member names an ExperimentalFeature, and definePlugin knows exactly those', () => {
    const alias = exported().find((e) => e.name === 'ExperimentalFeature')!.node as ts.TypeAliasDeclaration;
    const features = alias.type.getText().split('|').map((t) => t.trim().replace(/^'|'$/g, ''));
    const tags = [...contractFiles().map((f) => fs.readFileSync(f, 'utf8')).join('\n').matchAll(/^\s*\*\s*@experimental\b[\s\S]*?\*\//gm)].map((m) => m[0]);
    expect(tags.length).toBeGreaterThan(0);
    for (const tag of tags) expect(features.some((f) => tag.includes(`\`${f}\``))).toBe(true);
    for (const f of features) expect(() => definePlugin({ name: 'x', experimental: [f as never], apply() {} })).not.toThrow();
    expect(() => definePlugin({ name: 'x', experimental: ['wire_requests' as never], apply() {} })).toThrow(/plugin "x": experimental feature "wire_requests" does not exist \(known: wire_request, shared_settings\)/);
  });

  it('an experimental event reaches only the plugins that opted in (wire_request)', async () => {
    const wire: Provider = {
      id: 'wire',
      displayName: 'Wire',
      defaultModel: 'w-1',
      isConfigured: () => true,
      async *stream() {
        yield { type: 'wire_request', api: 'messages', body: { model: 'w-1' } };
        yield { type: 'block_start', index: 0, block: { type: 'text' } };
        yield { type: 'text_delta', index: 0, text: 'ok' };
        yield { type: 'block_end', index: 0, block: { type: 'text', text: 'ok' } };
        yield { type: 'done', stopReason: 'end' };
      },
    };
    const seen: Record<string, string[]> = { plain: [], optedIn: [], rawObject: [] };
    const watcher = (name: string, experimental?: ['wire_request']): Plugin => ({
      name,
      ...(experimental ? { experimental } : {}),
      apply(ctx) {
        ctx.sessionHooks.providerEvent.tap((ev) => void seen[name]!.push(ev.type));
      },
    });
    const kernel = await createKernel({
      home: res.tmp('h21-experimental-'),
      plugins: [{ name: 'wire', apply: (ctx) => void ctx.registerProvider(wire) }, definePlugin(watcher('plain')), definePlugin(watcher('optedIn', ['wire_request'])), watcher('rawObject')],
      thirdParty: false,
    });
    res.kernels.push(kernel);
    expect((await kernel.runtime.startRun({ provider: 'wire', input: [{ type: 'text', text: 'hi' }] }).result).status).toBe('completed');
    expect(seen.plain).not.toContain('wire_request');
    expect(seen.plain).toContain('text_delta');
    expect(seen.optedIn).toContain('wire_request');
    // The kernel applies the opt-in to every plugin: a plain object did not ask, so it sees none.
    expect(seen.rawObject).not.toContain('wire_request');
    expect(seen.rawObject).toContain('text_delta');
  });

  it('pluginEvent reads a plugin event in both forms it travels in, and defineTool is an identity', () => {
    const base = { conversationId: 'c', runId: 'r', seq: 1, ts: 0 };
    expect(pluginEvent({ ...base, type: 'notice', payload: { kind: 'retry' } }, 'notice')).toEqual({ kind: 'retry' });
    expect(pluginEvent({ ...base, type: 'custom', name: 'notice', payload: { kind: 'x' } }, 'notice')).toEqual({ kind: 'x' });
    expect(pluginEvent({ ...base, type: 'custom', name: 'other', payload: {} }, 'notice')).toBeUndefined();
    expect(pluginEvent({ ...base, type: 'turn_start', round: 1 }, 'notice')).toBeUndefined();
    const tool = { name: 't', description: 'd', parameters: z.object({ a: z.string() }), execute: async () => ({ content: [] }) };
    expect(defineTool(tool)).toBe(tool);
  });
});
