// ────────────────────────────────────────────────────────────────────────────────────────────
// Content: messages and their blocks, as stored in history and sent to providers
// ────────────────────────────────────────────────────────────────────────────────────────────

import type { JsonObject } from './basics.js';
import type { ModelInfo } from './providers.js';

/** Plain text. `citations` carries anchors into hosted-search sources, when the provider gives them. */
export interface TextBlock {
  type: 'text';
  text: string;
  citations?: Citation[];
  /**
   * An opaque signature the provider put on this very text (Gemini's `thoughtSignature` on a
   * text part). Contract: the provider that produced the message (`Message.provider`) sends it
   * back unchanged on the same text; every other provider ignores it.
   */
  signature?: string;
}

/**
 * Model reasoning. `signature` (Anthropic) or `providerData` must be sent back unchanged for the
 * round trip. `redacted` thinking has no readable text: its opaque payload is in `data`.
 * Contract: the kernel never sends a thinking block to a provider other than `provider`.
 */
export interface ThinkingBlock {
  type: 'thinking';
  thinking: string;
  signature?: string;
  redacted?: boolean;
  data?: string;
  /** The provider id that produced it. */
  provider?: string;
  providerData?: JsonObject;
}

/** A tool call the model made. `input` is the parsed JSON arguments. */
export interface ToolCallBlock {
  type: 'tool_call';
  id: string;
  name: string;
  input: JsonObject;
  /** Provider-specific data that must survive the round trip (e.g. a Gemini thought signature). */
  providerData?: JsonObject;
}

/** An image, inline (base64) or by reference to a local file. */
export interface ImageBlock {
  type: 'image';
  mimeType: string;
  /** Base64 data. May be dropped from old history by context policy; `path` then remains. */
  data?: string;
  path?: string;
}

/**
 * A file the user attached, as history stores it: a reference to the staged copy under
 * `RuntimePaths.uploads`, never its bytes. The uploads plugin expands it for each request (a
 * reference text naming the path, plus the file in the provider's native form where there is
 * one: an {@link ImageBlock}, a {@link DocumentBlock}, or the text of a text file).
 * Contract: a provider that meets one unexpanded sends a reference text naming `name`, `path`,
 * `mediaType` and `size`.
 */
export interface AttachmentBlock {
  /** Discriminant. */
  type: 'attachment';
  /** The upload's id (the WebUI fetches `GET /api/uploads/<uploadId>` to preview it). */
  uploadId: string;
  /** The file name the user gave (display only; the stored file has a sanitized name). */
  name: string;
  /** Absolute path of the stored file (read-only for tools). */
  path: string;
  /** Media type sniffed from the bytes (else from the name). */
  mediaType: string;
  /** Size in bytes. */
  size: number;
}

/**
 * A document for the model (a PDF), inline. Providers with native documents send `data`;
 * the others send `text` (extracted text), and without either a reference to `path`.
 */
export interface DocumentBlock {
  /** Discriminant. */
  type: 'document';
  /** e.g. `application/pdf`. */
  mimeType: string;
  /** The file name, for providers that label documents. */
  name?: string;
  /** Absolute path of the file, when it is one. */
  path?: string;
  /** Base64 data. Absent when a limit or context policy left it out. */
  data?: string;
  /** Extracted text, for providers without native documents. */
  text?: string;
  /** Page count, when known (providers cap pages per request). */
  pages?: number;
}

/** A hosted (server-side) web search and its sources, as run by the provider. */
export interface HostedSearchBlock {
  type: 'hosted_search';
  provider: string;
  id?: string;
  queries: string[];
  sources: SearchSource[];
  status: 'completed' | 'failed';
  /** Opaque provider payload that must be sent back for the round trip (e.g. encrypted content). */
  providerData?: JsonObject;
}

/** One source of a hosted search. */
export interface SearchSource {
  title: string;
  url: string;
  snippet?: string;
}

/** A citation anchor inside a text block. */
export interface Citation {
  url: string;
  title?: string;
  citedText?: string;
}

/** Content a tool result may hold. */
export type ToolResultContent = TextBlock | ImageBlock;

/** The result of one tool call, in a `tool` message. */
export interface ToolResultBlock {
  type: 'tool_result';
  toolCallId: string;
  toolName: string;
  content: ToolResultContent[];
  isError: boolean;
  /** Structured data for the UI and history replay (e.g. `{ kind: 'ask_user_question', ... }`). Never sent to the model. */
  details?: JsonObject;
}

/** Every content block. */
export type ContentBlock = TextBlock | ThinkingBlock | ToolCallBlock | ImageBlock | AttachmentBlock | DocumentBlock | HostedSearchBlock | ToolResultBlock;

/** Token usage for one model round. */
export interface Usage {
  /** Input tokens not read from a prompt cache (cache reads and writes are counted apart). */
  inputTokens: number;
  /** Output tokens, reasoning included. */
  outputTokens: number;
  cacheReadTokens?: number;
  cacheWriteTokens?: number;
  reasoningTokens?: number;
  /**
   * What these tokens cost in USD at the model's prices ({@link ModelInfo.price}), set by the
   * kernel on each round's usage (`message_end`, `turn_end`, the stored message) when the model
   * has input and output prices; on `agent_end` and in sums, the cost of the priced rounds.
   */
  costUsd?: number;
}

/** Why a model round stopped. */
export type StopReason = 'end' | 'tool_use' | 'max_tokens' | 'refusal' | 'aborted' | 'error';

/** A message in a conversation. Tool results of one round travel in one `tool` message. */
export interface Message {
  id: string;
  role: 'user' | 'assistant' | 'tool';
  content: ContentBlock[];
  createdAt: number;
  /** Assistant only: who produced it. */
  provider?: string;
  model?: string;
  stopReason?: StopReason;
  usage?: Usage;
  /** Assistant only: error text when the round failed. */
  errorMessage?: string;
  /** Assistant only: files changed by successful Write / Edit / Delete results of this reply. */
  editedFiles?: EditedFile[];
  /** Free-form metadata for plugins (never sent to the model). */
  meta?: JsonObject;
}

/** One entry of the edited-files ledger. */
export interface EditedFile {
  path: string;
  action: 'write' | 'edit' | 'delete';
}
