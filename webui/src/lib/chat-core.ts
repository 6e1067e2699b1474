/**
 * What the chat store's parts share: the draft's key and the narrow view of the conversations
 * store they use. The parts take these as arguments rather than importing the stores, so a
 * store never imports a module that imports it back, and a test can drive a part with a stub.
 */
import type { ConversationSummary } from '../../../lib/gateway-protocol/protocol.js';
import type { ConversationState } from './conversation-state.js';

/** Key of the state shown before the first message creates a conversation. */
export const DRAFT = '__draft__';

/** The parts of the conversations store the chat uses. */
export interface ChatConversations {
  readonly currentId: string | null;
  readonly items: ConversationSummary[];
  notice: string | null;
  upsert(summary: ConversationSummary): void;
  setRunning(id: string, running: boolean): void;
  open(id: string | null): void;
}

/** The per-conversation states (a reactive record) and the accessor that creates one on first use. */
export interface ChatStates {
  readonly states: Record<string, ConversationState>;
  state(id: string): ConversationState;
}
