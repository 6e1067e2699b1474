/**
 * History conversion helpers shared by provider plugins: what to do with another provider's
 * thinking, and tool-call ids that must satisfy each provider's rules. Switching provider
 * mid-conversation goes through these, so every provider follows the same policy.
 */
import { createHash } from 'node:crypto';
import type { ContentBlock, Message, ThinkingBlock } from '../../plugin-api.js';

/**
 * Thinking produced by another provider cannot be verified by this one (signatures are
 * provider-bound). Policy: keep it as plain text in a marked block when `asText`, else drop it.
 * Redacted thinking from another provider is always dropped (it has no readable text). A
 * `</thinking` inside the text (quoted from a file or a tool result) is made inert, so it cannot
 * end the marked block early and pass what follows as the assistant's own words.
 */
export function foreignThinking(block: ThinkingBlock, targetProvider: string, asText: boolean): ContentBlock | undefined {
  if (block.provider === targetProvider) return block;
  if (block.redacted || !block.thinking.trim()) return undefined;
  return asText ? { type: 'text', text: `<thinking>\n${block.thinking.replace(/<(\s*\/\s*thinking)(?![\w-])/gi, '&lt;$1')}\n</thinking>` } : undefined;
}

/** A tool-call id matching `^[A-Za-z0-9_-]{1,maxLen}$`, stable for the same input. */
export function normalizeToolCallId(id: string, maxLen = 64): string {
  const clean = id.replace(/[^A-Za-z0-9_-]/g, '_');
  if (clean.length > 0 && clean.length <= maxLen && clean === id) return id;
  const hash = createHash('sha256').update(id).digest('hex').slice(0, 12);
  return `${clean.slice(0, Math.max(1, maxLen - 13))}_${hash}`.slice(0, maxLen);
}

/** Map every tool-call id in the history (calls and their results) through `normalize`. */
export function mapToolCallIds(messages: Message[], normalize: (id: string) => string): Message[] {
  return messages.map((m) => ({
    ...m,
    content: m.content.map((b) => {
      if (b.type === 'tool_call') return { ...b, id: normalize(b.id) };
      if (b.type === 'tool_result') return { ...b, toolCallId: normalize(b.toolCallId) };
      return b;
    }),
  }));
}

/** Parse streamed tool-call JSON; an empty string is `{}`; non-objects are wrapped. */
export function parseToolInput(json: string): { ok: true; value: Record<string, unknown> } | { ok: false; error: string } {
  if (!json.trim()) return { ok: true, value: {} };
  try {
    const v = JSON.parse(json);
    return { ok: true, value: v && typeof v === 'object' && !Array.isArray(v) ? v : { value: v } };
  } catch (err) {
    return { ok: false, error: (err as Error).message };
  }
}

/** The text of a tool result's content, for providers that take a string. */
export function toolResultText(content: Array<{ type: string; text?: string }>): string {
  return content
    .filter((c) => c.type === 'text')
    .map((c) => c.text ?? '')
    .join('\n');
}
