/**
 * Tool approvals (the permissions plugin) in the WebUI, free of Vue: the `tool_approval` /
 * `tool_approval_settled` event payloads folded into one record per tool call, and the labels
 * the card shows. The wire shapes mirror plugins/permissions/events.ts (the WebUI type-check
 * copies only the gateway protocol and the plugin API; tests/unit/permissions-card-model.test.ts
 * checks the two read events alike).
 */
import type { JsonObject, LifecycleEvent } from '../../../../plugin-api.js';

export type ApprovalDecision = 'approve' | 'deny' | 'approve_session';
export type ApprovalOutcome = 'approved' | 'denied' | 'timedOut' | 'cancelled';

export interface ApprovalRuleRef {
  index: number;
  tool: string;
  pattern?: string;
  action: 'ask';
}

/** A pending approval, as the `tool_approval` event carries it. */
export interface ApprovalRequestView {
  toolCallId: string;
  conversationId: string;
  runId: string;
  toolName: string;
  args: JsonObject;
  summary: string;
  subject: 'command' | 'path' | 'none';
  rule: ApprovalRuleRef | null;
  /** Epoch ms: the same deadline on every client. */
  deadlineAt: number;
}

export interface ApprovalSettledView {
  toolCallId: string;
  conversationId: string;
  toolName: string;
  outcome: ApprovalOutcome;
  approved: boolean;
  decision?: ApprovalDecision;
  reason?: string;
}

/** What the events said about one call; the settlement may come without the request (a late subscriber). */
export interface ApprovalRecord {
  request?: ApprovalRequestView;
  settled?: ApprovalSettledView;
}

/** One conversation's approvals, by toolCallId. */
export type ApprovalMap = Record<string, ApprovalRecord>;

/** The approval event a lifecycle event carries (custom-named now, its own `type` later), if any. */
export function approvalOf(ev: LifecycleEvent): { kind: 'asked'; payload: ApprovalRequestView } | { kind: 'settled'; payload: ApprovalSettledView } | undefined {
  const name = ev.type === 'custom' ? ev.name : (ev.type as string);
  if (name !== 'tool_approval' && name !== 'tool_approval_settled') return undefined;
  const payload = (ev as { payload?: JsonObject }).payload;
  if (!payload || typeof payload.toolCallId !== 'string' || typeof payload.conversationId !== 'string') return undefined;
  return name === 'tool_approval' ? { kind: 'asked', payload: payload as unknown as ApprovalRequestView } : { kind: 'settled', payload: payload as unknown as ApprovalSettledView };
}

/** Fold one event in; true when it was an approval event. A new run drops the settled cards of the last one. */
export function applyApprovalEvent(map: ApprovalMap, ev: LifecycleEvent): boolean {
  if (ev.type === 'agent_start') {
    for (const [id, rec] of Object.entries(map)) if (rec.settled || rec.request?.runId !== ev.runId) delete map[id];
    return false;
  }
  const a = approvalOf(ev);
  if (!a) return false;
  const rec = map[a.payload.toolCallId] ?? (map[a.payload.toolCallId] = {});
  if (a.kind === 'asked') rec.request = a.payload;
  else rec.settled = a.payload;
  return true;
}

/** A run that ended never leaves an approval pending (the server denied it): show it as cancelled. */
export function settleLeftovers(map: ApprovalMap): void {
  for (const rec of Object.values(map)) {
    if (rec.request && !rec.settled) rec.settled = { toolCallId: rec.request.toolCallId, conversationId: rec.request.conversationId, toolName: rec.request.toolName, outcome: 'cancelled', approved: false };
  }
}

export function outcomeLabel(s: ApprovalSettledView): string {
  if (s.outcome === 'approved') return s.decision === 'approve_session' ? 'Approved for this session' : 'Approved';
  if (s.outcome === 'denied') return 'Denied';
  if (s.outcome === 'timedOut') return 'Timed out · denied';
  return 'Run stopped · denied';
}

/** Why it asks, in words. */
export function ruleLabel(rule: ApprovalRuleRef | null): string {
  if (!rule) return 'Every tool call asks first (permissions.default is "ask").';
  return `Asked by permissions rule #${rule.index + 1}: ${rule.tool}${rule.pattern !== undefined ? ` · ${rule.pattern}` : ''}`;
}

export function subjectLabel(subject: ApprovalRequestView['subject']): string {
  return subject === 'command' ? 'Command' : subject === 'path' ? 'File' : 'Arguments';
}

/** The arguments besides the subject, for the "all arguments" view (a Write's content, a timeout). */
export function otherArgs(r: ApprovalRequestView): JsonObject {
  const skip = r.subject === 'command' ? ['command'] : r.subject === 'path' ? ['file_path', 'path'] : [];
  return Object.fromEntries(Object.entries(r.args).filter(([k]) => !skip.includes(k)));
}
