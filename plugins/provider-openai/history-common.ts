/**
 * Pieces both OpenAI request builders share: system text, images as data URLs, tool results as
 * text, and the foreign-thinking rule.
 *
 * Thinking rule: our own reasoning goes back only where the API can verify it (a Responses
 * reasoning item with its encrypted content); another provider's thinking is dropped by default
 * (`foreignThinking: 'drop'`), or sent as `<thinking>` text in the assistant turn with
 * `foreignThinking: 'text'` (provider-shared/history.ts `foreignThinking`). Redacted thinking
 * never travels.
 */
import type { ContentBlock, DocumentBlock, ImageBlock, SystemPart, ThinkingBlock, ToolResultBlock } from '../../plugin-api.js';
import { attachmentReference, documentFallback } from '../../lib/provider-shared/attachments.js';
import { foreignThinking, toolResultText } from '../../lib/provider-shared/history.js';

export function systemText(parts: SystemPart[]): string {
  return parts
    .map((p) => p.text.trim())
    .filter(Boolean)
    .join('\n\n');
}

/** `data:` URL of an inline image, or undefined when only its path is left. */
export function imageUrl(img: ImageBlock): string | undefined {
  return img.data ? `data:${img.mimeType};base64,${img.data}` : undefined;
}

/** What the model reads instead of an image whose bytes were dropped from old history. */
export function imagePlaceholder(img: ImageBlock): string {
  return `[image${img.path ? ` ${img.path}` : ''} (${img.mimeType}) is no longer attached]`;
}

/** A tool result's text as the model should read it (errors marked, never empty). */
export function resultText(r: ToolResultBlock): string {
  const text = toolResultText(r.content);
  const body = text || (r.content.some((c) => c.type === 'image') ? '(image output below)' : '(no output)');
  return r.isError ? `Error: ${body}` : body;
}

/** Another provider's thinking, per the rule above: text to send, or nothing. */
export function foreignThinkingText(block: ThinkingBlock, providerId: string, mode: 'drop' | 'text'): string | undefined {
  const b: ContentBlock | undefined = foreignThinking(block, providerId, mode === 'text');
  return b && b.type === 'text' ? b.text : undefined;
}

/**
 * A document both APIs take natively (a PDF with its bytes, on OpenAI's own endpoints), as its
 * file name and `data:` URL; undefined when it must go as text ({@link documentText}).
 */
export function documentFile(d: DocumentBlock, native: boolean): { filename: string; fileData: string } | undefined {
  if (!native || !d.data || d.mimeType !== 'application/pdf') return undefined;
  const filename = d.name?.trim() || 'document.pdf';
  return { filename, fileData: `data:${d.mimeType};base64,${d.data}` };
}

/** A document as text: its extracted text, else a line saying where it is. */
export function documentText(d: DocumentBlock): string {
  return documentFallback(d).text;
}

/** The text a user block stands for when it is not an image or a file part (text, an unexpanded attachment), or undefined. */
export function userText(c: ContentBlock): string | undefined {
  if (c.type === 'text') return c.text || undefined;
  if (c.type === 'attachment') return attachmentReference(c);
  return undefined;
}
