// ────────────────────────────────────────────────────────────────────────────────────────────
// Basics
// ────────────────────────────────────────────────────────────────────────────────────────────

import type { ToolDefinition } from './tools.js';

/** Something that can be undone. Every `register*` returns one; the kernel disposes them on unload. */
export interface Disposable {
  dispose(): void;
}

/** A JSON value, as stored in settings, tool arguments and `details`. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/** A JSON object. */
export type JsonObject = { [key: string]: JsonValue };

/** A logger whose lines carry the plugin's name. Lines go to stderr (never to a CLI's stdout). */
export interface Logger {
  debug(message: string, data?: unknown): void;
  info(message: string, data?: unknown): void;
  warn(message: string, data?: unknown): void;
  error(message: string, data?: unknown): void;
}

/**
 * A validation schema. A zod 4 schema satisfies it as is; anything with a compatible
 * `safeParse` works too. The kernel turns zod schemas into JSON Schema for the model; a tool
 * whose schema is not zod gives it as {@link ToolDefinition.jsonSchema}.
 */
export interface SchemaLike<T = unknown> {
  /**
   * `options`: the kernel passes `{ jitless: true }` when it validates something once or rarely
   * (plugin settings at load, a settings write), so that zod does not compile a fast path for a
   * schema parsed once; other implementations may ignore it.
   */
  safeParse(value: unknown, options?: { jitless?: boolean }): { success: true; data: T } | { success: false; error: { issues: ReadonlyArray<SchemaIssue> } };
}

/** One validation problem: where (a path into the value) and what. */
export interface SchemaIssue {
  readonly path: ReadonlyArray<PropertyKey>;
  readonly message: string;
}

/** Execution modes: `text` has no tools; `tools` runs the tool loop; `agent-dev` adds usage and debug detail. */
export type ExecutionMode = 'text' | 'tools' | 'agent-dev';
