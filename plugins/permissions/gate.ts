/**
 * The two taps that enforce the policy. `beforeToolCall` refuses what a deny rule (or a broken
 * settings section) refuses. An "ask" waits in `executeTool`, the first tap there: a
 * `beforeToolCall` tap gets neither the run's AbortSignal nor a way to emit events, and the wait
 * needs both (stop settles it; clients must see the pending approval). Approved, the tap steps
 * aside and the tool runs; refused, its result says why and the tool never starts.
 */
import type { JsonObject, Logger, SettingsStore, ToolBlock, ToolCallInfo, ToolContext, ToolResult } from '../../plugin-api.js';
import { APPROVAL_EVENT, APPROVAL_SETTLED_EVENT, type ApprovalRequest, type ApprovalSettledPayload, type RuleRef, type Settlement } from './events.js';
import type { PendingApprovals } from './pending.js';
import { compilePolicy, describeRule, evaluate, sessionKeyOf, summarize, type Policy, type Verdict } from './rules.js';
import { loadSection } from './schema.js';

/** The policy in force: nothing to do, a compiled policy, or settings that refuse everything. */
export type PolicyState = { kind: 'off' } | { kind: 'on'; policy: Policy } | { kind: 'broken'; problem: string };

const OFF: PolicyState = { kind: 'off' };
const UNSET = Symbol('unset');

/** Recompiles only when the `permissions` section changed (settings snapshots are frozen: identity says it). */
export class PolicyHolder {
  private raw: unknown = UNSET;
  private state: PolicyState = OFF;

  constructor(private readonly settings: SettingsStore, private readonly onBroken: (problem: string) => void) {}

  current(): PolicyState {
    const raw = this.settings.get().permissions;
    if (raw === this.raw) return this.state;
    this.raw = raw;
    const loaded = loadSection(raw);
    if (!loaded.ok) {
      this.state = { kind: 'broken', problem: loaded.problem };
      this.onBroken(loaded.problem);
    } else {
      const policy = compilePolicy(loaded.settings);
      this.state = policy.active ? { kind: 'on', policy } : OFF;
    }
    return this.state;
  }
}

/** `approve_session` grants, per conversation, in memory. */
export class SessionGrants {
  private readonly byConversation = new Map<string, Set<string>>();
  private static readonly MAX_CONVERSATIONS = 1000;

  has(conversationId: string, key: string): boolean {
    return this.byConversation.get(conversationId)?.has(key) ?? false;
  }

  add(conversationId: string, key: string): void {
    let keys = this.byConversation.get(conversationId);
    if (!keys) {
      this.byConversation.set(conversationId, (keys = new Set()));
      if (this.byConversation.size > SessionGrants.MAX_CONVERSATIONS) this.byConversation.delete(this.byConversation.keys().next().value!);
    }
    keys.add(key);
  }

  list(conversationId: string): string[] {
    return [...(this.byConversation.get(conversationId) ?? [])];
  }

  forget(conversationId: string): void {
    this.byConversation.delete(conversationId);
  }
}

export interface GateDeps {
  holder: PolicyHolder;
  table: PendingApprovals;
  grants: SessionGrants;
  logger: Logger;
}

export function checkBefore(d: GateDeps, info: ToolCallInfo): ToolBlock | undefined {
  const state = d.holder.current();
  if (state.kind === 'off') return undefined;
  if (state.kind === 'broken') {
    return { block: true, reason: `the permissions settings are invalid (${state.problem}), so every tool call is refused until settings.json is fixed` };
  }
  const v = evaluate(state.policy, info);
  return v.action === 'deny' ? { block: true, reason: denyReason(info.name, info.input, v) } : undefined;
}

function denyReason(name: string, input: JsonObject, v: Verdict): string {
  return `${v.rule ? describeRule(v.rule) : 'the permissions settings'} deny ${name} ${JSON.stringify(summarize(name, input, v.subject))}. It did not run. Do not try to get around the rule with another tool; if the task needs it, tell the user.`;
}

/** The `executeTool` tap: undefined lets the call run; a result refuses it. */
export async function waitForApproval(d: GateDeps, info: ToolCallInfo, ctx: ToolContext): Promise<ToolResult | undefined> {
  const state = d.holder.current();
  if (state.kind !== 'on') return undefined; // off, or broken (beforeToolCall refused it already)
  const v = evaluate(state.policy, info);
  // The section changed between the two taps: the newer rules decide.
  if (v.action === 'deny') return refused(`Tool call blocked: ${denyReason(info.name, info.input, v)}`, { outcome: 'denied', rule: null });
  if (v.action !== 'ask') return undefined;
  const key = sessionKeyOf(info.name, v);
  if (d.grants.has(info.conversationId, key)) return undefined;

  const rule: RuleRef | null = v.rule ? { index: v.rule.index, tool: v.rule.rule.tool, ...(v.rule.rule.pattern !== undefined ? { pattern: v.rule.rule.pattern } : {}), action: 'ask' } : null;
  const request: ApprovalRequest = {
    toolCallId: info.id,
    conversationId: info.conversationId,
    runId: info.runId,
    toolName: info.name,
    args: info.input,
    summary: summarize(info.name, info.input, v.subject),
    subject: v.subject.kind,
    rule,
    deadlineAt: Date.now() + state.policy.timeoutMs,
  };
  const settled = d.table.ask(request, ctx.signal);
  // The entry exists now, so a decision sent the moment a client sees this event is taken.
  const announced = d.table.isPending(info.conversationId, info.id);
  if (announced) ctx.emit(APPROVAL_EVENT, request as unknown as JsonObject);
  const s = await settled;
  if (announced) {
    const payload: ApprovalSettledPayload = { toolCallId: info.id, conversationId: info.conversationId, toolName: info.name, ...s };
    ctx.emit(APPROVAL_SETTLED_EVENT, payload as unknown as JsonObject);
  }
  d.logger.debug(`approval ${info.id} (${info.name}): ${s.outcome}`);
  if (s.approved) {
    if (s.decision === 'approve_session') d.grants.add(info.conversationId, key);
    return undefined;
  }
  return refused(refusalText(request, s, state.policy.timeoutMs), { outcome: s.outcome, rule: rule as unknown as JsonObject | null, deadlineAt: request.deadlineAt, ...(s.reason ? { reason: s.reason } : {}) });
}

function refusalText(r: ApprovalRequest, s: Settlement, timeoutMs: number): string {
  const what = `${r.toolName} ${JSON.stringify(r.summary)}`;
  if (s.outcome === 'timedOut') return `Tool call denied: nobody approved ${what} within ${formatDuration(timeoutMs)} (permissions.approvalTimeoutMs), so it did not run.`;
  if (s.outcome === 'cancelled') return `Tool call denied: ${s.reason ?? 'it was cancelled'} while ${what} waited for approval, so it did not run.`;
  return `Tool call denied: the user did not approve ${what}, so it did not run. Do not retry it unchanged; ask the user how to go on.`;
}

function refused(text: string, permission: JsonObject): ToolResult {
  return { content: [{ type: 'text', text }], isError: true, details: { blocked: true, permission } };
}

export function formatDuration(ms: number): string {
  if (ms % 60_000 === 0) return `${ms / 60_000} minute${ms === 60_000 ? '' : 's'}`;
  if (ms % 1000 === 0) return `${ms / 1000} second${ms === 1000 ? '' : 's'}`;
  return `${ms} ms`;
}
