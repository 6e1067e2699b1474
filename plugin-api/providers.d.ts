// ────────────────────────────────────────────────────────────────────────────────────────────
// Providers
// ────────────────────────────────────────────────────────────────────────────────────────────

import type { JsonObject } from './basics.js';
import type { ContentBlock, Message, StopReason, Usage } from './content.js';
import type { Plugin } from './plugins.js';
import type { RuntimeApi } from './runtime.js';
import type { Settings } from './settings.js';
import type { ToolSpec } from './tools.js';

/** Facts about a model (catalog entry). */
export interface ModelInfo {
  id: string;
  name?: string;
  contextWindow?: number;
  maxOutputTokens?: number;
  thinking?: boolean;
  cache?: boolean;
  /** USD per million tokens. */
  price?: { input?: number; output?: number; cacheRead?: number; cacheWrite?: number };
}

/** A model's facts as the kernel uses them ({@link RuntimeApi.modelInfo}): defaults filled in. */
export interface ModelFacts extends ModelInfo {
  /** Tokens the model reads, prompt and reply together (default 128,000). */
  contextWindow: number;
  /** The most output tokens one reply may ask for (default 8,192). */
  maxOutputTokens: number;
  /** Whether it takes a thinking budget (default false). */
  thinking: boolean;
  /** Whether it supports prompt-cache breakpoints (default false). */
  cache: boolean;
  /** False when the model is unknown and safe defaults (128k context, 8k output) stand in. */
  known: boolean;
}

/** A system prompt part. Parts are joined in order; `cache` marks a cache breakpoint after it. */
export interface SystemPart {
  /** Who added it, e.g. `base`, `user-settings`, `tool-rules`. */
  id: string;
  text: string;
  cache?: boolean;
}

/** A normalized request, built by the session's request hooks. */
export interface ProviderRequest {
  model: string;
  system: SystemPart[];
  messages: Message[];
  tools: ToolSpec[];
  toolChoice?: 'auto' | 'any' | 'none' | { name: string };
  maxOutputTokens?: number;
  /** Thinking budget in tokens (0 or absent: provider default). */
  thinkingBudget?: number;
  /** Provider-specific options merged from settings and the request. */
  options: JsonObject;
  conversationId: string;
  /**
   * A short side request (a title, a memory extraction): whatever the settings say, the provider
   * sends no thinking (the least reasoning the model allows), no hosted web search, no prompt-cache
   * breakpoints, and stores nothing server-side (no Responses storage or chaining).
   */
  lean?: boolean;
}

/**
 * What a provider stream yields. Block events carry the index of the block within the
 * assistant message. Contract: providers never throw mid-stream; they end with `done` or `error`.
 */
export type ProviderEvent =
  | { type: 'block_start'; index: number; block: { type: 'text' } | { type: 'thinking' } | { type: 'tool_call'; id: string; name: string } }
  | { type: 'text_delta'; index: number; text: string }
  | { type: 'thinking_delta'; index: number; text: string }
  | { type: 'tool_input_delta'; index: number; json: string }
  /** The block's final form (signature, parsed input, citations). */
  | { type: 'block_end'; index: number; block: ContentBlock }
  | { type: 'usage'; usage: Usage }
  | { type: 'done'; stopReason: StopReason; responseId?: string }
  | { type: 'error'; error: ProviderErrorInfo }
  /**
   * Something the user should know that is not an error (an endpoint without the Responses API
   * fell back to Chat Completions, a paused reply was continued): the kernel emits it as a
   * `notice` lifecycle event (`payload.kind`, default `provider`; `payload.provider`).
   */
  | { type: 'notice'; message: string; kind?: string; details?: JsonObject }
  /**
   * The body the provider is about to send, after its own conversion (cache breakpoints, tool
   * schemas, limits), once per HTTP request: for observers such as the debug log. Not output,
   * never forwarded to clients. `api` names the endpoint (`messages`, `responses`, ...).
   * @experimental Its shape is each provider's wire format; a `providerEvent` tap sees it only
   * when its plugin lists `wire_request` in {@link Plugin.experimental}.
   */
  | { type: 'wire_request'; api: string; body: JsonObject };

/** A provider failure. `retryable` tells the kernel whether a retry can help. */
export interface ProviderErrorInfo {
  message: string;
  /** HTTP status when there was one. */
  status?: number;
  /**
   * e.g. `overloaded`, `rate_limited`, `auth`, `bad_request`, `network`, `stream`, `timeout`, and
   * `context_overflow` when the prompt does not fit the model's context window (the kernel then
   * compacts and retries once).
   */
  code: string;
  retryable: boolean;
  /** Milliseconds the server asked us to wait. */
  retryAfterMs?: number;
}

/** What `Provider.stream` returns: the events of one round, with an optional push path. */
export interface ProviderStream extends AsyncIterable<ProviderEvent> {
  /**
   * Optional push path. When present the kernel calls it instead of iterating: the provider hands
   * each event to `sink` synchronously as it is translated, which saves the promise hops of an
   * async iterator on every delta. Contract: stop and release the request as soon as `sink`
   * returns true (as `return()` on the iterator would); resolve once the stream ended, failed
   * (after delivering its `error` event) or was stopped; never reject. The kernel uses one of the
   * two paths per stream, never both.
   */
  forEachEvent?(sink: (event: ProviderEvent) => boolean | void): Promise<void>;
}

/** A model provider. */
export interface Provider {
  /** e.g. `claude_code`. */
  id: string;
  aliases?: string[];
  displayName: string;
  /** The model used when none is chosen. */
  defaultModel: string;
  models?: ModelInfo[];
  /** True when the provider has what it needs (a key, or an endpoint that needs none). */
  isConfigured(settings: Settings): boolean;
  /**
   * Stream one model round. Must honour `signal` and never throw: failures are `error` events.
   * Any `AsyncIterable<ProviderEvent>` will do; see {@link ProviderStream} for the optional push path.
   */
  stream(request: ProviderRequest, signal: AbortSignal): ProviderStream;
  /**
   * Optional: start loading what the first request needs (the SDK) and return at once. The
   * kernel calls it as a run starts, so the import overlaps loading the history instead of
   * following it. Contract: must not throw or block; a failed load surfaces in `stream`.
   */
  prepare?(): void;
}
