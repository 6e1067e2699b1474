/**
 * The `permissions` service: how any client (the gateway for the WebUI, the CLI, a desktop host)
 * decides a pending approval, lists the pending ones, or cancels a conversation's.
 */
import { z } from 'zod';
import type { JsonObject } from '../../plugin-api.js';
import { DECISIONS, type ApprovalRequest, type Decision, type Outcome } from './events.js';
import type { PolicyHolder, SessionGrants } from './gate.js';
import { ApprovalError, type PendingApprovals } from './pending.js';
import { describeRule, evaluate } from './rules.js';

export { ApprovalError } from './pending.js';
export type { ApprovalRequest, ApprovalSettledPayload, Decision, Outcome, RuleRef } from './events.js';

/** The key the service is provided under. */
export const PERMISSIONS_SERVICE = 'permissions';

export interface DecisionRequest {
  /** The tool call id (the gateway's `item_id`). */
  toolCallId: string;
  /** The conversation the approval belongs to; any other is refused. */
  conversationId: string;
  decision: Decision;
}

export interface DecisionReceipt {
  toolCallId: string;
  conversationId: string;
  decision: Decision;
  outcome: Extract<Outcome, 'approved' | 'denied'>;
}

export interface PermissionsService {
  /**
   * Settle a pending approval. Throws an {@link ApprovalError} (`code`: not_found, conflict,
   * forbidden, bad_request) whose message says what is wrong; a refused decision leaves it pending.
   */
  decide(request: DecisionRequest): DecisionReceipt;
  /** The pending approvals, oldest first (one conversation's when given). */
  pending(conversationId?: string): ApprovalRequest[];
  /** Deny a conversation's pending approvals (e.g. it was deleted). Returns how many. */
  cancelConversation(conversationId: string, reason?: string): number;
  /** What the settings say about a call now, without asking anyone (`rule` describes the rule that decided). */
  check(call: { name: string; input: JsonObject; workdir: string }): { action: 'allow' | 'ask' | 'deny'; rule?: string };
  /** The `approve_session` grants of a conversation (`<tool>\u0000<pattern>`). */
  sessionGrants(conversationId: string): string[];
}

const DecisionSchema = z.object({
  toolCallId: z.string('toolCallId must be a string').min(1, 'toolCallId must not be empty'),
  conversationId: z.string('conversationId must be a string').min(1, 'conversationId must not be empty'),
  decision: z.enum(DECISIONS as [Decision, ...Decision[]], 'decision must be "approve", "deny" or "approve_session"'),
});

export function createService(table: PendingApprovals, holder: PolicyHolder, grants: SessionGrants): PermissionsService {
  return {
    decide(request) {
      const r = DecisionSchema.safeParse(request);
      if (!r.success) {
        const i = r.error.issues[0]!;
        throw new ApprovalError('bad_request', i.path.length ? `${i.path.join('.')}: ${i.message}` : `decision: ${i.message}`);
      }
      const { toolCallId, conversationId, decision } = r.data;
      const s = table.decide(toolCallId, conversationId, decision);
      return { toolCallId, conversationId, decision, outcome: s.outcome === 'approved' ? 'approved' : 'denied' };
    },
    pending: (conversationId) => table.list(conversationId),
    cancelConversation: (conversationId, reason = 'the conversation was deleted') => table.cancelConversation(conversationId, reason),
    check(call) {
      const state = holder.current();
      if (state.kind === 'off') return { action: 'allow' };
      if (state.kind === 'broken') return { action: 'deny', rule: `invalid settings: ${state.problem}` };
      const v = evaluate(state.policy, call);
      return { action: v.action, ...(v.rule ? { rule: describeRule(v.rule) } : {}) };
    },
    sessionGrants: (conversationId) => grants.list(conversationId),
  };
}
