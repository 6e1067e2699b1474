/**
 * A sent message (text + attachments) becomes the user message's content blocks. With the
 * uploads plugin loaded, every attachment is a staged upload: `{ uploadId }` items name one, and
 * inline items are staged first (stageAttachments), so history and queues hold attachment blocks
 * (references), never bytes. Without it, the legacy inline form stays as it was: images become
 * image blocks (base64), text files a text block carrying the file name and content, anything
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
import type { AttachmentBlock, ContentBlock, ExecutionMode, UploadsService } from '../../plugin-api.js';
import { fileWrapper } from '../../lib/provider-shared/attachments.js';
import type { Attachment, AttachmentItem } from '../../lib/gateway-protocol/protocol.js';

const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);
const TEXT_TYPES = /^(text\/|application\/(json|xml|javascript|typescript|x-yaml|yaml|toml|x-sh|sql|graphql|x-ndjson)|image\/svg\+xml)/i;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** A refused attachment; `code` is the reply's (`bad_request`, `not_found` for an unknown upload, `too_large`). */
export class AttachmentError extends Error {
  constructor(
    message: string,
    readonly code = 'bad_request',
  ) {
    super(message);
  }
}

export { escapeAttribute, fileWrapper, neutralizeClosingTag };

/** What the gateway needs of the uploads service. */
export type UploadsLike = Pick<UploadsService, 'block' | 'stageBytes' | 'checkMessage'>;

function fromUploads<T>(f: () => T): T {
  try {
    return f();
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    throw new AttachmentError((err as Error).message, typeof code === 'string' ? code : 'bad_request');
  }
}

/**
 * Stage the inline attachments of a message into the upload store (with the uploads plugin
 * loaded), so the message and the queue hold `{ uploadId }` references only. Without it the
 * items are returned as they are.
 */
export async function stageAttachments(attachments: AttachmentItem[] | undefined, uploads: UploadsLike | undefined): Promise<AttachmentItem[] | undefined> {
  if (!uploads || !attachments?.some((a) => !('uploadId' in a))) return attachments;
  const out: AttachmentItem[] = [];
  for (const a of attachments) {
    if ('uploadId' in a) {
      out.push(a);
      continue;
    }
    if (a.encoding === 'base64' && !BASE64.test(a.data)) throw new AttachmentError(`attachment "${a.name}": data is not valid base64`);
    const bytes = Buffer.from(a.data, a.encoding === 'utf8' ? 'utf8' : 'base64');
    try {
      out.push({ uploadId: (await uploads.stageBytes(bytes, a.name)).record.uploadId });
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      throw new AttachmentError(`attachment "${a.name}": ${(err as Error).message}`, typeof code === 'string' ? code : 'internal');
    }
  }
  return out;
}

/**
 * The user message's blocks. `{ uploadId }` items need the uploads service (and a tools mode:
 * `mode` is the message's, else the default); an unknown id is a `not_found` naming it.
 */
export function toInputBlocks(text: string, attachments: AttachmentItem[] = [], opts: { uploads?: UploadsLike | undefined; mode?: ExecutionMode | undefined } = {}): ContentBlock[] {
  const blocks: ContentBlock[] = [];
  if (text.trim()) blocks.push({ type: 'text', text });
  const staged: AttachmentBlock[] = [];
  for (const a of attachments) {
    if (!('uploadId' in a)) {
      blocks.push(toBlock(a));
      continue;
    }
    const uploads = opts.uploads;
    if (!uploads) throw new AttachmentError(`attachment ${JSON.stringify(a.uploadId)}: uploads are not available here (no uploads plugin is loaded)`);
    const block = fromUploads(() => uploads.block(a.uploadId));
    staged.push(block);
    blocks.push(block);
  }
  if (staged.length) fromUploads(() => opts.uploads!.checkMessage(staged, opts.mode));
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
