/**
 * The tool result: plain text telling the model whether the user answered, cancelled or timed
 * out, and what was chosen; `details` (kind `ask_user_question`) lets the UI replay the card.
 */
import type { JsonObject, ToolResult } from '../../plugin-api.js';
import type { Answer } from './answers.js';
import type { Settlement } from './pending.js';
import type { NormalizedQuestion } from './schema.js';

export function buildResult(questions: NormalizedQuestion[], s: Settlement, deadlineAt: number | null, timeoutMs: number | null): ToolResult {
  const lines: string[] = [];
  if (s.outcome === 'answered') {
    lines.push(questions.length === 1 ? 'The user answered the question:' : 'The user answered the questions:');
    lines.push(...describeAnswers(questions, s.answers));
  } else if (s.outcome === 'timedOut') {
    lines.push(
      `The user did not answer within ${formatDuration(timeoutMs)}, so the recommended option was taken for each question (the first option where none was recommended). These are defaults, not the user's own choices:`,
    );
    lines.push(...describeAnswers(questions, s.answers));
  } else {
    lines.push(`The user did not answer: the question was cancelled (${s.reason ?? 'cancelled'}). No option was chosen; do not assume one.`);
  }
  const details: JsonObject = {
    kind: 'ask_user_question',
    outcome: s.outcome,
    answered: s.outcome === 'answered',
    cancelled: s.outcome === 'cancelled',
    timedOut: s.outcome === 'timedOut',
    questions: questions as unknown as JsonObject[],
    answers: s.answers as unknown as JsonObject[],
    deadlineAt,
    ...(s.reason ? { reason: s.reason } : {}),
  };
  return { content: [{ type: 'text', text: lines.join('\n') }], isError: s.outcome === 'cancelled', details };
}

function describeAnswers(questions: NormalizedQuestion[], answers: Answer[]): string[] {
  return questions.map((q) => {
    const a = answers.find((x) => x.questionId === q.id);
    const head = `- ${q.id}${q.header ? ` (${q.header})` : ''} "${q.prompt}":`;
    if (!a) return `${head} no answer`;
    if ('custom' in a) return `${head} the user typed their own answer: ${JSON.stringify(a.custom)}`;
    return `${head} ${a.selectedLabel}`;
  });
}

export function formatDuration(ms: number | null): string {
  if (!ms) return 'the time allowed';
  if (ms % 60_000 === 0) return `${ms / 60_000} minute${ms === 60_000 ? '' : 's'}`;
  if (ms % 1000 === 0) return `${ms / 1000} second${ms === 1000 ? '' : 's'}`;
  return `${ms} ms`;
}
