/**
 * The WebUI's AskUserQuestion state, without a browser: the two events folded into the
 * conversation state (live, replayed in a snapshot), and which card a tool call shows (from
 * the event, from the deadline stamped in tool_execution_start's args, settled from its result
 * as history replays it). The browser side is ask-user-question.test.ts.
 */
import { describe, expect, it } from 'vitest';
import type { JsonObject, LifecycleEvent, ToolCallBlock, ToolResultBlock } from '../../plugin-api.js';
import { askCardFor } from '../../webui/src/lib/ask-user-question.js';
import { applyEvent, applySnapshot, emptyState } from '../../webui/src/lib/conversation-state.js';

const base = { conversationId: 'c1', runId: 'r1', ts: 1 };
let seq = 0;
const ev = (e: Record<string, unknown>) => ({ ...base, seq: ++seq, ...e }) as unknown as LifecycleEvent;

const questions = [
  { id: 'q1', header: 'Database', prompt: 'Which one?', options: [{ label: 'SQLite', recommended: true }, { label: 'Postgres' }] },
  { id: 'q2', prompt: 'Tests?', options: [{ label: 'Yes' }, { label: 'No' }] },
];
const questionsJson = questions as unknown as JsonObject[];
const call: ToolCallBlock = { type: 'tool_call', id: 'toolu_1', name: 'AskUserQuestion', input: { questions: questionsJson } };
const stamped: ToolCallBlock = { ...call, input: { questions: questionsJson, __askUserQuestionDeadlineAt: 90_000 } };
const asked = { toolCallId: 'toolu_1', conversationId: 'c1', questions, deadlineAt: 60_000, maxCustomLength: 500 };
const answers = [
  { questionId: 'q1', selectedLabel: 'Postgres' },
  { questionId: 'q2', selectedLabel: 'No' },
];

function result(details?: Record<string, unknown>, isError = false): ToolResultBlock {
  return { type: 'tool_result', toolCallId: 'toolu_1', toolName: 'AskUserQuestion', content: [{ type: 'text', text: '…' }], isError, ...(details ? { details: details as never } : {}) };
}

describe('WebUI AskUserQuestion state', () => {
  it('folds ask_user_question and ask_user_question_settled into one record per call', () => {
    const s = emptyState('c1');
    applyEvent(s, ev({ type: 'ask_user_question', payload: asked }));
    expect(s.asks.toolu_1?.card).toMatchObject({ toolCallId: 'toolu_1', conversationId: 'c1', deadlineAt: 60_000, maxCustomLength: 500 });
    expect(s.asks.toolu_1?.card?.questions.map((q) => q.id)).toEqual(['q1', 'q2']);
    applyEvent(s, ev({ type: 'ask_user_question_settled', payload: { toolCallId: 'toolu_1', conversationId: 'c1', outcome: 'answered', answers } }));
    expect(s.asks.toolu_1?.settled).toEqual({ outcome: 'answered', answers });
    // Junk from the socket changes nothing.
    applyEvent(s, ev({ type: 'ask_user_question', payload: { questions } }));
    expect(Object.keys(s.asks)).toEqual(['toolu_1']);
  });

  it('a snapshot brings pending questions back from the run’s events and forgets stale ones', () => {
    const s = emptyState('c1');
    s.asks.old = { settled: { outcome: 'cancelled', answers: [] } };
    applySnapshot(s, {
      lastSeq: 40,
      messages: [],
      running: true,
      pending: [ev({ type: 'tool_execution_start', toolCallId: 'toolu_1', toolName: 'AskUserQuestion', args: stamped.input }), ev({ type: 'ask_user_question', payload: asked })],
    });
    expect(Object.keys(s.asks)).toEqual(['toolu_1']);
    expect(askCardFor(call, 'c1', { ask: s.asks.toolu_1, started: !!s.tools.toolu_1, running: s.running })).toMatchObject({ deadlineAt: 60_000 });
    expect(askCardFor(call, 'c1', { ask: s.asks.toolu_1, started: true, running: true })?.settled).toBeUndefined();
  });

  it('picks the card: the event, the stamped arguments, not yet asked, settled by the event or the result', () => {
    const open = { started: true, running: true };
    expect(askCardFor(call, 'c1', { ask: { card: { ...asked, questions } }, ...open })).toMatchObject({ deadlineAt: 60_000 });
    expect(askCardFor(call, 'c1', { ask: { card: { ...asked, questions }, settled: { outcome: 'timedOut', answers } }, ...open })?.settled?.outcome).toBe('timedOut');
    // Started, the event not here yet: the deadline stamped into tool_execution_start's arguments.
    expect(askCardFor(stamped, 'c1', open)).toMatchObject({ deadlineAt: 90_000 });
    expect(askCardFor(stamped, 'c1', open)?.settled).toBeUndefined();
    // Arguments still being generated, or the call waits its turn: no card yet.
    expect(askCardFor(call, 'c1', { started: false, running: true })).toBeNull();
    // The run ended with no result and no event: nobody answered.
    expect(askCardFor(call, 'c1', { started: false, running: false })?.settled?.outcome).toBe('cancelled');
  });

  it('a result settles the card; its details replay history', () => {
    const details = { kind: 'ask_user_question', outcome: 'answered', questions, answers, deadlineAt: 70_000 };
    const fromHistory = askCardFor(call, 'c1', { result: result(details), started: false, running: false });
    expect(fromHistory).toMatchObject({ toolCallId: 'toolu_1', deadlineAt: 70_000, settled: { outcome: 'answered', answers } });
    // A result without the tool's details (e.g. invalid arguments) keeps the event's questions and reads as not answered.
    const refused = askCardFor(call, 'c1', { ask: { card: { ...asked, questions } }, result: result(undefined, true), started: true, running: true });
    expect(refused).toMatchObject({ deadlineAt: 60_000, settled: { outcome: 'cancelled', answers: [] } });
  });
});
