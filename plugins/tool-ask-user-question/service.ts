/**
 * The `askUserQuestion` service: how any client (desktop, gateway for the WebUI, the CLI)
 * answers a pending question, lists the pending ones, or cancels a conversation's.
 */
import { z } from 'zod';
import { AnswerError, type Answer } from './answers.js';
import type { PendingQuestion, PendingQuestions } from './pending.js';

export type { Answer } from './answers.js';
export type { Outcome, PendingQuestion } from './pending.js';
export type { NormalizedOption, NormalizedQuestion } from './schema.js';
export { AnswerError } from './answers.js';

/** The key the service is provided under. */
export const ASK_USER_QUESTION_SERVICE = 'askUserQuestion';

/** What a client sends to answer a question. */
export interface AnswerRequest {
  /** The AskUserQuestion tool call id (the gateway's `item_id`). */
  toolCallId: string;
  /** The conversation the question belongs to; any other is refused. */
  conversationId: string;
  /** JSON-encoded array: `[{ "questionId": "q1", "selectedLabel": "..." }]` or `[{ "questionId": "q1", "custom": "..." }]`. */
  requestJson: string;
}

/** What an accepted answer settled. */
export interface AnswerReceipt {
  toolCallId: string;
  conversationId: string;
  outcome: 'answered';
  /** The answers, in question order (typed answers trimmed). */
  answers: Answer[];
}

export interface AskUserQuestionService {
  /**
   * Settle a pending question with the user's answers. Throws an {@link AnswerError} (with a
   * `code`: not_found, conflict, forbidden, bad_request) whose message says what is wrong; a
   * refused answer leaves the question pending.
   */
  answer(request: AnswerRequest): AnswerReceipt;
  /** The pending questions, oldest first (one conversation's when given). */
  pending(conversationId?: string): PendingQuestion[];
  /** Cancel a conversation's pending questions (e.g. it was deleted). Returns how many. */
  cancelConversation(conversationId: string): number;
}

const AnswerRequestSchema = z.object({
  toolCallId: z.string('toolCallId must be a string').min(1, 'toolCallId must not be empty'),
  conversationId: z.string('conversationId must be a string').min(1, 'conversationId must not be empty'),
  requestJson: z.string('requestJson must be a JSON-encoded string'),
});

export function createService(table: PendingQuestions): AskUserQuestionService {
  return {
    answer(request) {
      const r = AnswerRequestSchema.safeParse(request);
      if (!r.success) {
        const i = r.error.issues[0]!;
        throw new AnswerError('bad_request', i.path.length ? `${i.path.join('.')}: ${i.message}` : `answer: ${i.message}`);
      }
      const answers = table.answer(r.data.toolCallId, r.data.conversationId, r.data.requestJson);
      return { toolCallId: r.data.toolCallId, conversationId: r.data.conversationId, outcome: 'answered', answers };
    },
    pending: (conversationId) => table.list(conversationId),
    cancelConversation: (conversationId) => table.cancelConversation(conversationId),
  };
}
