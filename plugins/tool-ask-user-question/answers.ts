/**
 * Answers: the `request_json` a client sends (a JSON-encoded array, one entry per question),
 * checked against the pending question's options, and the defaults a timeout takes.
 */
import { z } from 'zod';
import type { NormalizedQuestion } from './schema.js';

/** One question's answer: a listed option, or the user's own typed text ("Other"). */
export type Answer = { questionId: string; selectedLabel: string } | { questionId: string; custom: string };

const EntrySchema = z
  .object({
    questionId: z.string('questionId must be a string'),
    selectedLabel: z.string('selectedLabel must be a string').optional(),
    custom: z.string('custom must be a string').optional(),
  })
  .strict();

const AnswersSchema = z.array(EntrySchema, 'request_json must encode an array of { questionId, selectedLabel } or { questionId, custom }');

/** Why an answer was refused, with a code the gateway passes on as its reply code. */
export class AnswerError extends Error {
  constructor(
    readonly code: 'bad_request' | 'not_found' | 'conflict' | 'forbidden',
    message: string,
  ) {
    super(message);
    this.name = 'AnswerError';
  }
}

/**
 * Parse and check answers for `questions`. Returns them in question order. Throws AnswerError
 * (bad_request) naming the first problem.
 */
export function parseAnswers(requestJson: unknown, questions: NormalizedQuestion[], maxCustomLength: number): Answer[] {
  if (typeof requestJson !== 'string') throw new AnswerError('bad_request', 'request_json must be a JSON-encoded string');
  let raw: unknown;
  try {
    raw = JSON.parse(requestJson);
  } catch (err) {
    throw new AnswerError('bad_request', `request_json is not valid JSON: ${(err as Error).message}`);
  }
  const parsed = AnswersSchema.safeParse(raw);
  if (!parsed.success) {
    const i = parsed.error.issues[0]!;
    const where = 'request_json' + i.path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`)).join('');
    throw new AnswerError('bad_request', `${where}: ${i.message}`);
  }
  const byId = new Map(questions.map((q) => [q.id, q]));
  const got = new Map<string, Answer>();
  parsed.data.forEach((entry, i) => {
    const at = `request_json[${i}]`;
    const q = byId.get(entry.questionId);
    if (!q) throw new AnswerError('bad_request', `${at}: unknown questionId "${entry.questionId}" (the questions are ${questions.map((x) => `"${x.id}"`).join(', ')})`);
    if (got.has(q.id)) throw new AnswerError('bad_request', `${at}: question "${q.id}" is answered twice`);
    const hasLabel = entry.selectedLabel !== undefined;
    const hasCustom = entry.custom !== undefined;
    if (hasLabel === hasCustom) throw new AnswerError('bad_request', `${at}: give exactly one of selectedLabel or custom for question "${q.id}"`);
    if (hasLabel) {
      const option = q.options.find((o) => o.label === entry.selectedLabel);
      if (!option) {
        throw new AnswerError('bad_request', `${at}: "${entry.selectedLabel}" is not an option of question "${q.id}" (the options are ${q.options.map((o) => `"${o.label}"`).join(', ')})`);
      }
      got.set(q.id, { questionId: q.id, selectedLabel: option.label });
    } else {
      const text = entry.custom!.trim();
      if (!text) throw new AnswerError('bad_request', `${at}: the typed answer for question "${q.id}" is empty`);
      if (text.length > maxCustomLength) {
        throw new AnswerError('bad_request', `${at}: the typed answer for question "${q.id}" has ${text.length} characters; at most ${maxCustomLength} are accepted`);
      }
      got.set(q.id, { questionId: q.id, custom: text });
    }
  });
  const missing = questions.filter((q) => !got.has(q.id));
  if (missing.length) throw new AnswerError('bad_request', `request_json: no answer for question ${missing.map((q) => `"${q.id}"`).join(', ')}; answer every question`);
  return questions.map((q) => got.get(q.id)!);
}

/** What a timeout takes: each question's recommended option (the first, when none is marked). */
export function defaultAnswers(questions: NormalizedQuestion[]): Answer[] {
  return questions.map((q) => ({ questionId: q.id, selectedLabel: (q.options.find((o) => o.recommended) ?? q.options[0]!).label }));
}
