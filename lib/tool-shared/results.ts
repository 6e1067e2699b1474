/**
 * Small helpers the builtin tools share for building results and turning failures into error
 * results the model can act on (one line naming the path and what went wrong).
 */
import type { JsonObject, ToolContext, ToolResult } from '../../plugin-api.js';

/** A failure whose message is already written for the model. */
export class ToolFailure extends Error {
  constructor(message: string, readonly details?: JsonObject) {
    super(message);
    this.name = 'ToolFailure';
  }
}

export function textResult(text: string, extra: Omit<ToolResult, 'content'> = {}): ToolResult {
  return { content: [{ type: 'text', text }], ...extra };
}

export function errorResult(text: string, details?: JsonObject): ToolResult {
  return { content: [{ type: 'text', text }], isError: true, ...(details ? { details } : {}) };
}

const FS_MESSAGES: Record<string, string> = {
  ENOENT: 'does not exist',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EISDIR: 'is a folder, not a file',
  ENOTDIR: 'a parent of it is not a folder',
  ENOTEMPTY: 'the folder is not empty',
  EEXIST: 'already exists',
  ENOSPC: 'no space left on the device',
  EROFS: 'the file system is read-only',
  ELOOP: 'too many levels of symbolic links',
  ENAMETOOLONG: 'the name is too long',
};

/** A one-line message for a Node file-system error, naming the path as the model gave it. */
export function describeFsError(err: unknown, shownPath: string): string {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (code && FS_MESSAGES[code]) return `${shownPath}: ${FS_MESSAGES[code]}`;
  return `${shownPath}: ${err instanceof Error ? err.message : String(err)}`;
}

/**
 * Wrap an execute function so every failure becomes an error result with a clear message
 * rather than the dispatcher's generic "<tool> failed: ...".
 */
export function guarded<A>(fn: (args: A, ctx: ToolContext) => Promise<ToolResult>): (args: A, ctx: ToolContext) => Promise<ToolResult> {
  return async (args, ctx) => {
    try {
      return await fn(args, ctx);
    } catch (err) {
      if (err instanceof ToolFailure) return errorResult(err.message, err.details);
      return errorResult(err instanceof Error ? err.message : String(err));
    }
  };
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  if (n < 1024 * 1024 * 1024) return `${(n / (1024 * 1024)).toFixed(1)} MB`;
  return `${(n / (1024 * 1024 * 1024)).toFixed(1)} GB`;
}
