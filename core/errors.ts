/**
 * The runtime's errors: one base class carrying a code, the plugin and hook to blame, and the
 * cause. Everything that leaves the kernel as an event or result is a RuntimeErrorInfo, made by
 * `toErrorInfo`, so hosts never have to guess the shape of a thrown value.
 */
import type { JsonObject, RuntimeErrorCode, RuntimeErrorInfo } from '../plugin-api.js';

export class RuntimeError extends Error {
  override name = 'RuntimeError';
  readonly code: RuntimeErrorCode;
  readonly plugin?: string;
  readonly hook?: string;
  readonly details?: JsonObject;

  constructor(code: RuntimeErrorCode, message: string, opts: { plugin?: string; hook?: string; details?: JsonObject; cause?: unknown } = {}) {
    super(message, opts.cause !== undefined ? { cause: opts.cause } : undefined);
    // The kernel's own classes name themselves (a `name` field below): a minified bundle renames
    // classes, so `new.target.name` would read "e". A plugin's subclass keeps its class name.
    if (new.target !== RuntimeError) this.name = new.target.name;
    this.code = code;
    this.plugin = opts.plugin;
    this.hook = opts.hook;
    this.details = opts.details;
  }

  toInfo(): RuntimeErrorInfo {
    const info: RuntimeErrorInfo = { code: this.code, message: this.message };
    if (this.plugin) info.plugin = this.plugin;
    if (this.hook) info.hook = this.hook;
    if (this.details) info.details = this.details;
    return info;
  }
}

/** A plugin failed: in apply, in a tap, or at load. */
export class PluginError extends RuntimeError {
  override name = 'PluginError';
  constructor(plugin: string, message: string, opts: { hook?: string; cause?: unknown; details?: JsonObject } = {}) {
    super('plugin', message, { ...opts, plugin });
  }
}

/** Settings or a manifest are malformed. The message names the field. */
export class ConfigError extends RuntimeError {
  override name = 'ConfigError';
  constructor(message: string, opts: { plugin?: string; details?: JsonObject; cause?: unknown } = {}) {
    super('config', message, opts);
  }
}

/** A plugin requirement is missing or the requirements form a cycle. */
export class DependencyError extends RuntimeError {
  override name = 'DependencyError';
  constructor(message: string, details?: JsonObject) {
    super('dependency', message, { details });
  }
}

/** A provider failed (after retries, when retryable). */
export class ProviderError extends RuntimeError {
  override name = 'ProviderError';
  constructor(message: string, opts: { plugin?: string; details?: JsonObject; cause?: unknown } = {}) {
    super('provider', message, opts);
  }
}

/** A tool failed in a way that ends the run (not an error result, which goes to the model). */
export class ToolError extends RuntimeError {
  override name = 'ToolError';
  constructor(message: string, opts: { plugin?: string; details?: JsonObject; cause?: unknown } = {}) {
    super('tool', message, opts);
  }
}

/** The run was stopped. */
export class CancelledError extends RuntimeError {
  override name = 'CancelledError';
  /** `details.reason` says why, when the contract names it (`conversation_deleted`). */
  constructor(message = 'The run was stopped', details?: JsonObject) {
    super('cancelled', message, details ? { details } : {});
  }
}

/** The caller asked for something that does not exist (unknown provider, mode, conversation). */
export class UsageError extends RuntimeError {
  override name = 'UsageError';
  constructor(message: string, details?: JsonObject) {
    super('usage', message, { details });
  }
}

export function toErrorInfo(err: unknown): RuntimeErrorInfo {
  if (err instanceof RuntimeError) return err.toInfo();
  if (err instanceof Error) return { code: 'internal', message: err.message };
  return { code: 'internal', message: String(err) };
}

/** One line describing an error, for CLIs and logs. */
export function describeError(err: unknown): string {
  const info = toErrorInfo(err);
  const where = info.plugin ? `[${info.plugin}${info.hook ? ` ${info.hook}` : ''}] ` : '';
  return `${where}${info.message}`.replace(/\s*\n\s*/g, ' ');
}
