/**
 * What a message shows as media: a user's attachments (staged uploads, as `attachment` blocks),
 * images inline in a message or a tool result (base64), and text files attached the old way
 * (`<file name="…">` blocks). Thumbnails and the lightbox share one shape, {@link MediaImage}.
 */
import type { ContentBlock, Message, ToolResultBlock } from '../../../plugin-api.js';
import { parseFileBlock } from './transcript.js';
import { isPreviewableImage, type UploadRef } from './uploads.js';

/**
 * A staged upload in a stored user message. Declared here (not taken from plugin-api.d.ts) so the
 * WebUI reads it whether or not the contract it is being added to has it yet.
 */
export interface AttachmentBlockView {
  type: 'attachment';
  uploadId: string;
  name: string;
  path: string;
  mediaType: string;
  size: number;
}

/** One image a thumbnail or the lightbox shows: bytes inline (`src`) or fetched by `uploadId`. */
export interface MediaImage {
  key: string;
  name: string;
  mediaType: string;
  src?: string;
  uploadId?: string;
  size?: number;
  /** Server path, when the bytes are gone (dropped from old history) and nothing else is known. */
  path?: string;
}

/** A non-image attachment's chip. */
export interface MediaFile {
  key: string;
  name: string;
  mediaType: string;
  size?: number;
  /** For a text file attached inline: its length in characters. */
  chars?: number;
  uploadId?: string;
}

export function isAttachmentBlock(b: unknown): b is AttachmentBlockView {
  const x = b as Partial<AttachmentBlockView> | null;
  return !!x && x.type === 'attachment' && typeof x.uploadId === 'string' && typeof x.name === 'string';
}

/** The `attachment` block for an upload (the optimistic bubble shows it before the server echoes). */
export function attachmentBlock(r: { uploadId: string; name: string; path: string; mediaType: string; size: number }): ContentBlock {
  const block: AttachmentBlockView = { type: 'attachment', uploadId: r.uploadId, name: r.name, path: r.path, mediaType: r.mediaType, size: r.size };
  return block as unknown as ContentBlock;
}

function dataUrl(b: { mimeType: string; data?: string }): string | undefined {
  return b.data ? `data:${b.mimeType};base64,${b.data}` : undefined;
}

/** A user message's media: images (attachments and inline) and file chips, in message order. */
export function messageMedia(m: Message): { images: MediaImage[]; files: MediaFile[] } {
  const images: MediaImage[] = [];
  const files: MediaFile[] = [];
  const blocks = m.content as unknown[];
  // An image block the server derived from an attachment carries the same path: show it once.
  const attachedPaths = new Set(blocks.flatMap((b) => (isAttachmentBlock(b) && b.path ? [b.path] : [])));
  blocks.forEach((raw, i) => {
    const key = `${m.id}-${i}`;
    if (isAttachmentBlock(raw)) {
      if (isPreviewableImage(raw.mediaType)) images.push({ key, name: raw.name, mediaType: raw.mediaType, uploadId: raw.uploadId, size: raw.size, path: raw.path });
      else files.push({ key, name: raw.name, mediaType: raw.mediaType, size: raw.size, uploadId: raw.uploadId });
      return;
    }
    const b = raw as ContentBlock;
    if (b.type === 'image') {
      if (b.path && attachedPaths.has(b.path)) return;
      images.push({ key, name: b.path ? baseName(b.path) : `image ${images.length + 1}`, mediaType: b.mimeType, src: dataUrl(b), path: b.path });
    } else if (b.type === 'text') {
      const f = parseFileBlock(b.text);
      if (f) files.push({ key, name: f.name, mediaType: 'text/plain', chars: f.content.length });
    }
  });
  return { images, files };
}

/** The uploads a user message names, to resend it with its attachments. */
export function uploadRefsOf(m: Message): UploadRef[] {
  return (m.content as unknown[]).flatMap((b) => (isAttachmentBlock(b) ? [{ uploadId: b.uploadId }] : []));
}

/** Images of a tool result (the Image tool's, an MCP tool's screenshot…). */
export function resultImages(result: { content: ToolResultBlock['content'] } | undefined, keyPrefix: string): MediaImage[] {
  if (!result) return [];
  return result.content.flatMap((b, i): MediaImage[] => {
    if (b.type !== 'image') return [];
    const src = dataUrl(b);
    if (!src && !b.path) return [];
    return [{ key: `${keyPrefix}-${i}`, name: b.path ? baseName(b.path) : `image ${i + 1}`, mediaType: b.mimeType, src, path: b.path }];
  });
}

export function baseName(p: string): string {
  return p.split(/[\\/]/).filter(Boolean).pop() ?? p;
}

/** 1.2 KB, 3.4 MB: sizes as a chip shows them. */
export function formatBytes(n: number | undefined): string {
  if (n === undefined || !Number.isFinite(n)) return '';
  if (n < 1024) return `${n} B`;
  const units = ['KB', 'MB', 'GB'];
  let v = n / 1024;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${v < 10 ? v.toFixed(1).replace(/\.0$/, '') : Math.round(v)} ${units[u]}`;
}

const KNOWN: Record<string, string> = {
  'application/pdf': 'PDF',
  'application/json': 'JSON',
  'application/zip': 'ZIP',
  'application/x-tar': 'TAR',
  'application/gzip': 'GZIP',
  'text/csv': 'CSV',
};

/** A short type label for a chip: "PNG", "PDF", else the file's extension ("text/plain" says little). */
export function typeLabel(mediaType: string, name: string): string {
  const mt = mediaType.split(';')[0]!.trim().toLowerCase();
  if (KNOWN[mt]) return KNOWN[mt]!;
  if (mt.startsWith('image/')) return mt.slice(6).replace('svg+xml', 'svg').toUpperCase();
  const ext = /\.([A-Za-z0-9]{1,8})$/.exec(name)?.[1];
  if (ext) return ext.toUpperCase();
  if (mt.startsWith('text/')) return 'Text';
  return 'File';
}
