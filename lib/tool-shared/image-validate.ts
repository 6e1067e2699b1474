/**
 * Structural checks of the image formats the tools hand to providers. A truncated or corrupt
 * image would otherwise go into the conversation and fail every later request that carries it
 * (providers decode images and reject the whole request), so an image must have its complete
 * header, readable dimensions and an intact end: PNG signature, IHDR, chunk CRCs of critical
 * chunks, IDAT and IEND; JPEG SOI, a frame header, a scan and EOI; GIF screen descriptor, an
 * image and the trailer; WebP a RIFF size that fits the file and a complete bitstream header.
 *
 * No image library is installed, and decoding is not needed: the structure is walked by hand.
 */
import zlib from 'node:zlib';
import type { ImageMime } from './image.js';

export type ImageCheck = { ok: true; width: number; height: number } | { ok: false; reason: string };

const bad = (reason: string): ImageCheck => ({ ok: false, reason });
const cut = (where: string): ImageCheck => bad(`it ends ${where} (the file is truncated)`);
const ascii = (b: Buffer, from: number, to: number) => b.toString('latin1', from, to);

export function validateImage(buf: Buffer, mime: ImageMime): ImageCheck {
  switch (mime) {
    case 'image/png':
      return checkPng(buf);
    case 'image/jpeg':
      return checkJpeg(buf);
    case 'image/gif':
      return checkGif(buf);
    case 'image/webp':
      return checkWebp(buf);
  }
}

const PNG_DEPTHS: Record<number, number[]> = { 0: [1, 2, 4, 8, 16], 2: [8, 16], 3: [1, 2, 4, 8], 4: [8, 16], 6: [8, 16] };

function checkPng(b: Buffer): ImageCheck {
  let pos = 8;
  let dims: { width: number; height: number } | undefined;
  let colorType = -1;
  let idat = 0;
  let plte = false;
  for (let n = 0; ; n++) {
    if (pos + 12 > b.length) return cut(n === 0 ? 'before the IHDR header chunk' : 'before the IEND chunk');
    const len = b.readUInt32BE(pos);
    const type = ascii(b, pos + 4, pos + 8);
    if (!/^[A-Za-z]{4}$/.test(type)) return bad(`chunk ${n + 1} has an invalid type`);
    if (len > 0x7fffffff) return bad(`the ${type} chunk has an invalid length`);
    if (pos + 12 + len > b.length) return cut(`inside the ${type} chunk`);
    const critical = type.charCodeAt(0) < 0x61;
    if (critical && zlib.crc32(b.subarray(pos + 4, pos + 8 + len)) !== b.readUInt32BE(pos + 8 + len)) {
      return bad(`the CRC of the ${type} chunk does not match (the data is corrupt)`);
    }
    const data = b.subarray(pos + 8, pos + 8 + len);
    if (n === 0) {
      if (type !== 'IHDR' || len !== 13) return bad('the first chunk is not a 13-byte IHDR header');
      const width = data.readUInt32BE(0);
      const height = data.readUInt32BE(4);
      colorType = data[9]!;
      if (width === 0 || height === 0 || width > 0x7fffffff || height > 0x7fffffff) return bad(`its dimensions (${width}x${height}) are invalid`);
      if (!PNG_DEPTHS[colorType]?.includes(data[8]!) || data[10] !== 0 || data[11] !== 0 || data[12]! > 1) return bad('its IHDR header holds invalid values');
      dims = { width, height };
    } else if (type === 'IHDR') {
      return bad('it has a second IHDR chunk');
    } else if (type === 'PLTE') {
      plte = true;
    } else if (type === 'IDAT') {
      idat++;
    } else if (type === 'IEND') {
      if (!idat) return bad('it has no image data (IDAT)');
      if (colorType === 3 && !plte) return bad('it uses a palette but has no PLTE chunk');
      return { ok: true, ...dims! };
    }
    pos += 12 + len;
  }
}

/** Frame headers: SOF0-SOF15 except DHT (C4), JPG (C8) and DAC (CC). */
const isSof = (m: number) => m >= 0xc0 && m <= 0xcf && m !== 0xc4 && m !== 0xc8 && m !== 0xcc;

function checkJpeg(b: Buffer): ImageCheck {
  let pos = 2;
  let dims: { width: number; height: number } | undefined;
  for (;;) {
    if (pos >= b.length) return cut('before its image data');
    if (b[pos] !== 0xff) return bad(`expected a marker at byte ${pos}`);
    while (pos < b.length && b[pos] === 0xff) pos++; // fill bytes
    if (pos >= b.length) return cut('inside a marker');
    const marker = b[pos++]!;
    if (marker === 0xd9) return bad('it ends (EOI) before any image data');
    if ((marker >= 0xd0 && marker <= 0xd7) || marker === 0x01) continue; // no length
    if (marker === 0xd8 || marker === 0x00) return bad(`it has an unexpected marker 0xFF${marker.toString(16).toUpperCase().padStart(2, '0')}`);
    if (pos + 2 > b.length) return cut('inside a segment header');
    const len = b.readUInt16BE(pos);
    if (len < 2) return bad('a segment has an invalid length');
    if (pos + len > b.length) return cut('inside a segment');
    if (isSof(marker)) {
      if (len < 8) return bad('its frame header is too short');
      const height = b.readUInt16BE(pos + 3);
      const width = b.readUInt16BE(pos + 5);
      const comps = b[pos + 7]!;
      if (comps === 0 || len !== 8 + 3 * comps) return bad('its frame header is malformed');
      if (width === 0 || height === 0) return bad(`its dimensions (${width}x${height}) cannot be read`);
      dims = { width, height };
    } else if (marker === 0xda) {
      if (!dims) return bad('its image data comes before a frame header');
      // The entropy-coded data runs to EOI; trailing bytes after it are tolerated (cameras add some).
      const eoi = b.lastIndexOf(Buffer.from([0xff, 0xd9]));
      if (eoi < pos + len) return cut('without an end-of-image (EOI) marker');
      return { ok: true, ...dims };
    }
    pos += len;
  }
}

function checkGif(b: Buffer): ImageCheck {
  if (b.length < 13) return cut('inside the screen descriptor');
  const width = b.readUInt16LE(6);
  const height = b.readUInt16LE(8);
  if (width === 0 || height === 0) return bad(`its dimensions (${width}x${height}) are invalid`);
  let pos = 13;
  const flags = b[10]!;
  if (flags & 0x80) pos += 3 * 2 ** ((flags & 7) + 1);
  let images = 0;
  const subBlocks = (): boolean => {
    for (;;) {
      if (pos >= b.length) return false;
      const size = b[pos++]!;
      if (size === 0) return true;
      pos += size;
    }
  };
  for (;;) {
    if (pos >= b.length) return cut(images ? 'without the trailer (0x3B)' : 'before any image');
    const block = b[pos]!;
    if (block === 0x3b) return images ? { ok: true, width, height } : bad('it holds no image');
    if (block === 0x21) {
      pos += 2;
      if (!subBlocks()) return cut('inside an extension block');
    } else if (block === 0x2c) {
      if (pos + 10 > b.length) return cut('inside an image descriptor');
      const local = b[pos + 9]!;
      pos += 10;
      if (local & 0x80) pos += 3 * 2 ** ((local & 7) + 1);
      pos += 1; // LZW minimum code size
      if (!subBlocks()) return cut('inside image data');
      images++;
    } else {
      return bad(`it has an unknown block 0x${block.toString(16)} at byte ${pos}`);
    }
  }
}

function checkWebp(b: Buffer): ImageCheck {
  if (b.length < 12) return cut('inside the RIFF header');
  const riff = b.readUInt32LE(4);
  if (riff < 4) return bad('its RIFF size is invalid');
  if (8 + riff > b.length) return cut(`before the ${8 + riff} bytes its RIFF header announces`);
  const end = 8 + riff;
  let pos = 12;
  let canvas: { width: number; height: number } | undefined;
  for (let n = 0; ; n++) {
    if (pos + 8 > end) return n === 0 ? cut('before its first chunk') : bad('it has no image data (VP8, VP8L or ANMF chunk)');
    const type = ascii(b, pos, pos + 4);
    const size = b.readUInt32LE(pos + 4);
    const data = pos + 8;
    if (data + size > end) return cut(`inside the ${type.trim()} chunk`);
    if (n === 0 && type !== 'VP8 ' && type !== 'VP8L' && type !== 'VP8X') return bad(`its first chunk (${type}) is not VP8, VP8L or VP8X`);
    if (type === 'VP8 ') {
      if (size < 10 || b[data + 3] !== 0x9d || b[data + 4] !== 0x01 || b[data + 5] !== 0x2a) return bad('its VP8 frame header is malformed');
      const width = b.readUInt16LE(data + 6) & 0x3fff;
      const height = b.readUInt16LE(data + 8) & 0x3fff;
      if (!width || !height) return bad(`its dimensions (${width}x${height}) are invalid`);
      return { ok: true, ...(canvas ?? { width, height }) };
    }
    if (type === 'VP8L') {
      if (size < 5 || b[data] !== 0x2f) return bad('its VP8L header is malformed');
      const bits = b.readUInt32LE(data + 1);
      if (bits >>> 29 !== 0) return bad('its VP8L version is unknown');
      return { ok: true, ...(canvas ?? { width: 1 + (bits & 0x3fff), height: 1 + ((bits >>> 14) & 0x3fff) }) };
    }
    if (type === 'VP8X') {
      if (n !== 0 || size < 10) return bad('its VP8X header is malformed');
      canvas = { width: 1 + b.readUIntLE(data + 4, 3), height: 1 + b.readUIntLE(data + 7, 3) };
    }
    if (type === 'ANMF' && canvas) return { ok: true, ...canvas };
    pos = data + size + (size & 1);
  }
}
