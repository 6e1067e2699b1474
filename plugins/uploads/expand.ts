/**
 * An attachment as one request carries it: the reference (name, absolute path, type, size, and
 * that the model may Read it) plus, where a provider can take it, the file itself: an image as an
 * image block, a PDF as a document block (with its extracted text for providers without
 * documents), a text file's content in a `<file>` wrapper. History keeps only the reference
 * block; this runs per request, and the caller caches it per message.
 *
 * Anything that cannot go (a file gone, too large for every provider, not a valid image, a
 * binary format) goes as the reference with a note saying why, never as bytes a provider would
 * refuse on every later request.
 */
import { promises as fsp } from 'node:fs';
import type { AttachmentBlock, ContentBlock, DocumentBlock, ImageBlock } from '../../plugin-api.js';
import { attachmentReference, fileWrapper, formatSize } from '../../lib/provider-shared/attachments.js';
import type { ImageMime } from '../../lib/tool-shared/image.js';
import { validateImage } from '../../lib/tool-shared/image-validate.js';
import { isTextual } from './media-type.js';
import { pdfText } from './pdf.js';
import type { UploadsSettings } from './settings.js';

const MiB = 1024 * 1024;
/** The largest image any provider takes (OpenAI: 20 MB); larger ones are never read for a request. */
export const IMAGE_READ_MAX = 20 * MiB;
/** The largest PDF sent as bytes (Anthropic and OpenAI cap a request at 32 MB). */
export const PDF_READ_MAX = 32 * MiB;
/** The largest PDF whose text is extracted. */
export const PDF_TEXT_MAX = 64 * MiB;

const IMAGE_MIMES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);

export interface ExpandOptions {
  settings: UploadsSettings;
  /** False for attachments of older turns: images and PDF bytes stay out (a note, or the PDF's text, instead). */
  media: boolean;
  /** Valid UTF-8 text, when the store knows it (else the bytes are checked). */
  isText?: boolean;
}

const text = (t: string): ContentBlock => ({ type: 'text', text: t });

/** The blocks one attachment stands for in a request. */
export async function expandAttachment(a: AttachmentBlock, opts: ExpandOptions): Promise<ContentBlock[]> {
  const ref = (note?: string) => text(attachmentReference(a, note));
  const size = await fsp.stat(a.path).then(
    (s) => (s.isFile() ? s.size : undefined),
    () => undefined,
  );
  if (size === undefined) return [ref('The stored file is gone (removed after uploads.retentionDays, or by hand): only its name and type are known')];
  const file = { ...a, size };

  if (IMAGE_MIMES.has(a.mediaType)) {
    if (!opts.media) return [ref('The image was attached in an earlier turn and is not included again; open it with the Read or Image tool by that path to see it')];
    if (size > IMAGE_READ_MAX) return [ref(`It is not included: at ${formatSize(size)} it is over the ${formatSize(IMAGE_READ_MAX)} any model provider accepts for an image`)];
    const buf = await fsp.readFile(a.path);
    const check = validateImage(buf, a.mediaType as ImageMime);
    if (!check.ok) return [ref(`It is not included: it is not a valid ${a.mediaType} image (${check.reason})`)];
    const img: ImageBlock = { type: 'image', mimeType: a.mediaType, data: buf.toString('base64'), path: a.path };
    return [ref(`The image follows (${check.width}x${check.height})`), img];
  }

  if (a.mediaType === 'application/pdf') {
    const cap = opts.settings.inlineTextBytes;
    const extracted = size <= PDF_TEXT_MAX && cap > 0 ? await pdfText(a.path, size, cap) : undefined;
    const doc: DocumentBlock = { type: 'document', mimeType: 'application/pdf', name: a.name, path: a.path };
    if (extracted) {
      doc.text = extracted.text;
      doc.pages = extracted.pages;
    }
    const pages = extracted ? `, ${extracted.pages} page${extracted.pages === 1 ? '' : 's'}` : '';
    if (opts.media && size <= PDF_READ_MAX) {
      doc.data = (await fsp.readFile(a.path)).toString('base64');
      return [ref(`The document follows${pages}`), doc];
    }
    const why = !opts.media ? 'It was attached in an earlier turn: only its extracted text is included again' : `At ${formatSize(size)} it is over the ${formatSize(PDF_READ_MAX)} a request may carry: only its extracted text is included`;
    return extracted ? [ref(`${why}${pages}`), doc] : [ref(`${why.replace(/: only.*$/, '')}; no text could be extracted from it`)];
  }

  const cap = opts.settings.inlineTextBytes;
  if (cap === 0) return [ref('Its content is not included in requests (uploads.inlineTextBytes is 0)')];
  const binary = [ref(`It is not a text file (${a.mediaType}): its content is not included`)];
  if (!(opts.isText ?? isTextual(a.mediaType))) return binary;
  const head = await readHead(a.path, Math.min(size, cap) + 3);
  const content = decodeText(head, Math.min(size, cap), size <= cap);
  if (content === undefined) return binary;
  if (size <= cap) return [ref('Its content follows'), text(fileWrapper(a.name, content))];
  return [ref(`Only its first ${formatSize(Buffer.byteLength(content))} (of ${formatSize(file.size)}) follow; read the rest with the Read tool (offset and limit)`), text(fileWrapper(a.name, content))];
}

async function readHead(file: string, n: number): Promise<Buffer> {
  const fh = await fsp.open(file, 'r');
  try {
    const buf = Buffer.alloc(n);
    const { bytesRead } = await fh.read(buf, 0, n, 0);
    return buf.subarray(0, bytesRead);
  } finally {
    await fh.close();
  }
}

/** The text of `buf` cut to `limit` bytes on a character boundary; undefined when it is not text. */
function decodeText(buf: Buffer, limit: number, whole: boolean): string | undefined {
  const part = buf.subarray(0, limit);
  if (part.includes(0)) return undefined;
  try {
    // A cut file may end inside a character: decode in stream mode and drop the incomplete tail.
    return new TextDecoder('utf-8', { fatal: true }).decode(part, { stream: !whole });
  } catch {
    return undefined;
  }
}
