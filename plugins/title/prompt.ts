/**
 * The title request: the first exchange of a conversation (the user's first message and the
 * start of the reply, both truncated) and instructions for a short title in the user's language.
 */
import type { ContentBlock, Message, SystemPart } from '../../plugin-api.js';

/** Characters of the user's first message the model sees. */
export const USER_CHARS = 1200;
/** Characters of the reply the model sees. */
export const REPLY_CHARS = 600;

export const SYSTEM_TEXT =
  "You name chat conversations. Reply with the title and nothing else: at most 50 characters, in the same language as the user's message, " +
  'no quotes, no trailing punctuation, no prefix such as "Title:", no explanation.';
export const LEAD_TEXT = 'Write a short title for the conversation that starts like this.';

export interface Exchange {
  /** Text of the user's first message. */
  user: string;
  /** Text of the reply to it (may be empty: a reply that only called tools). */
  reply: string;
}

const textOf = (content: ContentBlock[]) =>
  content
    .map((b) => (b.type === 'text' ? b.text : ''))
    .join('\n')
    .trim();

/** The first user message with text, and the assistant text that answers it (up to the next user message). */
export function firstExchange(messages: Array<Message & { status?: string }>): Exchange | undefined {
  const at = messages.findIndex((m) => m.role === 'user' && !m.meta?.synthetic && textOf(m.content));
  if (at < 0) return undefined;
  const reply: string[] = [];
  for (const m of messages.slice(at + 1)) {
    if (m.role === 'user') break;
    if (m.role === 'assistant' && m.status !== 'partial') reply.push(textOf(m.content));
  }
  return { user: textOf(messages[at]!.content), reply: reply.filter(Boolean).join('\n') };
}

function cut(s: string, max: number): string {
  const cps = Array.from(s);
  return cps.length <= max ? s : `${cps.slice(0, max).join('')}…`;
}

/** The request's system part and its one user message. */
export function titleRequest(ex: Exchange): { system: SystemPart[]; messages: Message[] } {
  const parts = [LEAD_TEXT, '', '<user_message>', cut(ex.user, USER_CHARS), '</user_message>'];
  if (ex.reply) parts.push('', '<assistant_reply_start>', cut(ex.reply, REPLY_CHARS), '</assistant_reply_start>');
  return {
    system: [{ id: 'title', text: SYSTEM_TEXT }],
    messages: [{ id: 'title-request', role: 'user', content: [{ type: 'text', text: parts.join('\n') }], createdAt: Date.now() }],
  };
}
