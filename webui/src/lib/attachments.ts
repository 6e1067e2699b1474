/** Turning picked, pasted or dropped files into protocol attachments. */
import type { Attachment } from '../../../plugins/gateway/protocol.js';

export const MAX_ATTACHMENT_BYTES = 10 * 1024 * 1024;
export const MAX_ATTACHMENTS = 20;

const TEXT_EXT = /\.(txt|md|markdown|json|jsonl|ya?ml|toml|ini|cfg|conf|csv|tsv|log|xml|html?|css|scss|less|js|mjs|cjs|jsx|ts|tsx|vue|svelte|py|rb|go|rs|java|kt|swift|c|h|cc|cpp|hpp|cs|php|sh|bash|zsh|sql|graphql|proto|dockerfile|makefile|env|gitignore|diff|patch)$/i;

export interface PendingAttachment extends Attachment {
  /** Object URL for an image preview (revoked on removal). */
  previewUrl?: string;
  size: number;
}

export function isImage(f: { type: string }): boolean {
  return /^image\/(png|jpe?g|gif|webp)$/i.test(f.type);
}

export function isText(f: File): boolean {
  return f.type.startsWith('text/') || /json|xml|javascript|typescript|yaml|toml|x-sh/.test(f.type) || TEXT_EXT.test(f.name) || /^(Dockerfile|Makefile)$/.test(f.name);
}

function base64Of(buf: ArrayBuffer): string {
  const bytes = new Uint8Array(buf);
  let bin = '';
  // Chunked: String.fromCharCode with one huge spread overflows the call stack.
  for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(bin);
}

/** Read a file; throws an Error naming the file when it cannot be attached. */
export async function readAttachment(f: File): Promise<PendingAttachment> {
  if (f.size > MAX_ATTACHMENT_BYTES) throw new Error(`${f.name} is larger than ${MAX_ATTACHMENT_BYTES / 1024 / 1024} MB`);
  if (isImage(f)) {
    return { name: f.name || 'pasted-image.png', mimeType: f.type, data: base64Of(await f.arrayBuffer()), encoding: 'base64', previewUrl: URL.createObjectURL(f), size: f.size };
  }
  if (isText(f)) {
    return { name: f.name, mimeType: f.type || 'text/plain', data: await f.text(), encoding: 'utf8', size: f.size };
  }
  throw new Error(`${f.name}: only images (png, jpeg, gif, webp) and text files can be attached`);
}

export function toWire(a: PendingAttachment): Attachment {
  return { name: a.name, mimeType: a.mimeType, data: a.data, encoding: a.encoding };
}
