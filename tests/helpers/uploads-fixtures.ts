/**
 * Files for the uploads tests: a valid PNG of any size (built here, CRCs included, so the image
 * validator accepts it), the hand-written one-page PDF (tests/fixtures/uploads-tiny.pdf, 602
 * bytes, text "Quarterly report: revenue 42"), and named temp folders.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';

export const PDF_FIXTURE = path.resolve(import.meta.dirname, '../fixtures/uploads-tiny.pdf');
export const PDF_TEXT = 'Quarterly report: revenue 42';

function chunk(type: string, data: Buffer): Buffer {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(zlib.crc32(body) >>> 0);
  return Buffer.concat([len, body, crc]);
}

/** A grey RGB PNG of `width`×`height`; `seed` changes the bytes (for dedupe tests). */
export function tinyPng(width = 2, height = 2, seed = 0): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // RGB
  const row = Buffer.alloc(1 + width * 3, 0x80 + (seed % 100));
  row[0] = 0; // filter: none
  const raw = Buffer.concat(Array.from({ length: height }, () => row));
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', ihdr), chunk('IDAT', zlib.deflateSync(raw)), chunk('IEND', Buffer.alloc(0))]);
}

const dirs: string[] = [];

/** A temp folder `la-uploads-…`, removed by {@link removeTempDirs}. */
export function tempDir(prefix = 'la-uploads-'): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  dirs.push(d);
  return d;
}

export function removeTempDirs(): void {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
}
