import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createImageTool } from '../../plugins/tool-image/index.js';
import { imageSize, sniffImage } from '../../lib/tool-shared/image.js';
import { makeSandbox, textOf, type Sandbox } from '../helpers/tool-context.js';

let sb: Sandbox;
beforeEach(() => {
  sb = makeSandbox();
});
afterEach(() => sb.cleanup());

const image = createImageTool();
const PNG_1X1 = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64');

describe('Image', () => {
  it('loads an image for the model (bytes) and the preview (path), with its size', async () => {
    sb.write('shots/pic.png', PNG_1X1);
    const r = await image.execute({ file_path: 'shots/pic.png' }, sb.ctx());
    expect(r.isError).toBeFalsy();
    expect(r.content[1]).toEqual({ type: 'image', mimeType: 'image/png', data: PNG_1X1.toString('base64'), path: path.join(sb.workdir, 'shots/pic.png') });
    expect(textOf(r)).toBe(`Image shots/pic.png (image/png, 1x1, ${PNG_1X1.length} B)`);
    expect(r.details).toMatchObject({ kind: 'image', path: 'shots/pic.png', mimeType: 'image/png', width: 1, height: 1 });
    expect(r.editedFiles).toBeUndefined();
  });

  it('loads user uploads (read-only folder) by absolute path', async () => {
    const file = path.join(sb.uploads, 'u.png');
    fs.writeFileSync(file, PNG_1X1);
    const r = await image.execute({ file_path: file }, sb.ctx());
    expect(r.isError).toBeFalsy();
    expect(r.details).toMatchObject({ path: file });
  });

  it('refuses files that are not images, and images over tools.image.maxBytes', async () => {
    sb.write('notes.png', 'not really a png');
    expect(textOf(await image.execute({ file_path: 'notes.png' }, sb.ctx()))).toBe('notes.png is not a PNG, JPEG, GIF or WebP image.');
    sb.write('big.png', Buffer.concat([PNG_1X1, Buffer.alloc(4096)]));
    const r = await image.execute({ file_path: 'big.png' }, sb.ctx({ settings: { tools: { image: { maxBytes: 1024 } } } }));
    expect(r.isError).toBe(true);
    expect(textOf(r)).toContain('tools.image.maxBytes');
  });

  it('recognises formats by their bytes and reads their dimensions', () => {
    const gif = Buffer.from('GIF89a\x10\x00\x20\x00', 'latin1');
    expect(sniffImage(gif)).toBe('image/gif');
    expect(imageSize(gif, 'image/gif')).toEqual({ width: 16, height: 32 });
    const jpeg = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x04, 0x00, 0x00, 0xff, 0xc0, 0x00, 0x11, 0x08, 0x00, 0x30, 0x00, 0x40, 0x03, 0, 0, 0, 0]);
    expect(sniffImage(jpeg)).toBe('image/jpeg');
    expect(imageSize(jpeg, 'image/jpeg')).toEqual({ width: 64, height: 48 });
    const webp = Buffer.alloc(30);
    webp.write('RIFF', 0, 'ascii');
    webp.write('WEBPVP8X', 8, 'ascii');
    webp.writeUIntLE(99, 24, 3);
    webp.writeUIntLE(49, 27, 3);
    expect(sniffImage(webp)).toBe('image/webp');
    expect(imageSize(webp, 'image/webp')).toEqual({ width: 100, height: 50 });
    expect(sniffImage(Buffer.from('hello world!'))).toBeUndefined();
  });

  it('is marked parallel-safe', () => {
    expect(image.concurrency).toBe('parallel');
  });
});
