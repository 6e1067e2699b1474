/**
 * What the user does to a conversation's runs besides typing a new message: stop, answer a
 * question, decide an approval, edit and resend, retry, regenerate, compact, and steer the
 * queue. Each shows its effect at once and puts everything back when the server refuses.
 */
import type { Ref } from 'vue';
import { client } from '../api/client.js';
import type { AskAnswer } from '../components/ask-user-question/card-model.js';
import type { ApprovalDecision } from '../components/tool-approval/approval-model.js';
import { DRAFT, type ChatConversations, type ChatStates } from './chat-core.js';
import type { RunFields } from './chat-prefs.js';
import { attachmentsOf, compactionNoticeOf, lastUserIndex, pendingMessage, queueAfter, wireAttachments, type QueueAction, type SendInput } from './chat-reducers.js';
import { newId } from './format.js';
import { userText } from './transcript.js';

/** A compaction waits for a summary from the model: give it as long as a slow reply. */
export const COMPACT_TIMEOUT_MS = 10 * 60_000;

export interface RunActionDeps extends Pick<ChatStates, 'state'> {
  conversations: Pick<ChatConversations, 'currentId'>;
  /** The composer's choices, as a message carries them. */
  runFields(): RunFields;
  sentTick: Ref<number>;
}

export function createRunActions({ state, conversations, runFields, sentTick }: RunActionDeps) {
  function stop(id = conversations.currentId): void {
    if (!id) return;
    client().send({ type: 'chat_queue', item: { action: 'stop', conversationId: id } });
  }

  /**
   * Answer a pending AskUserQuestion (`chat_queue.tool_answer`). Rejects with the server's
   * reason when the answer is refused; the question then stays pending.
   */
  async function answerQuestion(conversationId: string, toolCallId: string, answers: AskAnswer[]): Promise<void> {
    await client().request({
      type: 'chat_queue',
      item: { action: 'tool_answer', item_id: toolCallId, request_json: JSON.stringify(answers), conversation_id: conversationId },
    });
  }

  /**
   * Decide a pending tool approval (`chat_queue.tool_approval`). Rejects with the server's reason
   * when the decision is refused; the approval then stays pending.
   */
  async function decideApproval(conversationId: string, toolCallId: string, decision: ApprovalDecision): Promise<void> {
    await client().request({ type: 'chat_queue', item: { action: 'tool_approval', item_id: toolCallId, conversation_id: conversationId, decision } });
  }

  /** Truncate at a user message and send `input` in its place. */
  async function editResend(id: string, messageId: string, input: SendInput): Promise<void> {
    const s = state(id);
    const at = s.messages.findIndex((m) => m.id === messageId);
    const clientRequestId = newId('req');
    const before = s.messages;
    sentTick.value++;
    if (at >= 0) s.messages = s.messages.slice(0, at);
    s.pendingUser = pendingMessage(clientRequestId, input);
    s.error = null;
    s.editedFiles = null;
    try {
      await client().request({
        type: 'chat_queue',
        item: { action: 'edit_resend', conversationId: id, messageId, clientRequestId, text: input.text, ...wireAttachments(input), ...runFields() },
      });
    } catch (err) {
      s.messages = before;
      s.pendingUser = null;
      s.error = { code: 'usage', message: (err as Error).message };
      throw err;
    }
  }

  /** Run the last user message again (after an error). */
  async function retry(id: string): Promise<void> {
    const s = state(id);
    const last = s.messages[lastUserIndex(s.messages)];
    if (!last) return;
    await editResend(id, last.id, { text: userText(last), attachments: attachmentsOf(last) });
  }

  /**
   * Run the last user message again for a new reply (`chat_queue.regenerate`): the server drops
   * the replies after it and resends it. Until the run echoes the message, it shows as pending.
   */
  async function regenerate(id: string): Promise<void> {
    const s = state(id);
    const at = lastUserIndex(s.messages);
    if (at < 0 || s.running) return;
    const last = s.messages[at]!;
    const clientRequestId = newId('req');
    const before = s.messages;
    const pendingId = `pending-${clientRequestId}`;
    sentTick.value++;
    s.messages = s.messages.slice(0, at);
    s.pendingUser = { ...last, id: pendingId, meta: { ...last.meta, pending: true } };
    const { error, editedFiles } = s;
    s.error = null;
    s.editedFiles = null;
    try {
      await client().request({ type: 'chat_queue', item: { action: 'regenerate', conversationId: id, clientRequestId, ...runFields() } });
      // The run started; a server that did not echo the message (it kept the stored one) leaves it pending: put it back.
      if (s.pendingUser?.id === pendingId) {
        s.pendingUser = null;
        if (!s.messages.some((m) => m.id === last.id)) s.messages.splice(at, 0, last);
      }
    } catch (err) {
      // Nothing happened: everything as it was (the caller says why it was refused).
      s.messages = before;
      if (s.pendingUser?.id === pendingId) s.pendingUser = null;
      s.error = error;
      s.editedFiles = editedFiles;
      throw err;
    }
  }

  /**
   * Compact the conversation's context now. Its `compaction` events bring the card and the
   * progress line; a skipped or failed outcome is said in a notice.
   */
  async function compactNow(id: string): Promise<void> {
    const s = state(id);
    if (id === DRAFT || s.running || s.compacting || s.compactRequested) return;
    s.compactRequested = true;
    s.compactionNotice = null;
    try {
      const out = await client().request({ type: 'chat_queue', item: { action: 'compact_now', conversationId: id } }, COMPACT_TIMEOUT_MS);
      const notice = compactionNoticeOf(out);
      if (notice) s.compactionNotice = notice;
    } catch (err) {
      // Its socket went away (the request was freed then): the outcome, if any, shows on the next snapshot.
      const lost = (err as { code?: string }).code === 'timeout' && !s.compactRequested;
      if (!lost) s.compactionNotice = { kind: 'error', text: `Could not compact: ${(err as Error).message}` };
    } finally {
      s.compactRequested = false;
      // Whatever happened, it is over (a missed end event must not leave the spinner on).
      s.compacting = null;
    }
  }

  function dismissCompactionNotice(id: string): void {
    state(id).compactionNotice = null;
  }

  /** Steer the open conversation's queue; the change shows at once (see queueAfter). */
  function queueAction(item: QueueAction): Promise<unknown> {
    const id = conversations.currentId;
    if (!id) return Promise.resolve();
    const s = state(id);
    s.queue = queueAfter(s.queue, item);
    return client().request({ type: 'chat_queue', item: { ...item, conversationId: id } as never });
  }

  return { stop, answerQuestion, decideApproval, editResend, retry, regenerate, compactNow, dismissCompactionNotice, queueAction };
}
