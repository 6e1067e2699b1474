/**
 * What crosses AskUserQuestion's boundaries, validated with zod: the model's arguments (with the
 * rules that span questions, and the normalization every client sees), and the plugin's settings.
 */
import { z } from 'zod';

/** The key `prepareArguments` stamps into the arguments: the deadline every client counts down to. */
export const DEADLINE_KEY = '__askUserQuestionDeadlineAt';

export const MAX_QUESTIONS = 4;
export const MIN_OPTIONS = 2;
export const MAX_OPTIONS = 6;
export const MAX_HEADER = 40;
export const MAX_LABEL = 120;

const OptionSchema = z.object({
  label: z.string('an option needs a label (a string)').trim().min(1, 'an option needs a non-empty label').max(MAX_LABEL, `a label has at most ${MAX_LABEL} characters`).describe('The choice as shown to the user: a few words.'),
  description: z.string('a description must be a string').trim().max(500, 'a description has at most 500 characters').optional().describe('One line on what picking it means.'),
  recommended: z.boolean('recommended must be true or false').optional().describe('Mark at most one option per question as the one you recommend; it is shown first and taken if the user does not answer in time.'),
});

const QuestionSchema = z.object({
  id: z
    .string()
    .trim()
    .min(1, 'an id must not be empty')
    .max(64, 'an id has at most 64 characters')
    .regex(/^[A-Za-z0-9_.-]+$/, 'an id uses only letters, digits, _, . and -')
    .optional()
    .describe('Stable id of the question; defaults to its position: q1, q2, ...'),
  header: z.string('a header must be a string').trim().min(1, 'a header must not be empty').max(MAX_HEADER, `a header is a short tab label of at most ${MAX_HEADER} characters`).optional().describe('A very short label (1-3 words) for the question tab.'),
  prompt: z.string('a question needs a prompt (the question text, a string)').trim().min(1, 'a question needs a non-empty prompt').max(4000, 'a prompt has at most 4000 characters').describe('The question, complete and clear.'),
  options: z
    .array(OptionSchema, 'options must be an array of { label, description?, recommended? }')
    .min(MIN_OPTIONS, `a question needs at least ${MIN_OPTIONS} options`)
    .max(MAX_OPTIONS, `a question has at most ${MAX_OPTIONS} options`)
    .describe(`${MIN_OPTIONS}-${MAX_OPTIONS} distinct choices; every question of the call has the same number. Do not add an "Other" option: the user can always type their own answer.`),
});

export interface NormalizedOption {
  label: string;
  description?: string;
  recommended?: true;
}

export interface NormalizedQuestion {
  id: string;
  header?: string;
  prompt: string;
  options: NormalizedOption[];
}

export interface AskArgs {
  questions: NormalizedQuestion[];
  /** Epoch ms; null when the timeout is off. Absent until `prepareArguments` stamps it. */
  [DEADLINE_KEY]?: number | null;
}

/** The arguments: rules that span options and questions, then normalized (ids filled, recommended first). */
export const AskArgsSchema = z
  .object({
    questions: z
      .array(QuestionSchema, 'questions must be an array of { id?, header?, prompt, options }')
      .min(1, 'ask at least one question')
      .max(MAX_QUESTIONS, `ask at most ${MAX_QUESTIONS} questions in one call`),
  })
  .superRefine((args, ctx) => {
    const first = args.questions[0]?.options.length;
    const seenIds = new Map<string, number>();
    args.questions.forEach((q, i) => {
      if (q.options.length !== first) {
        ctx.addIssue({
          code: 'custom',
          path: ['questions', i, 'options'],
          message: `every question in one call must have the same number of options: question 1 has ${first}, question ${i + 1} has ${q.options.length}`,
        });
      }
      const labels = new Map<string, number>();
      q.options.forEach((o, j) => {
        const key = o.label.toLowerCase();
        if (labels.has(key)) {
          ctx.addIssue({ code: 'custom', path: ['questions', i, 'options', j, 'label'], message: `duplicate label "${o.label}" (same as option ${labels.get(key)! + 1}); labels must be unique within a question` });
        } else labels.set(key, j);
      });
      const recommended = q.options.filter((o) => o.recommended).length;
      if (recommended > 1) {
        ctx.addIssue({ code: 'custom', path: ['questions', i, 'options'], message: `at most one option may be recommended; ${recommended} are` });
      }
      const id = q.id ?? `q${i + 1}`;
      if (seenIds.has(id)) {
        ctx.addIssue({
          code: 'custom',
          path: ['questions', i, 'id'],
          message: `duplicate question id "${id}" (question ${seenIds.get(id)! + 1} has it; ids default to q1..qN by position and must be unique)`,
        });
      } else seenIds.set(id, i);
    });
  })
  .transform((args): AskArgs => ({ questions: args.questions.map(normalizeQuestion) }));

function normalizeQuestion(q: z.output<typeof QuestionSchema>, i: number): NormalizedQuestion {
  const options: NormalizedOption[] = q.options.map((o) => ({
    label: o.label,
    ...(o.description ? { description: o.description } : {}),
    ...(o.recommended ? { recommended: true as const } : {}),
  }));
  // The recommended option is always shown (and stored) first, wherever the model put it.
  const r = options.findIndex((o) => o.recommended);
  if (r > 0) options.unshift(...options.splice(r, 1));
  return { id: q.id ?? `q${i + 1}`, ...(q.header ? { header: q.header } : {}), prompt: q.prompt, options };
}

/** The `askUserQuestion` settings section (top-level key). */
export const AskSettingsSchema = z
  .strictObject({
    /** How long a question waits before the recommended option is taken. 0 or null: no timeout. */
    timeoutMs: z.number().int().min(0).max(2_147_483_647, 'timeoutMs is at most 2147483647 (about 24 days); use 0 or null for no timeout').nullable().default(180_000),
    /** Longest typed ("Other") answer accepted. */
    maxCustomLength: z.number().int().min(1).max(100_000).default(2000),
  })
  .prefault({});

export type AskSettings = z.output<typeof AskSettingsSchema>;
