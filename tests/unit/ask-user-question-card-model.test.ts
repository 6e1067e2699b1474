/**
 * The card's Vue-free model: choices become the request_json answers array, the countdown, and
 * props built from the runtime's event payloads and stored results (history replay).
 */
import { describe, expect, it } from 'vitest';
import {
  collectAnswers,
  formatCountdown,
  fromAskEvent,
  fromSettledEvent,
  fromToolCall,
  readQuestions,
  remainingMs,
  type AskQuestion,
} from '../../webui/src/components/ask-user-question/card-model.js';

const questions: AskQuestion[] = [
  { id: 'q1', prompt: 'DB?', options: [{ label: 'SQLite', recommended: true }, { label: 'Postgres' }] },
  { id: 'q2', prompt: 'Where?', options: [{ label: 'Cloud' }, { label: 'Laptop' }] },
];

describe('AskUserQuestion card model', () => {
  it('collects answers only once every question is answered, typed answers trimmed and capped', () => {
    expect(collectAnswers(questions, { q1: { kind: 'option', label: 'Postgres' } }, {})).toBeUndefined();
    expect(collectAnswers(questions, { q1: { kind: 'option', label: 'Postgres' }, q2: { kind: 'other' } }, { q2: '   ' })).toBeUndefined();
    expect(collectAnswers(questions, { q1: { kind: 'option', label: 'Nope' }, q2: { kind: 'option', label: 'Cloud' } }, {})).toBeUndefined();
    expect(collectAnswers(questions, { q1: { kind: 'option', label: 'Postgres' }, q2: { kind: 'other' } }, { q2: ' my box ' })).toEqual([
      { questionId: 'q1', selectedLabel: 'Postgres' },
      { questionId: 'q2', custom: 'my box' },
    ]);
    expect(collectAnswers(questions, { q1: { kind: 'option', label: 'Postgres' }, q2: { kind: 'other' } }, { q2: 'x'.repeat(11) }, 10)).toBeUndefined();
  });

  it('counts down from the deadline', () => {
    expect(remainingMs(null, 5)).toBeNull();
    expect(remainingMs(1000, 400)).toBe(600);
    expect(remainingMs(1000, 5000)).toBe(0);
    expect(formatCountdown(180_000)).toBe('3:00');
    expect(formatCountdown(61_001)).toBe('1:02');
    expect(formatCountdown(1)).toBe('0:01');
  });

  it('reads questions defensively: ids by position, recommended first', () => {
    expect(readQuestions([{ prompt: 'x', options: [{ label: 'a' }, { label: 'b', recommended: true }, { nope: 1 }] }, 'junk'])).toEqual([
      { id: 'q1', prompt: 'x', options: [{ label: 'b', recommended: true }, { label: 'a' }] },
    ]);
    expect(readQuestions(undefined)).toEqual([]);
  });

  it('builds props from the ask_user_question and settled payloads', () => {
    expect(fromAskEvent({ toolCallId: 't1', conversationId: 'c1', questions, deadlineAt: 123, maxCustomLength: 50 })).toEqual({
      toolCallId: 't1',
      conversationId: 'c1',
      questions,
      deadlineAt: 123,
      maxCustomLength: 50,
    });
    expect(fromAskEvent({ conversationId: 'c1' })).toBeUndefined();
    expect(fromSettledEvent({ outcome: 'timedOut', answers: [{ questionId: 'q1', selectedLabel: 'SQLite' }, { bad: true }] })).toEqual({
      outcome: 'timedOut',
      answers: [{ questionId: 'q1', selectedLabel: 'SQLite' }],
    });
  });

  it('builds props from a tool call (stamped args) and from a stored result (history replay)', () => {
    const live = fromToolCall({ id: 't1', input: { questions, __askUserQuestionDeadlineAt: 999 } }, 'c1');
    expect(live).toEqual({ toolCallId: 't1', conversationId: 'c1', questions, deadlineAt: 999 });
    const details = { kind: 'ask_user_question', outcome: 'answered', questions, answers: [{ questionId: 'q1', custom: 'hm' }], deadlineAt: 5 };
    expect(fromToolCall({ id: 't1', input: { questions: [] } }, 'c1', { details })).toEqual({
      toolCallId: 't1',
      conversationId: 'c1',
      questions,
      deadlineAt: 5,
      settled: { outcome: 'answered', answers: [{ questionId: 'q1', custom: 'hm' }] },
    });
    // Stopped before the question was asked: the kernel's own result has no AskUserQuestion details.
    expect(fromToolCall({ id: 't1', input: { questions } }, 'c1', { details: { cancelled: true } }).settled).toEqual({ outcome: 'cancelled', answers: [] });
  });
});
