/**
 * Runs the tool calls of one round: validation, the before/execute/after hooks, progress and
 * lifecycle events. Calls to `parallel` tools that stand next to each other run concurrently;
 * `exclusive` ones run alone, in the order the model gave.
 *
 * Plugins cannot take the run down from here: a throw in a tool-call hook becomes the call's
 * error result naming the plugin (the model can recover), and a tool (or tap) that ignores the
 * run being stopped is abandoned after `runtime.toolAbortGraceMs` with a result saying so.
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
import { asKernel, asTool } from './crash-guard.js';
import { PluginError } from './errors.js';
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

const NAMED_EVENTS = new Set<string>(['ask_user_question', 'ask_user_question_settled', 'tool_approval', 'tool_approval_settled', 'compaction', 'notice']);

/** How long a tool may go on after the run was stopped before its result is abandoned (ms). */
export const DEFAULT_TOOL_ABORT_GRACE_MS = 2000;

const TOOL_HOOKS = new Set(['beforeToolCall', 'executeTool', 'afterToolCall']);

/** The run was stopped and `work` did not settle within the grace. */
const STOPPED = Symbol('stopped');

/**
 * STOPPED `graceMs` after `signal` aborts: one listener and one timer for a whole round's calls
 * (a listener per call would pile up on the run's signal with many parallel calls).
 */
interface StopWatch {
  readonly stopped: Promise<typeof STOPPED>;
  readonly graceMs: number;
  dispose(): void;
}

function stopWatch(signal: AbortSignal, graceMs: number): StopWatch {
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const stopped = new Promise<typeof STOPPED>((resolve) => {
    onAbort = () => void (timer = setTimeout(() => resolve(STOPPED), graceMs));
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
  return {
    stopped,
    graceMs,
    dispose() {
      clearTimeout(timer);
      if (onAbort) signal.removeEventListener('abort', onAbort);
    },
  };
}

/** `work`, unless the run was stopped and `work` outlasts the grace: then STOPPED. A late rejection is ignored. */
function untilStopped<T>(work: Promise<T>, watch: StopWatch): Promise<T | typeof STOPPED> {
  return Promise.race([work, watch.stopped]);
}

function abandoned(call: ToolCallBlock, graceMs: number): ToolResult {
  return errorResult(
    call,
    `Tool call abandoned: ${call.name} did not stop within ${graceMs} ms after the run was stopped; it may still be running.`,
    { cancelled: true, abandoned: true, tool: call.name },
  );
}

/** The result of a call whose tool-call hook threw: the plugin and hook named, for the model and the user. */
function hookFailure(call: ToolCallBlock, err: PluginError, logger: Logger): ToolResult {
  logger.error(err.message);
  return errorResult(call, `Tool call failed: ${err.message}`, { plugin: err.plugin ?? '', hook: err.hook ?? '' });
}

const isHookFailure = (err: unknown): err is PluginError => err instanceof PluginError && TOOL_HOOKS.has(err.hook ?? '');

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
  const watch = stopWatch(env.signal, graceOf(env.settings));
  try {
    for (const group of groups) {
      await Promise.all(group.map(async (call) => results.set(call.id, await runOne(call, env, watch))));
    }
  } finally {
    watch.dispose();
  }
  const ordered = calls.map((c) => results.get(c.id)!);
  return {
    results: ordered.map((r) => r.block),
    editedFiles: ordered.flatMap((r) => (r.block.isError ? [] : (r.edited ?? []))),
  };
}

function graceOf(settings: Settings): number {
  const g = settings.runtime?.toolAbortGraceMs;
  return typeof g === 'number' && g >= 0 ? g : DEFAULT_TOOL_ABORT_GRACE_MS;
}

function errorResult(call: ToolCallBlock, text: string, details?: JsonObject): ToolResult {
  return { content: [{ type: 'text', text }], isError: true, ...(details ? { details } : {}) };
}

async function runOne(call: ToolCallBlock, env: DispatchEnv, watch: StopWatch): Promise<{ block: ToolResultBlock; edited?: EditedFile[] }> {
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
    signal: env.signal,
  };
  const ctx: ToolContext = {
    toolCallId: call.id,
    toolName: call.name,
    conversationId: env.conversationId,
    runId: env.runId,
    mode: env.mode,
    workdir: env.workdir,
    signal: env.signal,
    // Events fan out to other plugins' listeners: their work is not this tool's.
    update: (partial) => asKernel(() => env.emit({ type: 'tool_execution_update', toolCallId: call.id, toolName: call.name, partial })),
    emit: (type, payload) =>
      asKernel(() =>
        NAMED_EVENTS.has(type)
          ? env.emit({ type: type as NamedPluginEventType, payload })
          : env.emit({ type: 'custom', name: type, payload }),
      ),
    logger: env.logger,
    paths: env.paths,
    settings: env.settings,
  };

  const grace = watch.graceMs;
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
        const run = async (): Promise<ToolResult> => {
          // A hook nobody tapped is not called: each call is a promise and a microtask turn per tool call.
          const blocked = env.hooks.beforeToolCall.isUsed() ? await env.hooks.beforeToolCall.promise(info) : undefined;
          if (blocked?.block) return errorResult(call, `Tool call blocked: ${blocked.reason}`, { blocked: true });
          if (env.signal.aborted) return errorResult(call, 'Tool call cancelled: the run was stopped.', { cancelled: true });
          const answered = env.hooks.executeTool.isUsed() ? await env.hooks.executeTool.promise(info, ctx) : undefined;
          return answered ?? (await asTool(tool, call.name, env.runId, () => tool.execute(args, ctx)));
        };
        const outcome = await untilStopped(run(), watch);
        result = outcome === STOPPED ? abandoned(call, grace) : outcome;
      }
    }
  } catch (err) {
    if (!startEmitted) emitStart(args);
    const msg = err instanceof Error ? err.message : String(err);
    if (isHookFailure(err)) result = hookFailure(call, err, env.logger);
    else result = env.signal.aborted ? errorResult(call, `Tool call cancelled: ${msg}`, { cancelled: true }) : errorResult(call, `${call.name} failed: ${msg}`);
  }
  try {
    if (env.hooks.afterToolCall.isUsed()) {
      const after = await untilStopped(env.hooks.afterToolCall.promise(result, info), watch);
      if (after !== STOPPED) result = after;
    }
  } catch (err) {
    result = isHookFailure(err) ? hookFailure(call, err, env.logger) : errorResult(call, err instanceof Error ? err.message : String(err));
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
