/**
 * AskUserQuestion in the conversation state, free of Vue: the `ask_user_question` and
 * `ask_user_question_settled` events folded into one record per tool call, and which card a
 * tool call shows (live from the event, from the stamped arguments of tool_execution_start, or
 * settled from its result, which is also how history replays it).
 */
import type { JsonObject, ToolCallBlock, ToolResultBlock } from '../../../plugin-api.js';
import { fromAskEvent, fromSettledEvent, fromToolCall, type AskCardData, type AskSettled } from '../components/ask-user-question/card-model.js';

/** What the events said about one question set; either part may be missing (a late subscriber). */
export interface AskRecord {
  card?: AskCardData;
  settled?: AskSettled;
}

const DEADLINE_KEY = '__askUserQuestionDeadlineAt';

/** Fold an `ask_user_question` / `ask_user_question_settled` payload into the records. */
export function applyAskEvent(asks: Record<string, AskRecord>, type: 'ask_user_question' | 'ask_user_question_settled', payload: JsonObject): void {
  const id = typeof payload.toolCallId === 'string' ? payload.toolCallId : undefined;
  if (!id) return;
  const rec = asks[id] ?? (asks[id] = {});
  if (type === 'ask_user_question') {
    const card = fromAskEvent(payload);
    if (card) rec.card = card;
  } else {
    const settled = fromSettledEvent(payload);
    if (settled) rec.settled = settled;
  }
}

function isAskDetails(details: unknown): boolean {
  return !!details && typeof details === 'object' && (details as { kind?: unknown }).kind === 'ask_user_question';
}

export interface AskCallState {
  /** The records of the conversation's events. */
  ask?: AskRecord;
  /** The call's result, live (tool_execution_end) or stored. */
  result?: ToolResultBlock;
  /** tool_execution_start was seen (the arguments carry the stamped deadline). */
  started: boolean;
  /** The conversation has an active run. */
  running: boolean;
}

/**
 * The card for an AskUserQuestion call, or null while it is not asked yet (its arguments are
 * still being generated, or it waits for earlier calls of the round). A result settles it; so
 * does the run ending without one (nobody answered).
 */
export function askCardFor(call: ToolCallBlock, conversationId: string, o: AskCallState): AskCardData | null {
  const ask = o.ask;
  if (o.result) {
    const fromResult = fromToolCall(call, conversationId, o.result);
    // A result without the tool's details (invalid arguments, stopped before it asked) says
    // only how it ended; the event still has the questions and the deadline.
    if (!isAskDetails(o.result.details) && ask?.card) return { ...ask.card, settled: ask.settled ?? fromResult.settled };
    return fromResult;
  }
  if (ask?.card) return ask.settled ? { ...ask.card, settled: ask.settled } : ask.card;
  if (ask?.settled) return { ...fromToolCall(call, conversationId), settled: ask.settled };
  if (!o.running) return fromToolCall(call, conversationId, {});
  if (o.started && DEADLINE_KEY in call.input) return fromToolCall(call, conversationId);
  return null;
}
