import { RuntimeError } from '../../core/errors.js';
import { CliUsageError } from './args.js';

/** The CLI's exit codes (external contract). */
export const EXIT = { ok: 0, failure: 1, usage: 2 } as const;

export function exitCodeFor(err: unknown): number {
  if (err instanceof CliUsageError) return EXIT.usage;
  if (err instanceof RuntimeError && (err.code === 'usage' || err.code === 'config' || err.code === 'dependency')) return EXIT.usage;
  return EXIT.failure;
}
