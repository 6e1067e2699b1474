/**
 * What a staged file is: its magic bytes first (PNG, JPEG, GIF, WebP, PDF: the formats sent to
 * providers natively, where a wrong type poisons a request), then its extension, then whether
 * its bytes are valid UTF-8 text, else `application/octet-stream`. An extension that claims a
 * native format the bytes do not have is not believed.
 */
import { sniffImage } from '../../lib/tool-shared/image.js';

/** Bytes of the head the sniffers need. */
export const HEAD_BYTES = 16;

const TEXT = 'text/plain';
const BY_EXTENSION: Record<string, string> = {
  txt: TEXT, text: TEXT, log: TEXT, md: 'text/markdown', markdown: 'text/markdown', rst: TEXT,
  csv: 'text/csv', tsv: 'text/tab-separated-values', json: 'application/json', jsonl: 'application/x-ndjson', ndjson: 'application/x-ndjson',
  xml: 'application/xml', html: 'text/html', htm: 'text/html', css: 'text/css', svg: 'image/svg+xml',
  js: 'text/javascript', mjs: 'text/javascript', cjs: 'text/javascript', ts: 'text/x-typescript', tsx: 'text/x-typescript', jsx: 'text/javascript',
  py: 'text/x-python', rb: 'text/x-ruby', go: 'text/x-go', rs: 'text/x-rust', java: 'text/x-java', kt: 'text/x-kotlin', c: 'text/x-c', h: 'text/x-c',
  cc: 'text/x-c++', cpp: 'text/x-c++', hpp: 'text/x-c++', cs: 'text/x-csharp', php: 'text/x-php', swift: 'text/x-swift', sh: 'text/x-shellscript',
  bash: 'text/x-shellscript', zsh: 'text/x-shellscript', sql: 'application/sql', yaml: 'application/yaml', yml: 'application/yaml', toml: 'application/toml',
  ini: TEXT, cfg: TEXT, conf: TEXT, env: TEXT, diff: 'text/x-diff', patch: 'text/x-diff', tex: 'text/x-tex', vue: TEXT, svelte: TEXT,
  zip: 'application/zip', gz: 'application/gzip', tgz: 'application/gzip', tar: 'application/x-tar', '7z': 'application/x-7z-compressed',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  pptx: 'application/vnd.openxmlformats-officedocument.presentationml.presentation',
  doc: 'application/msword', xls: 'application/vnd.ms-excel', ppt: 'application/vnd.ms-powerpoint', odt: 'application/vnd.oasis.opendocument.text',
  rtf: 'application/rtf', bmp: 'image/bmp', tif: 'image/tiff', tiff: 'image/tiff', heic: 'image/heic', ico: 'image/x-icon', avif: 'image/avif',
  mp3: 'audio/mpeg', wav: 'audio/wav', ogg: 'audio/ogg', m4a: 'audio/mp4', mp4: 'video/mp4', mov: 'video/quicktime', webm: 'video/webm',
  wasm: 'application/wasm', exe: 'application/octet-stream', bin: 'application/octet-stream',
};

/** The native type these leading bytes prove, or undefined. */
export function sniffMagic(head: Uint8Array): string | undefined {
  const image = sniffImage(head);
  if (image) return image;
  if (head.length >= 5 && head[0] === 0x25 && head[1] === 0x50 && head[2] === 0x44 && head[3] === 0x46 && head[4] === 0x2d) return 'application/pdf'; // %PDF-
  return undefined;
}

/** The media type of a file: magic bytes, else extension, else text (valid UTF-8 without NUL), else octet-stream. */
export function mediaTypeOf(head: Uint8Array, name: string, isText: boolean): string {
  const magic = sniffMagic(head);
  if (magic) return magic;
  const ext = /\.([A-Za-z0-9]{1,10})$/.exec(name)?.[1]?.toLowerCase();
  const byExt = ext ? BY_EXTENSION[ext] : undefined;
  if (byExt) return byExt;
  return isText ? TEXT : 'application/octet-stream';
}

/** A type whose content reads as text when its bytes are valid UTF-8. */
export function isTextual(mediaType: string): boolean {
  return /^text\//.test(mediaType) || /^application\/(json|x-ndjson|xml|sql|yaml|toml|javascript)$/.test(mediaType) || mediaType === 'image/svg+xml';
}

/**
 * Incremental check that a stream of bytes is text: valid UTF-8 and no NUL byte. Fed chunk by
 * chunk while the file streams to disk, so nothing is read twice.
 */
export class TextProbe {
  private decoder = new TextDecoder('utf-8', { fatal: true });
  private ok = true;

  push(chunk: Uint8Array): void {
    if (!this.ok) return;
    if (chunk.includes(0)) {
      this.ok = false;
      return;
    }
    try {
      this.decoder.decode(chunk, { stream: true });
    } catch {
      this.ok = false;
    }
  }

  /** True when everything pushed was text (an incomplete character at the end is not). */
  done(): boolean {
    if (!this.ok) return false;
    try {
      this.decoder.decode();
      return true;
    } catch {
      return false;
    }
  }
}
