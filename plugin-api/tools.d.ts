// ────────────────────────────────────────────────────────────────────────────────────────────
// Tools
// ────────────────────────────────────────────────────────────────────────────────────────────

import type { PluginEvents } from '../plugin-api.js';
import type { ExecutionMode, JsonObject, Logger, SchemaLike } from './basics.js';
import type { EditedFile, ToolResultContent } from './content.js';
import type { OwnTypeEventName } from './events.js';
import type { RuntimePaths, defineTool, pluginEvent } from './plugins.js';
import type { Settings } from './settings.js';

/**
 * A tool. Arguments are validated with `parameters` before `execute`; invalid arguments go back
 * to the model as an error result naming the problem, so it can fix the call. Write it with
 * {@link defineTool} and `Args` is the schema's output type.
 */
export interface ToolDefinition<Args = unknown> {
  /** Name the model sees: letters, digits, `_`, `-`; at most 64 characters. */
  name: string;
  /** Model-facing description (keep long ones in a `.md` beside the tool). */
  description: string;
  /** Argument schema (a zod 4 schema, or any SchemaLike with `jsonSchema` given). */
  parameters: SchemaLike<Args>;
  /** JSON Schema for the model; derived from a zod schema when omitted. */
  jsonSchema?: JsonObject;
  /** Modes that offer this tool (default: tools and agent-dev). */
  modes?: ExecutionMode[];
  /**
   * `parallel` tools may run concurrently with other parallel calls of the same round;
   * `exclusive` ones run alone, in order. Default `exclusive`.
   */
  concurrency?: 'parallel' | 'exclusive';
  /**
   * Rules appended to the system prompt before each provider request in which this tool is
   * offered. Contract: never stored in history or compaction state.
   */
  promptRules?: string[];
  /**
   * When true the kernel does not stream this call's argument deltas as `message_update`
   * events; the call appears whole at `tool_execution_start` (AskUserQuestion uses it).
   */
  hideArgumentDeltas?: boolean;
  /**
   * Called when the call is reported (`tool_execution_start`), before `execute`: may return
   * arguments stamped with host data (e.g. a deadline) that clients see and `execute` receives.
   */
  prepareArguments?(args: Args, ctx: ToolContext): Args;
  /**
   * Run the tool. Throwing is the same as returning `{ isError: true }` with the message.
   * Contract: honour `ctx.signal`; a call still going `runtime.toolAbortGraceMs` (default 2 s)
   * after the run was stopped is abandoned with an error result saying the tool did not stop.
   */
  execute(args: Args, ctx: ToolContext): Promise<ToolResult>;
}

/** What `execute` receives besides its arguments. */
export interface ToolContext {
  toolCallId: string;
  toolName: string;
  conversationId: string;
  runId: string;
  mode: ExecutionMode;
  /** Absolute working directory of the run. */
  workdir: string;
  /** Aborted when the run stops: end work promptly (kill processes, settle waits). */
  signal: AbortSignal;
  /** Report progress: becomes a `tool_execution_update` event. */
  update(partial: ToolProgress): void;
  /**
   * Emit an event in the conversation's stream; a name in {@link PluginEvents} takes its declared
   * payload. An {@link OwnTypeEventName} travels under its own type (`ask_user_question`); any
   * other name as `{ type: 'custom', name }` (read either with {@link pluginEvent}).
   */
  emit<K extends string>(type: K, payload: K extends keyof PluginEvents ? PluginEvents[K] : JsonObject): void;
  logger: Logger;
  paths: RuntimePaths;
  settings: Settings;
}

/** Progress of a running tool. */
export interface ToolProgress {
  content?: ToolResultContent[];
  details?: JsonObject;
}

/** What a tool returns. */
export interface ToolResult {
  content: ToolResultContent[];
  isError?: boolean;
  details?: JsonObject;
  /** Files this call changed (feeds the edited-files ledger). Contract: only Write, Edit and Delete report these. */
  editedFiles?: EditedFile[];
}

/** A tool as a provider sees it. */
export interface ToolSpec {
  name: string;
  description: string;
  inputSchema: JsonObject;
}
