/**
 * The AskUserQuestion card's data, free of Vue: the shapes the runtime sends (the
 * `ask_user_question` event payload, the result `details` of kind `ask_user_question`), how a
 * set of choices becomes the `request_json` answers array, and the countdown.
 */

export interface AskOption {
  label: string;
  description?: string;
  recommended?: boolean;
}

export interface AskQuestion {
  id: string;
  header?: string;
  prompt: string;
  options: AskOption[];
}

/** One answer, as `chat_queue.tool_answer`'s request_json carries it (JSON.stringify the array). */
export type AskAnswer = { questionId: string; selectedLabel: string } | { questionId: string; custom: string };

export type AskOutcome = 'answered' | 'cancelled' | 'timedOut';

export interface AskSettled {
  outcome: AskOutcome;
  answers: AskAnswer[];
}

/** What the user picked for one question: a listed option, or "Other" (typed text). */
export type AskChoice = { kind: 'option'; label: string } | { kind: 'other' };

/** Props the card takes, as built from an event, a tool call or a result. */
export interface AskCardData {
  toolCallId: string;
  conversationId: string;
  questions: AskQuestion[];
  deadlineAt: number | null;
  maxCustomLength?: number;
  settled?: AskSettled;
}

export const DEFAULT_MAX_CUSTOM_LENGTH = 2000;

/** The answer for one question, or undefined while it is not answered (Other with no text). */
export function answerFor(question: AskQuestion, choice: AskChoice | undefined, otherText: string, maxCustomLength = DEFAULT_MAX_CUSTOM_LENGTH): AskAnswer | undefined {
  if (!choice) return undefined;
  if (choice.kind === 'option') return question.options.some((o) => o.label === choice.label) ? { questionId: question.id, selectedLabel: choice.label } : undefined;
  const text = otherText.trim();
  if (!text || text.length > maxCustomLength) return undefined;
  return { questionId: question.id, custom: text };
}

/** Every question's answer in order, or undefined until all are answered. */
export function collectAnswers(
  questions: AskQuestion[],
  choices: Record<string, AskChoice | undefined>,
  otherTexts: Record<string, string>,
  maxCustomLength = DEFAULT_MAX_CUSTOM_LENGTH,
): AskAnswer[] | undefined {
  const out: AskAnswer[] = [];
  for (const q of questions) {
    const a = answerFor(q, choices[q.id], otherTexts[q.id] ?? '', maxCustomLength);
    if (!a) return undefined;
    out.push(a);
  }
  return out;
}

/** Milliseconds left before the deadline (0 when past); null when there is no deadline. */
export function remainingMs(deadlineAt: number | null | undefined, now: number): number | null {
  if (deadlineAt === null || deadlineAt === undefined) return null;
  return Math.max(0, deadlineAt - now);
}

/** m:ss, rounded up so the last second still reads 0:01. */
export function formatCountdown(ms: number): string {
  const s = Math.ceil(ms / 1000);
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

export function tabLabel(question: AskQuestion, index: number): string {
  return question.header || `Question ${index + 1}`;
}

/** The option a timeout takes: the recommended one, else the first. */
export function fallbackOption(question: AskQuestion): AskOption | undefined {
  return question.options.find((o) => o.recommended) ?? question.options[0];
}

export function outcomeLabel(outcome: AskOutcome): string {
  return outcome === 'answered' ? 'Answered' : outcome === 'timedOut' ? 'Timed out: the recommended options were taken' : 'Cancelled: not answered';
}

/** How a settled answer reads in the echo. */
export function describeAnswer(answer: AskAnswer | undefined): string {
  if (!answer) return 'No answer';
  return 'custom' in answer ? answer.custom : answer.selectedLabel;
}

// ─── Building props from what the runtime sends (defensive: these cross a socket) ───

const isObj = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

/** Questions from a payload, ids filled by position and the recommended option first (as the runtime stores them). */
export function readQuestions(raw: unknown): AskQuestion[] {
  if (!Array.isArray(raw)) return [];
  return raw.filter(isObj).map((q, i) => {
    const options: AskOption[] = (Array.isArray(q.options) ? q.options : []).filter(isObj).flatMap((o) =>
      typeof o.label === 'string'
        ? [{ label: o.label, ...(typeof o.description === 'string' && o.description ? { description: o.description } : {}), ...(o.recommended === true ? { recommended: true } : {}) }]
        : [],
    );
    const r = options.findIndex((o) => o.recommended);
    if (r > 0) options.unshift(...options.splice(r, 1));
    return {
      id: typeof q.id === 'string' && q.id ? q.id : `q${i + 1}`,
      ...(typeof q.header === 'string' && q.header ? { header: q.header } : {}),
      prompt: typeof q.prompt === 'string' ? q.prompt : '',
      options,
    };
  });
}

function readAnswers(raw: unknown): AskAnswer[] {
  if (!Array.isArray(raw)) return [];
  return raw.filter(isObj).flatMap((a): AskAnswer[] => {
    if (typeof a.questionId !== 'string') return [];
    if (typeof a.selectedLabel === 'string') return [{ questionId: a.questionId, selectedLabel: a.selectedLabel }];
    if (typeof a.custom === 'string') return [{ questionId: a.questionId, custom: a.custom }];
    return [];
  });
}

const readDeadline = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const readOutcome = (v: unknown): AskOutcome | undefined => (v === 'answered' || v === 'cancelled' || v === 'timedOut' ? v : undefined);

/** From the `ask_user_question` event payload (live, or replayed to a reconnecting client). */
export function fromAskEvent(payload: unknown): AskCardData | undefined {
  if (!isObj(payload) || typeof payload.toolCallId !== 'string' || typeof payload.conversationId !== 'string') return undefined;
  return {
    toolCallId: payload.toolCallId,
    conversationId: payload.conversationId,
    questions: readQuestions(payload.questions),
    deadlineAt: readDeadline(payload.deadlineAt),
    ...(typeof payload.maxCustomLength === 'number' ? { maxCustomLength: payload.maxCustomLength } : {}),
  };
}

/** The settlement from an `ask_user_question_settled` payload. */
export function fromSettledEvent(payload: unknown): AskSettled | undefined {
  if (!isObj(payload)) return undefined;
  const outcome = readOutcome(payload.outcome);
  return outcome ? { outcome, answers: readAnswers(payload.answers) } : undefined;
}

/**
 * From a stored tool call and (when settled) its result: the tool_execution_start `args` carry
 * the stamped deadline; a result whose `details.kind` is `ask_user_question` carries the
 * normalized questions and the outcome (history replay).
 */
export function fromToolCall(
  call: { id: string; input: unknown },
  conversationId: string,
  result?: { details?: unknown } | null,
): AskCardData {
  const input = isObj(call.input) ? call.input : {};
  const details = isObj(result?.details) && result!.details.kind === 'ask_user_question' ? result!.details : undefined;
  // A result without AskUserQuestion details (the run was stopped before the question was
  // asked, or the call was refused) still ends the wait: it reads as not answered.
  const outcome: AskOutcome | undefined = details
    ? (readOutcome(details.outcome) ?? (details.answered ? 'answered' : details.timedOut ? 'timedOut' : 'cancelled'))
    : result
      ? 'cancelled'
      : undefined;
  return {
    toolCallId: call.id,
    conversationId,
    questions: readQuestions(details?.questions ?? input.questions),
    deadlineAt: readDeadline(details?.deadlineAt ?? input.__askUserQuestionDeadlineAt),
    ...(outcome ? { settled: { outcome, answers: readAnswers(details?.answers) } } : {}),
  };
}
