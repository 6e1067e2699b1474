/**
 * What the permissions plugin puts on the wire: the `tool_approval` and `tool_approval_settled`
 * event payloads, the decisions a client sends, and how a client recognizes the events. Free of
 * Node imports: the WebUI imports this file too.
 *
 * The events travel under their own `type` (`tool_approval`, `tool_approval_settled`: named
 * events of the contract, NamedPluginEventType). Clients read them through
 * {@link approvalEventOf}, which also accepts the `{ type: 'custom', name }` form a kernel
 * without those names would send.
 */
import type { JsonObject, LifecycleEvent } from '../../plugin-api.js';

export const APPROVAL_EVENT = 'tool_approval';
export const APPROVAL_SETTLED_EVENT = 'tool_approval_settled';

/** What a person answers: run it once, refuse it, or run it and every call the same rule asks for in this conversation. */
export type Decision = 'approve' | 'deny' | 'approve_session';
export const DECISIONS: readonly Decision[] = ['approve', 'deny', 'approve_session'];

/** `timedOut` (nobody answered by the deadline) and `cancelled` (the run stopped) are denials too. */
export type Outcome = 'approved' | 'denied' | 'timedOut' | 'cancelled';

/** The `ask` rule that asked; null when `permissions.default` did. */
export interface RuleRef {
  /** 0-based position in `permissions.rules`. */
  index: number;
  tool: string;
  pattern?: string;
  action: 'ask';
}

/** A pending approval: the `tool_approval` payload, and what `permissions.pending()` lists. */
export interface ApprovalRequest {
  /** The call's id (the gateway's `item_id`). */
  toolCallId: string;
  conversationId: string;
  runId: string;
  toolName: string;
  /** The call's arguments, as the tool will receive them. */
  args: JsonObject;
  /** One readable line: the command, the path, else the arguments. */
  summary: string;
  /** What `summary` is. */
  subject: 'command' | 'path' | 'none';
  rule: RuleRef | null;
  /** Epoch ms after which the call is denied; stamped once, the same for every client. */
  deadlineAt: number;
}

/** How an approval ended. */
export interface Settlement {
  outcome: Outcome;
  approved: boolean;
  /** The decision, when a person made one. */
  decision?: Decision;
  /** Why it was cancelled (the run was stopped, the host shut down). */
  reason?: string;
}

/** The `tool_approval_settled` payload. */
export interface ApprovalSettledPayload extends Settlement {
  toolCallId: string;
  conversationId: string;
  toolName: string;
}

export type ApprovalEvent = { kind: 'asked'; payload: ApprovalRequest } | { kind: 'settled'; payload: ApprovalSettledPayload };

/** The approval event a lifecycle event carries, if it is one (custom-named now, its own type later). */
export function approvalEventOf(ev: LifecycleEvent): ApprovalEvent | undefined {
  const name = ev.type === 'custom' ? ev.name : (ev.type as string);
  if (name !== APPROVAL_EVENT && name !== APPROVAL_SETTLED_EVENT) return undefined;
  const payload = (ev as { payload?: JsonObject }).payload;
  if (!payload || typeof payload.toolCallId !== 'string' || typeof payload.conversationId !== 'string') return undefined;
  return name === APPROVAL_EVENT ? { kind: 'asked', payload: payload as unknown as ApprovalRequest } : { kind: 'settled', payload: payload as unknown as ApprovalSettledPayload };
}
