/**
 * A kernel's answer to what its plugins throw outside any `try` (core/crash-guard.ts): a one-line
 * failure naming the plugin, reported like any plugin failure (logged, the `failed` hook), and the
 * run the plugin's code was called for ends with an error event and `agent_end`. The plugin
 * stays loaded: one stray timer is a bug to report, not a reason to take its tools away mid-run.
 */
import type { Logger, RuntimeErrorInfo } from '../plugin-api.js';
import { describeCrash, kindOf, type CrashOwner } from './crash-guard.js';
import { PluginError } from './errors.js';
import type { SessionManager } from './sessions.js';

export interface CrashDeps {
  logger: Logger;
  reportFailure(info: RuntimeErrorInfo): void;
  sessions: SessionManager;
}

function where(hook: string): string {
  if (hook === 'apply') return 'in code its apply started';
  if (hook === 'load') return 'in code that ran when it was imported';
  if (hook.startsWith('tool ')) return `in code its ${hook} started`;
  return `in code its ${hook} tap started`;
}

export function kernelCrashOwner(d: CrashDeps): CrashOwner {
  return {
    crashed(blame, err, origin) {
      const info = new PluginError(blame.plugin, `plugin "${blame.plugin}" failed ${where(blame.hook)} (${kindOf(origin)}): ${describeCrash(err)}`, {
        hook: blame.hook,
        details: { origin, ...(blame.runId ? { runId: blame.runId } : {}) },
      }).toInfo();
      // From a `failed` tap: reporting it would call that tap again, and again.
      if (blame.hook === 'failed') d.logger.error(info.message);
      else d.reportFailure(info);
      if (!blame.runId) return;
      const run = d.sessions.all().find((s) => s.activeRun?.runId === blame.runId)?.activeRun;
      run?.fail(info);
    },
    stray(err, origin) {
      const info: RuntimeErrorInfo = { code: 'internal', message: `${kindOf(origin)} that no plugin can be blamed for: ${describeCrash(err)}; the host keeps running`, details: { origin } };
      d.reportFailure(info);
    },
  };
}
