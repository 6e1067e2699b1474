/**
 * Runs the tool calls of one round: validation, the before/execute/after hooks, progress and
 * lifecycle events. Calls to `parallel` tools that stand next to each other run concurrently;
 * `exclusive` ones run alone, in the order the model gave.
 */
import type {
  EditedFile,
  JsonObject,
  Logger,
  RuntimePaths,
  Settings,
  ToolCallBlock,
  ToolCallInfo,
  ToolContext,
  ToolDefinition,
  ToolResult,
  ToolResultBlock,
  ExecutionMode,
  NamedPluginEventType,
} from '../plugin-api.js';
import type { SessionHooks } from './hooks.js';
import type { EmitFn } from './types.js';


export interface DispatchEnv {
  hooks: SessionHooks;
  tools: Map<string, ToolDefinition>;
  conversationId: string;
  runId: string;
  round: number;
  mode: ExecutionMode;
  workdir: string;
  signal: AbortSignal;
  settings: Settings;
  paths: RuntimePaths;
  logger: Logger;
  emit: EmitFn;
}

const NAMED_EVENTS = new Set<string>(['ask_user_question', 'ask_user_question_settled', 'compaction', 'notice']);

export interface DispatchOutcome {
  results: ToolResultBlock[];
  editedFiles: EditedFile[];
}

export async function dispatchToolCalls(calls: ToolCallBlock[], env: DispatchEnv): Promise<DispatchOutcome> {
  const results = new Map<string, { block: ToolResultBlock; edited?: EditedFile[] }>();
  const groups: ToolCallBlock[][] = [];
  for (const call of calls) {
    const parallel = env.tools.get(call.name)?.concurrency === 'parallel';
    const last = groups[groups.length - 1];
    if (parallel && last && last.every((c) => env.tools.get(c.name)?.concurrency === 'parallel')) last.push(call);
    else groups.push([call]);
  }
  for (const group of groups) {
    await Promise.all(group.map(async (call) => results.set(call.id, await runOne(call, env))));
  }
  const ordered = calls.map((c) => results.get(c.id)!);
  return {
    results: ordered.map((r) => r.block),
    editedFiles: ordered.flatMap((r) => (r.block.isError ? [] : (r.edited ?? []))),
  };
}

function errorResult(call: ToolCallBlock, text: string, details?: JsonObject): ToolResult {
  return { content: [{ type: 'text', text }], isError: true, ...(details ? { details } : {}) };
}

async function runOne(call: ToolCallBlock, env: DispatchEnv): Promise<{ block: ToolResultBlock; edited?: EditedFile[] }> {
  const started = Date.now();
  const tool = env.tools.get(call.name);
  const info: ToolCallInfo = {
    id: call.id,
    name: call.name,
    input: call.input,
    conversationId: env.conversationId,
    runId: env.runId,
    round: env.round,
    mode: env.mode,
    workdir: env.workdir,
  };
  const ctx: ToolContext = {
    toolCallId: call.id,
    toolName: call.name,
    conversationId: env.conversationId,
    runId: env.runId,
    mode: env.mode,
    workdir: env.workdir,
    signal: env.signal,
    update: (partial) => env.emit({ type: 'tool_execution_update', toolCallId: call.id, toolName: call.name, partial }),
    emit: (type, payload) =>
      NAMED_EVENTS.has(type)
        ? env.emit({ type: type as NamedPluginEventType, payload })
        : env.emit({ type: 'custom', name: type, payload }),
    logger: env.logger,
    paths: env.paths,
    settings: env.settings,
  };

  let args: unknown = call.input;
  let result: ToolResult;
  let startEmitted = false;
  const emitStart = (a: unknown) => {
    startEmitted = true;
    env.emit({ type: 'tool_execution_start', toolCallId: call.id, toolName: call.name, args: (a ?? {}) as JsonObject });
  };
  try {
    if (!tool) {
      emitStart(call.input);
      result = errorResult(call, `Unknown tool "${call.name}". Available tools: ${[...env.tools.keys()].join(', ') || 'none'}.`);
    } else {
      const parsed = tool.parameters.safeParse(call.input);
      if (!parsed.success) {
        emitStart(call.input);
        const why = parsed.error.issues.map((i) => `${i.path.length ? i.path.join('.') : '(arguments)'}: ${i.message}`).join('; ');
        result = errorResult(call, `Invalid arguments for ${call.name}: ${why}. Fix the arguments and call the tool again.`);
      } else {
        args = tool.prepareArguments ? tool.prepareArguments(parsed.data, ctx) : parsed.data;
        info.input = args as JsonObject;
        emitStart(args);
        const blocked = await env.hooks.beforeToolCall.promise(info);
        if (blocked?.block) {
          result = errorResult(call, `Tool call blocked: ${blocked.reason}`, { blocked: true });
        } else if (env.signal.aborted) {
          result = errorResult(call, 'Tool call cancelled: the run was stopped.', { cancelled: true });
        } else {
          result = (await env.hooks.executeTool.promise(info, ctx)) ?? (await tool.execute(args, ctx));
        }
      }
    }
  } catch (err) {
    if (!startEmitted) emitStart(args);
    const msg = err instanceof Error ? err.message : String(err);
    result = env.signal.aborted ? errorResult(call, `Tool call cancelled: ${msg}`, { cancelled: true }) : errorResult(call, `${call.name} failed: ${msg}`);
  }
  try {
    result = await env.hooks.afterToolCall.promise(result, info);
  } catch (err) {
    result = errorResult(call, err instanceof Error ? err.message : String(err));
  }
  const block: ToolResultBlock = {
    type: 'tool_result',
    toolCallId: call.id,
    toolName: call.name,
    content: Array.isArray(result.content) ? result.content : [{ type: 'text', text: String(result.content) }],
    isError: !!result.isError,
  };
  if (result.details) block.details = result.details;
  if (result.editedFiles?.length && !block.isError) block.details = { ...(block.details ?? {}), editedFiles: result.editedFiles as unknown as JsonObject[] };
  env.emit({ type: 'tool_execution_end', toolCallId: call.id, toolName: call.name, result: block, durationMs: Date.now() - started });
  return { block, edited: result.editedFiles };
}
