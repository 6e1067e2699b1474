/**
 * What the model reads about an attached file, shared by the uploads plugin (which expands an
 * attachment for each request) and the providers (which meet an unexpanded one when the uploads
 * plugin is not loaded, or a document they cannot take natively).
 *
 * Names and paths come from the user (or whoever sent them the file): they are XML-attribute
 * escaped in full, so they can neither close the tag nor fake a line; a text file's content only
 * has its closing `</file` neutralized, so code reads as written while no file can end the
 * wrapper early.
 */
import { escapeAttribute, neutralizeClosingTag } from '../../core/define-plugin.js';
import type { AttachmentBlock, DocumentBlock, TextBlock } from '../../plugin-api.js';

/** `1.5 MB`: sizes as the model and the user read them. */
export function formatSize(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  if (n < 1024 * 1024 * 1024) return `${(n / (1024 * 1024)).toFixed(1)} MB`;
  return `${(n / (1024 * 1024 * 1024)).toFixed(1)} GB`;
}

/**
 * The reference every request carries for an attachment: where the file is, what it is, and
 * that the model may read it (read-only). `note` says why the file itself is not included, or
 * how it is (one line of our own text, never user text).
 */
export function attachmentReference(a: Pick<AttachmentBlock, 'name' | 'path' | 'mediaType' | 'size'>, note?: string): string {
  const head = `<attachment name="${escapeAttribute(a.name)}" path="${escapeAttribute(a.path)}" media-type="${escapeAttribute(a.mediaType)}" size="${a.size}">`;
  const body = `The user attached this file (${formatSize(a.size)}). It is stored read-only at the path above: read it with the Read tool by that absolute path when you need it${note ? `. ${note}` : '.'}`;
  return `${head}\n${body}\n</attachment>`;
}

/** The reference as a text block (what a provider sends for an unexpanded attachment). */
export function attachmentText(a: AttachmentBlock, note?: string): TextBlock {
  return { type: 'text', text: attachmentReference(a, note) };
}

/** The wrapper the model sees around an attached text file's content. */
export function fileWrapper(name: string, content: string): string {
  return `<file name="${escapeAttribute(name)}">\n${neutralizeClosingTag(content, 'file')}\n</file>`;
}

/**
 * A document for a provider that cannot take it natively (or whose limits left it out): its
 * extracted text in a `<file>` wrapper, else a line saying where it is.
 */
export function documentFallback(d: DocumentBlock, why?: string): TextBlock {
  const name = d.name ?? (d.path ? d.path.split(/[\\/]/).pop()! : 'document');
  if (d.text !== undefined && d.text.trim()) {
    return { type: 'text', text: `${why ? `[${why}: the text extracted from ${name} follows]\n` : ''}${fileWrapper(name, d.text)}` };
  }
  const where = d.path ? ` It is stored at ${JSON.stringify(d.path)}.` : '';
  return { type: 'text', text: `[document ${JSON.stringify(name)} (${d.mimeType}) is not included${why ? `: ${why}` : ''}; no text could be extracted from it.${where}]` };
}
