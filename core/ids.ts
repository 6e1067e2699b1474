import { randomBytes, randomUUID } from 'node:crypto';

/** Conversation ids: sortable by creation time, url-safe. */
export function newConversationId(): string {
  return `c_${Date.now().toString(36)}${randomBytes(5).toString('hex')}`;
}

export function newMessageId(): string {
  return `m_${Date.now().toString(36)}${randomBytes(5).toString('hex')}`;
}

export function newRunId(): string {
  return `r_${randomUUID()}`;
}

/** Ids that came from outside (CLI flags, gateway messages) must look like ours before they touch storage. */
export const CONVERSATION_ID_PATTERN = /^[A-Za-z0-9_-]{1,128}$/;
