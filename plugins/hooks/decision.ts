/**
 * What a hook's outcome means.
 *
 * Blocking hooks: exit 2 denies, with stderr as the reason. Exit 0 allows; its stdout (or a 2xx
 * response body), when not empty, must be a JSON decision `{ "decision": "allow" | "deny",
 * "reason": "…", "updatedInput": { … } }`. Anything else (a timeout, a launch failure, another
 * exit code, a non-2xx status, an answer that is no decision) is a failure, which the hook's
 * `onFailure` turns into a deny (`block`, the default: a broken guard fails closed) or an allow.
 *
 * Observing hooks: only "did it work" matters, for the report.
 */
import { z } from 'zod';
import type { JsonObject } from '../../plugin-api.js';
import type { CommandHookOutcome } from './run-command.js';
import type { HttpHookOutcome } from './run-http.js';

export type HookOutcome = CommandHookOutcome | HttpHookOutcome;

export type Verdict =
  | { kind: 'allow'; reason?: string; updatedInput?: JsonObject }
  | { kind: 'deny'; reason: string }
  | { kind: 'failure'; reason: string };

const DecisionSchema = z
  .object({
    decision: z.enum(['allow', 'deny']).optional(),
    reason: z.string().optional(),
    updatedInput: z.record(z.string(), z.unknown()).optional(),
  })
  // Fields other hook systems print (`continue`, `suppressOutput`, ...) are not garbage.
  .loose();

const MAX_REASON = 2000;

function clip(text: string, max = MAX_REASON): string {
  const t = text.trim();
  return t.length > max ? `${t.slice(0, max)}… [cut]` : t;
}

function firstLine(text: string): string {
  const line = text.trim().split('\n')[0] ?? '';
  return line.length > 200 ? `${line.slice(0, 200)}…` : line;
}

/** Read an answer (stdout of exit 0, or a 2xx body). */
export function parseAnswer(text: string): Verdict {
  const t = text.trim();
  if (!t) return { kind: 'allow' };
  let json: unknown;
  try {
    json = JSON.parse(t);
  } catch {
    return { kind: 'failure', reason: `answered something that is not a JSON decision: ${JSON.stringify(firstLine(t))}` };
  }
  const r = DecisionSchema.safeParse(json);
  if (!r.success) {
    const i = r.error.issues[0]!;
    const where = i.path.length ? i.path.join('.') : 'the answer';
    return { kind: 'failure', reason: `answered a decision that does not validate (${where}: ${i.message})` };
  }
  const d = r.data;
  if (d.decision === 'deny') return { kind: 'deny', reason: clip(d.reason ?? '') || 'no reason given' };
  const allow: Verdict = { kind: 'allow' };
  if (d.reason) allow.reason = clip(d.reason);
  if (d.updatedInput) allow.updatedInput = d.updatedInput as JsonObject;
  return allow;
}

/** Why an outcome is a failure, in a few words; undefined when the hook ran and answered. */
export function failureOf(o: HookOutcome, timeoutMs: number): string | undefined {
  if (o.kind === 'command') {
    if (o.spawnError) return `could not be started: ${o.spawnError}`;
    if (o.timedOut) return `timed out after ${timeoutMs} ms (its processes were stopped${o.survivors.length ? `, except pids ${o.survivors.join(', ')}` : ''})`;
    if (o.aborted) return 'was stopped (the run ended or the host is stopping)';
    return undefined;
  }
  if (o.timedOut) return `timed out after ${timeoutMs} ms`;
  if (o.aborted) return 'was stopped (the run ended or the host is stopping)';
  if (o.error) return `request failed: ${o.error}`;
  return undefined;
}

/** The decision of a blocking hook. */
export function verdictOf(o: HookOutcome, timeoutMs: number): Verdict {
  const failed = failureOf(o, timeoutMs);
  if (failed) return { kind: 'failure', reason: failed };
  if (o.kind === 'command') {
    if (o.exitCode === 2) return { kind: 'deny', reason: clip(o.stderr) || 'exit code 2 (no reason on stderr)' };
    if (o.exitCode === 0) return parseAnswer(o.stdout);
    const detail = o.stderr.trim() ? `: ${firstLine(o.stderr)}` : '';
    return { kind: 'failure', reason: o.exitCode === null ? `was killed by ${o.signal ?? 'a signal'}${detail}` : `exited with code ${o.exitCode} (only 0 allows and 2 denies)${detail}` };
  }
  if (o.status !== undefined && o.status >= 200 && o.status < 300) return parseAnswer(o.body);
  return { kind: 'failure', reason: `answered HTTP ${o.status}${o.body.trim() ? `: ${firstLine(o.body)}` : ''}` };
}

/** Why an observing hook's run counts as failed (any non-zero exit, any non-2xx status), or undefined. */
export function observerFailure(o: HookOutcome, timeoutMs: number): string | undefined {
  const failed = failureOf(o, timeoutMs);
  if (failed) return failed;
  if (o.kind === 'command') {
    if (o.exitCode === 0) return undefined;
    const detail = o.stderr.trim() ? `: ${firstLine(o.stderr)}` : '';
    return o.exitCode === null ? `was killed by ${o.signal ?? 'a signal'}${detail}` : `exited with code ${o.exitCode}${detail}`;
  }
  if (o.status !== undefined && o.status >= 200 && o.status < 300) return undefined;
  return `answered HTTP ${o.status}`;
}
