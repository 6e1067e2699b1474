/**
 * File names for staged uploads. The name a client gives is anyone's (`../../x`, `/etc/passwd`,
 * `..\x`, NUL bytes, 300 characters, `evil.sh.png`): it is kept as metadata only, and the file
 * on disk gets a name made from it that is one plain path component, short, without hidden-file
 * or double-extension tricks, and with an extension that matches a sniffed binary type.
 */

/** Longest stored name in bytes (UTF-8): well under every file system's 255. */
export const MAX_NAME_BYTES = 120;
/** Longest original name kept as metadata, in characters. */
export const MAX_ORIGINAL_CHARS = 500;

const NATIVE_EXT: Record<string, string> = {
  'image/png': 'png',
  'image/jpeg': 'jpg',
  'image/gif': 'gif',
  'image/webp': 'webp',
  'application/pdf': 'pdf',
};
const JPEG_EXTS = new Set(['jpg', 'jpeg', 'jpe']);
const WINDOWS_RESERVED = /^(con|prn|aux|nul|com\d|lpt\d)$/i;
// Controls (C0, DEL, C1), line/paragraph separators and bidi controls: never in a stored name.
// eslint-disable-next-line no-control-regex
const CONTROLS = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** The original name as metadata: NUL and other controls dropped, trimmed, capped; never empty. */
export function originalName(given: string | undefined, fallback: string): string {
  const clean = (given ?? '').replace(CONTROLS, '').trim();
  const capped = Array.from(clean).slice(0, MAX_ORIGINAL_CHARS).join('');
  return capped || fallback;
}

/**
 * A safe stored name for `given`, for a file sniffed as `mediaType`: the last path component
 * only (either slash), letters, digits, `-` and `_` in the base (dots become `_`, so `evil.sh.png`
 * is `evil_sh.png` and no name starts with a dot), one short extension, at most
 * {@link MAX_NAME_BYTES} bytes, and `upload` when nothing is left.
 */
export function safeName(given: string | undefined, mediaType: string): string {
  const last = (given ?? '').replace(CONTROLS, '').split(/[\\/]/).pop() ?? '';
  const norm = last.normalize('NFC').trim();
  const dot = norm.lastIndexOf('.');
  let base = dot > 0 ? norm.slice(0, dot) : norm;
  let ext = dot > 0 ? norm.slice(dot + 1).toLowerCase() : '';
  if (!/^[a-z0-9]{1,10}$/.test(ext)) {
    // Not an extension (`archive.tar.` or `.bashrc`): all of it is the base.
    base = norm;
    ext = '';
  }
  // A binary type we recognised by its bytes names the extension: the bytes cannot lie, the name can.
  const native = NATIVE_EXT[mediaType];
  if (native && !(native === 'jpg' && JPEG_EXTS.has(ext))) ext = native;
  base = base
    .replace(/[^\p{L}\p{N}_-]+/gu, '_')
    .replace(/_+/g, '_')
    .replace(/^[_-]+|[_-]+$/g, '');
  if (!base || WINDOWS_RESERVED.test(base)) base = base ? `_${base}` : 'upload';
  const suffix = ext ? `.${ext}` : '';
  return truncateBytes(base, MAX_NAME_BYTES - Buffer.byteLength(suffix)) + suffix;
}

/** `s` cut to at most `max` UTF-8 bytes on a code-point boundary. */
function truncateBytes(s: string, max: number): string {
  if (Buffer.byteLength(s) <= max) return s;
  let out = '';
  let bytes = 0;
  for (const ch of s) {
    const n = Buffer.byteLength(ch);
    if (bytes + n > max) break;
    out += ch;
    bytes += n;
  }
  return out || 'upload';
}
