/**
 * Which action a tool call gets. A rule matches when its `tool` glob matches the tool's name
 * (case-insensitive: `bash` must not silently miss `Bash`) and, when it has a `pattern`, the
 * pattern matches the call's subject: the `command` argument (Bash, ManagedProcess), else the
 * `file_path` / `path` argument (Read, Write, Edit, Delete, Image, MCP file tools). Among the
 * matching rules deny beats ask beats allow; with none, the `default` decides.
 */
import os from 'node:os';
import path from 'node:path';
import type { JsonObject } from '../../plugin-api.js';
import { commandParts, withoutAssignments } from './command.js';
import { globMatcher } from './glob.js';
import type { Action, PermissionsSettings, Rule } from './schema.js';

/** AskUserQuestion already waits for the user: a default "ask" does not ask before it (a rule naming it still applies). */
const EXEMPT_FROM_DEFAULT = new Set(['AskUserQuestion']);

/** What a pattern is matched against. */
export type Subject =
  | { kind: 'command'; value: string; segments: string[]; opaque: boolean }
  | { kind: 'path'; value: string; candidates: string[] }
  | { kind: 'none' };

export interface CompiledRule {
  /** Position in `permissions.rules` (0-based). */
  index: number;
  rule: Rule;
  tool(name: string): boolean;
  pattern?: { command(s: string): boolean; path(s: string): boolean };
}

/** The settings, compiled once per change of the section. */
export interface Policy {
  /** False for `default: "allow"` with no rules: the taps then do nothing. */
  active: boolean;
  default: 'allow' | 'ask';
  timeoutMs: number;
  rules: CompiledRule[];
}

export interface Verdict {
  action: Action;
  /** The rule that decided; absent when the default did. */
  rule?: CompiledRule;
  subject: Subject;
}

export function compilePolicy(s: PermissionsSettings): Policy {
  return {
    active: s.default !== 'allow' || s.rules.length > 0,
    default: s.default,
    timeoutMs: s.approvalTimeoutMs,
    rules: s.rules.map((rule, index) => ({
      index,
      rule,
      tool: globMatcher(rule.tool, { nocase: true }),
      ...(rule.pattern ? { pattern: compilePattern(rule.pattern) } : {}),
    })),
  };
}

function compilePattern(pattern: string): CompiledRule['pattern'] {
  // Commands: a star spans slashes (`curl *` matches `curl https://x/y`), and `git *` also matches a bare `git`.
  const cmd = globMatcher(pattern, { bash: true, dot: true });
  const bare = pattern.endsWith(' *') ? globMatcher(pattern.slice(0, -2), { bash: true, dot: true }) : undefined;
  const expanded = pattern === '~' || pattern.startsWith('~/') ? path.join(os.homedir(), pattern.slice(1)) : pattern;
  const file = globMatcher(expanded, { dot: true });
  // A pattern without a slash (`.env`, `*.pem`) names a file wherever it is.
  const matchPath = expanded.includes('/') ? file : (s: string) => file(s.slice(s.lastIndexOf('/') + 1));
  return { command: (s) => cmd(s) || !!bare?.(s), path: matchPath };
}

export function subjectOf(input: JsonObject, workdir: string): Subject {
  if (typeof input.command === 'string') {
    const { segments, opaque } = commandParts(input.command);
    return { kind: 'command', value: input.command, segments, opaque };
  }
  const p = typeof input.file_path === 'string' ? input.file_path : typeof input.path === 'string' ? input.path : undefined;
  if (p === undefined || !p) return { kind: 'none' };
  const home = os.homedir();
  const abs = path.resolve(workdir, p === '~' || p.startsWith('~/') ? path.join(home, p.slice(1)) : p);
  const rel = path.relative(workdir, abs);
  const candidates = [abs];
  if (rel && !rel.startsWith('..') && !path.isAbsolute(rel)) candidates.push(rel.split(path.sep).join('/'));
  return { kind: 'path', value: p, candidates };
}

/**
 * Does the rule's pattern match? deny and ask look for any part that matches (the whole
 * command, or one simple command in it, with leading `VAR=x` assignments or without); allow
 * needs every simple command to match, and never matches an opaque one.
 */
function patternMatches(r: CompiledRule, subject: Subject): boolean {
  const p = r.pattern!;
  if (subject.kind === 'none') return false;
  if (subject.kind === 'path') return subject.candidates.some((c) => p.path(c));
  const one = (seg: string) => p.command(seg) || p.command(withoutAssignments(seg));
  if (r.rule.action === 'allow') return !subject.opaque && subject.segments.length > 0 && subject.segments.every(one);
  return p.command(subject.value.trim()) || subject.segments.some(one);
}

export function evaluate(policy: Policy, call: { name: string; input: JsonObject; workdir: string }): Verdict {
  let subject: Subject | undefined;
  const subjectNow = () => (subject ??= subjectOf(call.input, call.workdir));
  let ask: CompiledRule | undefined;
  let allow: CompiledRule | undefined;
  for (const r of policy.rules) {
    if (!r.tool(call.name)) continue;
    if (r.pattern && !patternMatches(r, subjectNow())) continue;
    if (r.rule.action === 'deny') return { action: 'deny', rule: r, subject: subjectNow() };
    if (r.rule.action === 'ask') ask ??= r;
    else allow ??= r;
  }
  if (ask) return { action: 'ask', rule: ask, subject: subjectNow() };
  if (allow) return { action: 'allow', rule: allow, subject: subjectNow() };
  const action = policy.default === 'ask' && !EXEMPT_FROM_DEFAULT.has(call.name) ? 'ask' : 'allow';
  return { action, subject: subjectNow() };
}

/** `rule #2 { tool: "Bash", pattern: "rm *", action: "deny" }` (1-based, as people count). */
export function describeRule(r: CompiledRule): string {
  const { tool, pattern, action } = r.rule;
  return `permissions rule #${r.index + 1} { tool: ${JSON.stringify(tool)}${pattern !== undefined ? `, pattern: ${JSON.stringify(pattern)}` : ''}, action: "${action}" }`;
}

/**
 * What `approve_session` remembers: the tool and the pattern of the rule that asked (`*` for a
 * rule without one, or the default), so a later call that the same rule asks for is let through.
 */
export function sessionKeyOf(toolName: string, v: Verdict): string {
  return `${toolName}\u0000${v.rule?.rule.pattern ?? '*'}`;
}

/** A one-line view of the call for people: the command, the path, or the arguments. */
export function summarize(toolName: string, input: JsonObject, subject: Subject): string {
  const cut = (s: string, n = 300) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);
  if (subject.kind !== 'none') return cut(subject.value.replace(/\s*\n\s*/g, ' ⏎ '));
  const json = JSON.stringify(input);
  return json === '{}' ? toolName : cut(json);
}
