/**
 * The `permissions` settings section, validated with zod: `{ default, rules, approvalTimeoutMs }`.
 * Strict objects: in a permissions file a misspelt key (`defualt`, `patern`) would silently widen
 * what runs, so it is refused with the nearest key named instead of kept as a warning.
 */
import { z } from 'zod';
import type { SchemaIssue, SchemaLike } from '../../plugin-api.js';
import { isValidGlob } from './glob.js';
import { ONE_OFF_PARSE } from '../../lib/one-off-parse.js';

export const ACTIONS = ['allow', 'ask', 'deny'] as const;
export type Action = (typeof ACTIONS)[number];

/** Default wait for an answer before an "ask" is denied (ms). */
export const DEFAULT_APPROVAL_TIMEOUT_MS = 180_000;
const MAX_APPROVAL_TIMEOUT_MS = 24 * 3_600_000;

const glob = (what: string) =>
  z
    .string(`${what} must be a string`)
    .trim()
    .min(1, `${what} must not be empty`)
    .max(4000, `${what} has at most 4000 characters`)
    .refine(isValidGlob, `${what} is not a valid glob`);

/** The message for a value that is not an object; other issues (an unknown key) keep zod's own. */
const notAnObject = (message: string) => ({ error: (issue: { code?: string }) => (issue.code === 'invalid_type' ? message : undefined) });

export const RuleSchema = z.strictObject(
  {
    tool: glob('tool (a tool name or a glob such as "mcp__*")'),
    pattern: glob('pattern (a glob over the Bash command or the file path)').optional(),
    action: z.enum(ACTIONS, 'action must be "allow", "ask" or "deny"'),
  },
  notAnObject('a rule must be an object { tool, pattern?, action }'),
);
export type Rule = z.output<typeof RuleSchema>;

export const PermissionsSchema = z.strictObject(
  {
    default: z.enum(['allow', 'ask'], 'default must be "allow" or "ask"').default('allow'),
    rules: z.array(RuleSchema, 'rules must be an array of { tool, pattern?, action }').max(1000, 'at most 1000 rules').default([]),
    approvalTimeoutMs: z
      .number('approvalTimeoutMs must be a number (milliseconds)')
      .int('approvalTimeoutMs must be a whole number of milliseconds')
      .min(1, 'approvalTimeoutMs must be at least 1')
      .max(MAX_APPROVAL_TIMEOUT_MS, `approvalTimeoutMs is at most ${MAX_APPROVAL_TIMEOUT_MS} (24 hours)`)
      .default(DEFAULT_APPROVAL_TIMEOUT_MS),
  },
  notAnObject('permissions must be an object { default?, rules?, approvalTimeoutMs? }'),
);
export type PermissionsSettings = z.output<typeof PermissionsSchema>;

/** The section as the plugin holds it: valid settings, or why they are not (every call is then refused). */
export type Loaded = { ok: true; settings: PermissionsSettings } | { ok: false; problem: string };

export function describeIssue(issues: ReadonlyArray<SchemaIssue>): string {
  const i = issues[0]!;
  return `permissions${i.path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`)).join('')}: ${i.message}`;
}

export function loadSection(raw: unknown): Loaded {
  const r = PermissionsSchema.safeParse(raw ?? {}, ONE_OFF_PARSE);
  return r.success ? { ok: true, settings: r.data } : { ok: false, problem: describeIssue(r.error.issues) };
}

/**
 * The plugin's `settingsSchema`. After start-up it is the strict schema, so a save with a bad
 * `permissions` section is refused naming the field. At start-up a bad section must not stop the
 * plugin, as a failed settings check would: the host would then run every tool unguarded. So the
 * boot check lets it through as `{ problem }`, and the plugin refuses every tool call until the
 * file is fixed (fail closed).
 */
export function bootTolerantSchema(): SchemaLike & { booted(): void } {
  let booting = true;
  const schema = {
    // The zod definition, so the settings store's "did you mean" hints still see the section's shape.
    _zod: (PermissionsSchema as unknown as { _zod: unknown })._zod,
    safeParse(value: unknown, options?: { jitless?: boolean }): ReturnType<SchemaLike['safeParse']> {
      const r = PermissionsSchema.safeParse(value ?? {}, options);
      if (r.success || !booting) return r as ReturnType<SchemaLike['safeParse']>;
      return { success: true, data: { problem: describeIssue(r.error.issues) } };
    },
    booted() {
      booting = false;
    },
  };
  return schema;
}
