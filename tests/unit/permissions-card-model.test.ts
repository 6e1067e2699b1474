/**
 * The WebUI's view of tool approvals: it reads the events as the plugin writes them (its copy of
 * the wire shapes agrees with plugins/permissions/events.ts, custom-named or under their own
 * type), folds them per tool call, drops the last run's settled cards at the next run, and
 * words the outcomes and the rule.
 */
import { describe, expect, it } from 'vitest';
import type { LifecycleEvent } from '../../plugin-api.js';
import { approvalEventOf, type ApprovalRequest } from '../../plugins/permissions/events.js';
import { applyApprovalEvent, approvalOf, outcomeLabel, ruleLabel, settleLeftovers, type ApprovalMap } from '../../webui/src/components/tool-approval/approval-model.js';

const base = { conversationId: 'c1', runId: 'r1', ts: 1 };
const request: ApprovalRequest = {
  toolCallId: 't1', conversationId: 'c1', runId: 'r1', toolName: 'Bash', args: { command: 'ls' }, summary: 'ls', subject: 'command', rule: { index: 0, tool: 'Bash', action: 'ask' }, deadlineAt: 99,
};
const asked = { ...base, seq: 5, type: 'custom', name: 'tool_approval', payload: request } as unknown as LifecycleEvent;
const settled = { ...base, seq: 6, type: 'custom', name: 'tool_approval_settled', payload: { toolCallId: 't1', conversationId: 'c1', toolName: 'Bash', outcome: 'approved', approved: true, decision: 'approve_session' } } as unknown as LifecycleEvent;

describe('the WebUI approval model', () => {
  it('reads the events as the plugin does, custom-named or under their own type', () => {
    for (const ev of [asked, settled, { ...asked, type: 'tool_approval' } as unknown as LifecycleEvent, { ...base, seq: 7, type: 'custom', name: 'other', payload: {} } as unknown as LifecycleEvent]) {
      expect(approvalOf(ev)).toEqual(approvalEventOf(ev));
    }
    expect(approvalOf(asked)?.kind).toBe('asked');
  });

  it('folds per call; the next run drops settled cards; a run that ended leaves none pending', () => {
    const map: ApprovalMap = {};
    applyApprovalEvent(map, asked);
    expect(map.t1).toEqual({ request });
    applyApprovalEvent(map, settled);
    expect(outcomeLabel(map.t1!.settled!)).toBe('Approved for this session');
    applyApprovalEvent(map, { ...base, runId: 'r2', seq: 8, type: 'agent_start' } as unknown as LifecycleEvent);
    expect(map).toEqual({});
    applyApprovalEvent(map, asked);
    settleLeftovers(map);
    expect(map.t1!.settled).toMatchObject({ outcome: 'cancelled', approved: false });
    expect(outcomeLabel(map.t1!.settled!)).toBe('Run stopped · denied');
  });

  it('words the rule that asked', () => {
    expect(ruleLabel({ index: 1, tool: 'Bash', pattern: 'git *', action: 'ask' })).toBe('Asked by permissions rule #2: Bash · git *');
    expect(ruleLabel(null)).toContain('permissions.default is "ask"');
  });
});
