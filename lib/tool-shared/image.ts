/**
 * Image files for the model and the preview: recognised by their bytes (an extension can lie),
 * limited to the formats every provider accepts, with the dimensions read from the header so
 * the UI can size the preview before decoding.
 */
import type { FileHandle } from 'node:fs/promises';
import type { ImageBlock, JsonObject, TextBlock } from '../../plugin-api.js';
import type { FileIo } from './abort.js';
import { validateImage } from './image-validate.js';
import { formatBytes, ToolFailure } from './results.js';
import type { SandboxTarget } from './sandbox.js';
import { readAll } from './sandbox-fs.js';

export type ImageMime = 'image/png' | 'image/jpeg' | 'image/gif' | 'image/webp';

/** The image type of these leading bytes, or undefined. 12 bytes suffice. */
export function sniffImage(head: Uint8Array): ImageMime | undefined {
  const b = head;
  if (b.length >= 8 && b[0] === 0x89 && b[1] === 0x50 && b[2] === 0x4e && b[3] === 0x47 && b[4] === 0x0d && b[5] === 0x0a && b[6] === 0x1a && b[7] === 0x0a) return 'image/png';
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return 'image/jpeg';
  const ascii = (from: number, to: number) => String.fromCharCode(...b.subarray(from, to));
  if (b.length >= 6 && (ascii(0, 6) === 'GIF87a' || ascii(0, 6) === 'GIF89a')) return 'image/gif';
  if (b.length >= 12 && ascii(0, 4) === 'RIFF' && ascii(8, 12) === 'WEBP') return 'image/webp';
  return undefined;
}

/**
 * Width and height from the header alone, when the format is one we can read cheaply. It does
 * not check the rest of the file: {@link validateImage} does, before an image is loaded.
 */
export function imageSize(buf: Buffer, mime: ImageMime): { width: number; height: number } | undefined {
  try {
    switch (mime) {
      case 'image/png':
        return buf.length >= 24 ? { width: buf.readUInt32BE(16), height: buf.readUInt32BE(20) } : undefined;
      case 'image/gif':
        return buf.length >= 10 ? { width: buf.readUInt16LE(6), height: buf.readUInt16LE(8) } : undefined;
      case 'image/webp': {
        const kind = buf.toString('ascii', 12, 16);
        if (kind === 'VP8X') return { width: 1 + buf.readUIntLE(24, 3), height: 1 + buf.readUIntLE(27, 3) };
        if (kind === 'VP8L') {
          const bits = buf.readUInt32LE(21);
          return { width: 1 + (bits & 0x3fff), height: 1 + ((bits >> 14) & 0x3fff) };
        }
        if (kind === 'VP8 ') return { width: buf.readUInt16LE(26) & 0x3fff, height: buf.readUInt16LE(28) & 0x3fff };
        return undefined;
      }
      case 'image/jpeg': {
        // Walk the markers to the first start-of-frame.
        let i = 2;
        while (i + 9 < buf.length) {
          if (buf[i] !== 0xff) return undefined;
          const marker = buf[i + 1]!;
          const len = buf.readUInt16BE(i + 2);
          if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
            return { height: buf.readUInt16BE(i + 5), width: buf.readUInt16BE(i + 7) };
          }
          i += 2 + len;
        }
        return undefined;
      }
    }
  } catch {
    return undefined;
  }
}

export interface LoadedImage {
  content: [TextBlock, ImageBlock];
  details: JsonObject;
}

const FORMAT: Record<ImageMime, string> = { 'image/png': 'PNG', 'image/jpeg': 'JPEG', 'image/gif': 'GIF', 'image/webp': 'WebP' };

/**
 * Load an image from a handle the sandbox opened and checked (a regular file). The bytes are
 * read through that handle, so they are the bytes of the file that was checked; the image is
 * validated (complete header, readable dimensions, intact end) before it goes to the model.
 * The image block carries the bytes for the model and the absolute path for the preview (the
 * path survives when context policy drops old bytes).
 */
export async function loadImage(p: SandboxTarget, fh: FileHandle, size: number, maxBytes: number, io: FileIo): Promise<LoadedImage> {
  const tooBig = (n: number) => new ToolFailure(`${p.display} is ${formatBytes(n)}, more than the ${formatBytes(maxBytes)} an image may have (tools.image.maxBytes).`);
  if (size > maxBytes) throw tooBig(size);
  const buf = await readAll(fh, maxBytes, io, size);
  if (buf.length > maxBytes) throw tooBig(buf.length);
  const mime = sniffImage(buf.subarray(0, 12));
  if (!mime) throw new ToolFailure(`${p.display} is not a PNG, JPEG, GIF or WebP image.`);
  const check = validateImage(buf, mime);
  if (!check.ok) throw new ToolFailure(`${p.display} is not a valid ${FORMAT[mime]} image: ${check.reason}.`, { path: p.display, mimeType: mime });
  const dims = { width: check.width, height: check.height };
  const summary = `Image ${p.display} (${mime}, ${dims.width}x${dims.height}, ${formatBytes(buf.length)})`;
  return {
    content: [
      { type: 'text', text: summary },
      { type: 'image', mimeType: mime, data: buf.toString('base64'), path: p.absolute },
    ],
    details: { kind: 'image', path: p.display, absolutePath: p.absolute, mimeType: mime, bytes: buf.length, ...dims },
  };
}
