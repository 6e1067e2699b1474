import { randomUUID } from 'node:crypto';

/**
 * 40 random bits as 10 hex digits: the random digits of a v4 UUID (all of its first 8, then 2
 * more; the version digit sits at 14). Not randomBytes(5): Node serves randomUUID from a
 * cached entropy pool, while randomBytes asks OpenSSL on every call, which measured tens of
 * microseconds per id on the tool loop's hot path.
 */
function random40(): string {
  const u = randomUUID();
  return u.slice(0, 8) + u.slice(9, 11);
}

/** Conversation ids: sortable by creation time, url-safe. */
export function newConversationId(): string {
  return `c_${Date.now().toString(36)}${random40()}`;
}

export function newMessageId(): string {
  return `m_${Date.now().toString(36)}${random40()}`;
}

export function newRunId(): string {
  return `r_${randomUUID()}`;
}

/** Ids that came from outside (CLI flags, gateway messages) must look like ours before they touch storage. */
export const CONVERSATION_ID_PATTERN = /^[A-Za-z0-9_-]{1,128}$/;
