// ────────────────────────────────────────────────────────────────────────────────────────────
// Errors
// ────────────────────────────────────────────────────────────────────────────────────────────

import type { JsonObject } from './basics.js';
import type { RunHandle, RuntimeApi } from './runtime.js';

/** Error codes of the runtime's error classes. */
export type RuntimeErrorCode = 'plugin' | 'provider' | 'tool' | 'config' | 'dependency' | 'cancelled' | 'usage' | 'internal';

/**
 * The runtime's error base class (published at runtime by `liveagent/plugin-api`). A plugin may
 * throw it, or a subclass, to say what failed: `toInfo()` is what events and results carry.
 * Contract: the kernel's own subclasses keep their `name` in a minified build.
 */
export declare class RuntimeError extends Error {
  /** What kind of failure. */
  readonly code: RuntimeErrorCode;
  /** The plugin to blame, when known. */
  readonly plugin?: string;
  /** The hook that failed, when known. */
  readonly hook?: string;
  /** Structured detail (JSON). */
  readonly details?: JsonObject;
  constructor(code: RuntimeErrorCode, message: string, opts?: { plugin?: string; hook?: string; details?: JsonObject; cause?: unknown });
  /** The serializable form. */
  toInfo(): RuntimeErrorInfo;
}

/** A plugin failed: in apply, in a tap, or at load (code `plugin`). */
export declare class PluginError extends RuntimeError {
  constructor(plugin: string, message: string, opts?: { hook?: string; cause?: unknown; details?: JsonObject });
}

/** Settings or a manifest are malformed; the message names the field (code `config`). */
export declare class ConfigError extends RuntimeError {
  constructor(message: string, opts?: { plugin?: string; details?: JsonObject; cause?: unknown });
}

/** A plugin requirement is missing or the requirements form a cycle (code `dependency`). */
export declare class DependencyError extends RuntimeError {
  constructor(message: string, details?: JsonObject);
}

/** A provider failed, after retries when retryable (code `provider`). */
export declare class ProviderError extends RuntimeError {
  constructor(message: string, opts?: { plugin?: string; details?: JsonObject; cause?: unknown });
}

/** A tool failed in a way that ends the run, not an error result for the model (code `tool`). */
export declare class ToolError extends RuntimeError {
  constructor(message: string, opts?: { plugin?: string; details?: JsonObject; cause?: unknown });
}

/**
 * The run was stopped (code `cancelled`); a stopped run's signal (`ToolContext.signal`,
 * `RequestContext.signal`) has one as its `reason`. `details.reason` names a cause the contract
 * documents. Contract: a run stopped because its conversation is deleted or forgotten
 * ({@link RuntimeApi.deleteConversation}, {@link RuntimeApi.forgetConversation}) aborts with
 * `details.reason` `'conversation_deleted'` (before any plugin hears of the delete); other stops
 * (the user, a shutdown, {@link RunHandle.abort}) carry no `details.reason`.
 */
export declare class CancelledError extends RuntimeError {
  constructor(message?: string, details?: JsonObject);
}

/** The caller asked for something that does not exist: an unknown provider, mode or conversation (code `usage`). */
export declare class UsageError extends RuntimeError {
  constructor(message: string, details?: JsonObject);
}

/** A serializable error, as events and results carry it. */
export interface RuntimeErrorInfo {
  code: RuntimeErrorCode;
  message: string;
  /** The plugin to blame, when known. */
  plugin?: string;
  /** The hook that failed, when known. */
  hook?: string;
  details?: JsonObject;
}
