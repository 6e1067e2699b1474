/**
 * Image and Read hand an image to the model only when it is whole: full header, readable
 * dimensions and an intact end. A truncated or corrupt file is refused with an error naming
 * it, because a broken image in the conversation would fail every later provider request.
 */
import zlib from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createImageTool } from '../../plugins/tool-image/index.js';
import { createReadTool } from '../../plugins/tool-read/index.js';
import { validateImage } from '../../lib/tool-shared/image-validate.js';
import { makeSandbox, textOf, type Sandbox } from '../helpers/tool-context.js';

const image = createImageTool();
const read = createReadTool();
let sb: Sandbox;
beforeEach(() => {
  sb = makeSandbox();
});
afterEach(() => sb.cleanup());

const PNG_1X1 = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64');
/** 1x1 lossy and lossless WebP, the samples Modernizr's WebP detection uses. */
const WEBP_LOSSY = Buffer.from('UklGRiIAAABXRUJQVlA4IBYAAAAwAQCdASoBAAEADsD+JaQAA3AAAAAA', 'base64');
const WEBP_LOSSLESS = Buffer.from('UklGRhoAAABXRUJQVlA4TA0AAAAvAAAAEAcQERGIiP4HAA==', 'base64');

function chunk(type: string, data: Buffer): Buffer {
  const out = Buffer.alloc(12 + data.length);
  out.writeUInt32BE(data.length, 0);
  out.write(type, 4, 'latin1');
  data.copy(out, 8);
  out.writeUInt32BE(zlib.crc32(out.subarray(4, 8 + data.length)), 8 + data.length);
  return out;
}

function png(width: number, height: number): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8;
  ihdr[9] = 0; // greyscale
  const rows = Buffer.alloc((1 + width) * height);
  return Buffer.concat([PNG_1X1.subarray(0, 8), chunk('IHDR', ihdr), chunk('IDAT', zlib.deflateSync(rows)), chunk('IEND', Buffer.alloc(0))]);
}

/** SOI, APP0, a baseline frame of 64x48 with one component, a scan, some data, EOI. */
const JPEG = Buffer.from([
  0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01, 0x01, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00,
  0xff, 0xc0, 0x00, 0x0b, 0x08, 0x00, 0x30, 0x00, 0x40, 0x01, 0x01, 0x11, 0x00,
  0xff, 0xda, 0x00, 0x08, 0x01, 0x01, 0x00, 0x00, 0x3f, 0x00, 0x12, 0x34, 0x56, 0xff, 0x00, 0x78, 0xff, 0xd9,
]);

/** GIF89a, 2x3, a global colour table of 2, one image with one data sub-block, the trailer. */
const GIF = Buffer.concat([
  Buffer.from('GIF89a', 'latin1'),
  Buffer.from([0x02, 0x00, 0x03, 0x00, 0x80, 0x00, 0x00]),
  Buffer.from([0, 0, 0, 255, 255, 255]),
  Buffer.from([0x2c, 0, 0, 0, 0, 0x02, 0x00, 0x03, 0x00, 0x00]),
  Buffer.from([0x02, 0x02, 0x44, 0x01, 0x00]),
  Buffer.from([0x3b]),
]);

describe('image validation', () => {
  it('a 10-byte truncated PNG is refused by Image and by Read, naming the file', async () => {
    sb.write('shot.png', PNG_1X1.subarray(0, 10));
    for (const r of [await image.execute({ file_path: 'shot.png' }, sb.ctx()), await read.execute({ file_path: 'shot.png' }, sb.ctx())]) {
      expect(r.isError).toBe(true);
      expect(textOf(r)).toBe('shot.png is not a valid PNG image: it ends before the IHDR header chunk (the file is truncated).');
      expect(r.content.some((b) => b.type === 'image')).toBe(false);
    }
  });

  it('a PNG cut anywhere after its signature is refused', () => {
    for (let n = 8; n < PNG_1X1.length; n++) expect(validateImage(PNG_1X1.subarray(0, n), 'image/png').ok, `cut at ${n}`).toBe(false);
    expect(validateImage(PNG_1X1, 'image/png')).toEqual({ ok: true, width: 1, height: 1 });
  });

  it('a PNG with a corrupt header, a zero dimension or no image data is refused', () => {
    const corrupt = Buffer.from(PNG_1X1);
    corrupt[20] = 9; // inside IHDR: the CRC no longer matches
    expect(validateImage(corrupt, 'image/png')).toEqual({ ok: false, reason: 'the CRC of the IHDR chunk does not match (the data is corrupt)' });
    expect(validateImage(png(0, 4), 'image/png')).toMatchObject({ ok: false, reason: 'its dimensions (0x4) are invalid' });
    const noIdat = Buffer.concat([png(2, 2).subarray(0, 33), chunk('IEND', Buffer.alloc(0))]);
    expect(validateImage(noIdat, 'image/png')).toMatchObject({ ok: false, reason: 'it has no image data (IDAT)' });
    expect(validateImage(png(5, 7), 'image/png')).toEqual({ ok: true, width: 5, height: 7 });
  });

  it('JPEG: SOI, a frame header, a scan and EOI are required', () => {
    expect(validateImage(JPEG, 'image/jpeg')).toEqual({ ok: true, width: 64, height: 48 });
    expect(validateImage(Buffer.concat([JPEG, Buffer.from('trailing camera data')]), 'image/jpeg').ok).toBe(true);
    expect(validateImage(JPEG.subarray(0, JPEG.length - 2), 'image/jpeg')).toMatchObject({ ok: false, reason: expect.stringContaining('without an end-of-image (EOI) marker') });
    expect(validateImage(JPEG.subarray(0, 25), 'image/jpeg')).toMatchObject({ ok: false, reason: expect.stringContaining('truncated') });
    expect(validateImage(Buffer.from([0xff, 0xd8, 0xff, 0xd9]), 'image/jpeg')).toMatchObject({ ok: false, reason: 'it ends (EOI) before any image data' });
    const scanFirst = Buffer.concat([JPEG.subarray(0, 20), JPEG.subarray(33)]);
    expect(validateImage(scanFirst, 'image/jpeg')).toMatchObject({ ok: false, reason: 'its image data comes before a frame header' });
  });

  it('GIF: an image and the trailer are required', () => {
    expect(validateImage(GIF, 'image/gif')).toEqual({ ok: true, width: 2, height: 3 });
    for (let n = 6; n < GIF.length; n++) expect(validateImage(GIF.subarray(0, n), 'image/gif').ok, `cut at ${n}`).toBe(false);
    const noImage = Buffer.concat([GIF.subarray(0, 19), Buffer.from([0x3b])]);
    expect(validateImage(noImage, 'image/gif')).toMatchObject({ ok: false, reason: 'it holds no image' });
  });

  it('WebP: the RIFF size must fit the file and the bitstream header must be complete', () => {
    expect(validateImage(WEBP_LOSSY, 'image/webp')).toEqual({ ok: true, width: 1, height: 1 });
    expect(validateImage(WEBP_LOSSLESS, 'image/webp')).toEqual({ ok: true, width: 1, height: 1 });
    for (const webp of [WEBP_LOSSY, WEBP_LOSSLESS]) {
      for (let n = 12; n < webp.length; n++) expect(validateImage(webp.subarray(0, n), 'image/webp').ok, `cut at ${n}`).toBe(false);
    }
    const vp8xOnly = Buffer.alloc(30);
    vp8xOnly.write('RIFF', 0, 'latin1');
    vp8xOnly.writeUInt32LE(22, 4);
    vp8xOnly.write('WEBPVP8X', 8, 'latin1');
    vp8xOnly.writeUInt32LE(10, 16);
    expect(validateImage(vp8xOnly, 'image/webp')).toMatchObject({ ok: false, reason: 'it has no image data (VP8, VP8L or ANMF chunk)' });
  });

  it('valid images of every format load with their dimensions', async () => {
    const files: Array<[string, Buffer, string]> = [
      ['a.png', png(5, 7), 'image/png, 5x7'],
      ['b.jpg', JPEG, 'image/jpeg, 64x48'],
      ['c.gif', GIF, 'image/gif, 2x3'],
      ['d.webp', WEBP_LOSSLESS, 'image/webp, 1x1'],
    ];
    for (const [name, bytes, summary] of files) {
      sb.write(name, bytes);
      const r = await image.execute({ file_path: name }, sb.ctx());
      expect(textOf(r), name).toBe(`Image ${name} (${summary}, ${bytes.length} B)`);
      expect(r.content[1], name).toMatchObject({ type: 'image', data: bytes.toString('base64') });
    }
  });

  it('a truncated JPEG named .png is refused as the JPEG it is', async () => {
    sb.write('fake.png', JPEG.subarray(0, 30));
    expect(textOf(await image.execute({ file_path: 'fake.png' }, sb.ctx()))).toMatch(/^fake\.png is not a valid JPEG image: it ends/);
  });
});
