/**
 * A sent message (text + attachments) becomes the user message's content blocks: images become
 * image blocks (base64), text files a text block carrying the file name and content. Anything
 * else is refused with a message naming the file.
 *
 * The `<file name="…">` wrapper is the only thing telling the model where a file starts and
 * ends, and both the name and the content come from the user (or whoever sent them the file).
 * The name is XML-attribute-escaped in full (`& < > " '`, control characters, newlines and
 * bidirectional overrides as character references), so it can neither close the tag nor fake a
 * line; in the content only a closing `</file` is neutralized (as `&lt;/file`), so code keeps its
 * `<` and `&` and reads as written while no file can end the wrapper early.
 */
import { escapeAttribute, neutralizeClosingTag } from '../../core/define-plugin.js';
import type { ContentBlock } from '../../plugin-api.js';
import type { Attachment } from './protocol.js';

const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);
const TEXT_TYPES = /^(text\/|application\/(json|xml|javascript|typescript|x-yaml|yaml|toml|x-sh|sql|graphql|x-ndjson)|image\/svg\+xml)/i;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

export class AttachmentError extends Error {}

export { escapeAttribute, neutralizeClosingTag };

/** The wrapper the model sees around an attached text file. */
export function fileWrapper(name: string, content: string): string {
  return `<file name="${escapeAttribute(name)}">\n${neutralizeClosingTag(content, 'file')}\n</file>`;
}

export function toInputBlocks(text: string, attachments: Attachment[] = []): ContentBlock[] {
  const blocks: ContentBlock[] = [];
  if (text.trim()) blocks.push({ type: 'text', text });
  for (const a of attachments) blocks.push(toBlock(a));
  if (blocks.length === 0) throw new AttachmentError('message is empty: give text or at least one attachment');
  return blocks;
}

function toBlock(a: Attachment): ContentBlock {
  const mime = a.mimeType.toLowerCase().split(';')[0]!.trim();
  if (IMAGE_TYPES.has(mime)) {
    if (a.encoding !== 'base64' || !BASE64.test(a.data)) throw new AttachmentError(`attachment "${a.name}": image data must be base64`);
    return { type: 'image', mimeType: mime, data: a.data };
  }
  if (mime.startsWith('image/')) throw new AttachmentError(`attachment "${a.name}": unsupported image type ${mime} (use PNG, JPEG, GIF or WebP)`);
  let content: string;
  if (a.encoding === 'utf8') content = a.data;
  else {
    if (!BASE64.test(a.data)) throw new AttachmentError(`attachment "${a.name}": data is not valid base64`);
    content = Buffer.from(a.data, 'base64').toString('utf8');
  }
  // Unknown types pass when the bytes are plainly text; binary files (NUL bytes, invalid UTF-8) do not.
  if (!TEXT_TYPES.test(mime) && (content.includes('\0') || content.includes('\uFFFD'))) {
    throw new AttachmentError(`attachment "${a.name}": ${mime} is not a text file or a supported image`);
  }
  if (content.includes('\0')) throw new AttachmentError(`attachment "${a.name}": the file contains binary data`);
  return { type: 'text', text: fileWrapper(a.name, content) };
}
