/**
 * The WebUI's upload logic without a browser: the composer's upload queue (progress, done,
 * refused with the server's message, cancel, retry, send gating, text mode), reading the
 * server's answers, what a message shows as attachments, and what an edit-and-resend removes.
 */
import { describe, expect, it } from 'vitest';
import type { Message } from '../../plugin-api.js';
import { formatBytes, messageMedia, resultImages, typeLabel, uploadRefsOf } from '../../webui/src/lib/media.js';
import { confirmText, laterMessages, needsConfirm } from '../../webui/src/lib/resend.js';
import { MAX_ATTACHMENTS, sendState, TEXT_MODE_HINT, UploadQueue, type NamedBlob, type UploadItem } from '../../webui/src/lib/upload-queue.js';
import { errorFromResponse, parseUploadResult, UploadError, type UploadFn, type UploadResult } from '../../webui/src/lib/uploads.js';

/** An upload function the test drives: each call waits until the test settles it. */
function fakeUploads() {
  const calls: Array<{ name: string; progress: (l: number, t: number) => void; resolve: (r: UploadResult) => void; reject: (e: Error) => void; aborted: boolean }> = [];
  const upload: UploadFn = (file, name, onProgress) => {
    let resolve!: (r: UploadResult) => void;
    let reject!: (e: Error) => void;
    const promise = new Promise<UploadResult>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    const call = { name, progress: onProgress, resolve, reject, aborted: false };
    calls.push(call);
    return {
      promise,
      abort: () => {
        call.aborted = true;
        reject(new UploadError('cancelled', 'cancelled'));
      },
    };
  };
  return { calls, upload };
}

const file = (name: string, type: string, size = 10): NamedBlob => Object.assign(new Blob([new Uint8Array(size)], { type }), { name });
const result = (name: string, extra: Partial<UploadResult> = {}): UploadResult => ({ uploadId: `up_${name}`, name, path: `/home/u/uploads/${name}`, size: 10, mediaType: 'image/png', ...extra });
const tick = () => new Promise((r) => setTimeout(r, 0));

function queue() {
  const fake = fakeUploads();
  const revoked: string[] = [];
  let n = 0;
  const store = { items: [] as UploadItem[] };
  const q = new UploadQueue(store, { upload: fake.upload, createUrl: () => `blob:${++n}`, revokeUrl: (u) => revoked.push(u) });
  return { q, store, fake, revoked };
}

describe('WebUI upload queue', () => {
  it('uploads each file at once, reports progress, and allows sending only when every file is staged', async () => {
    const { q, fake } = queue();
    expect(q.add([file('a.png', 'image/png'), file('notes.pdf', 'application/pdf')], 'tools')).toBeNull();
    expect(fake.calls.map((c) => c.name)).toEqual(['a.png', 'notes.pdf']);
    expect(q.items.map((i) => [i.status, i.previewUrl])).toEqual([
      ['uploading', 'blob:1'],
      ['uploading', null], // only images get a thumbnail
    ]);
    expect(sendState(q.items, 'hi', 'tools')).toEqual({ canSend: false, reason: 'Waiting for 2 files to finish uploading' });

    fake.calls[0]!.progress(5, 10);
    expect(q.items[0]!.progress).toBe(0.5);
    fake.calls[0]!.resolve(result('a.png'));
    await tick();
    expect(q.items[0]).toMatchObject({ status: 'done', progress: 1, result: { uploadId: 'up_a.png' } });
    expect(sendState(q.items, '', 'tools').reason).toBe('Waiting for a file to finish uploading');
    fake.calls[1]!.resolve(result('notes.pdf', { mediaType: 'application/pdf' }));
    await tick();
    // Attachments alone are a message.
    expect(sendState(q.items, '', 'tools')).toEqual({ canSend: true, reason: null });
  });

  it('a refused upload shows the server message on its chip and blocks sending until removed; a lost one can be retried', async () => {
    const { q, fake } = queue();
    q.add([file('big.bin', 'application/octet-stream'), file('b.txt', 'text/plain')], 'tools');
    fake.calls[0]!.reject(errorFromResponse(413, JSON.stringify({ error: { code: 'too_large', message: 'big.bin is 30 MB, more than the 25 MB an upload may have' } })));
    fake.calls[1]!.reject(new UploadError('network', 'the connection to the server failed'));
    await tick();
    expect(q.items[0]).toMatchObject({ status: 'error', error: 'big.bin is 30 MB, more than the 25 MB an upload may have', retryable: false });
    expect(q.items[1]).toMatchObject({ status: 'error', retryable: true });
    expect(sendState(q.items, 'text', 'tools').canSend).toBe(false);
    q.retry(q.items[0]!.key); // a refusal would only be refused again
    expect(fake.calls).toHaveLength(2);
    q.retry(q.items[1]!.key);
    expect(fake.calls).toHaveLength(3);
    expect(q.items[1]).toMatchObject({ status: 'uploading', error: null });
    fake.calls[2]!.resolve(result('b.txt'));
    await tick();
    expect(q.items[1]!.status).toBe('done');
    q.remove(q.items[0]!.key);
    expect(sendState(q.items, 'text', 'tools').canSend).toBe(true);
  });

  it('removing a file cancels its upload and revokes its thumbnail; a late answer is ignored', async () => {
    const { q, fake, revoked } = queue();
    q.add([file('a.png', 'image/png')], 'tools');
    q.remove(q.items[0]!.key);
    expect(fake.calls[0]!.aborted).toBe(true);
    expect(q.items).toEqual([]);
    expect(revoked).toEqual(['blob:1']);
    fake.calls[0]!.resolve(result('a.png'));
    await tick();
    expect(q.items).toEqual([]);
    expect(sendState(q.items, '', 'tools').canSend).toBe(false);
  });

  it('text mode takes no files, and files already attached block sending there with the hint', async () => {
    const { q, fake } = queue();
    expect(q.add([file('a.png', 'image/png')], 'text')).toBe(TEXT_MODE_HINT);
    expect(q.items).toEqual([]);
    expect(fake.calls).toEqual([]);
    q.add([file('a.png', 'image/png')], 'tools');
    fake.calls[0]!.resolve(result('a.png'));
    await tick();
    expect(sendState(q.items, 'hi', 'text')).toEqual({ canSend: false, reason: TEXT_MODE_HINT });
    expect(sendState(q.items, 'hi', 'agent-dev').canSend).toBe(true);
  });

  it('caps the files per message, names pasted images, and gives taken items back when a send fails', async () => {
    const { q, fake, revoked } = queue();
    const many = Array.from({ length: MAX_ATTACHMENTS + 2 }, (_, i) => file(`f${i}.txt`, 'text/plain'));
    expect(q.add(many, 'tools')).toBe(`At most ${MAX_ATTACHMENTS} files per message: 2 not attached.`);
    expect(q.items).toHaveLength(MAX_ATTACHMENTS);
    q.clear();
    expect(fake.calls.every((c) => c.aborted)).toBe(true);

    q.add([Object.assign(new Blob([new Uint8Array(3)], { type: 'image/jpeg' }), { name: '' })], 'tools');
    expect(q.items[0]!.name).toMatch(/^pasted-image-\d+\.jpg$/);
    fake.calls.at(-1)!.resolve(result('x.jpg'));
    await tick();
    const taken = q.take();
    expect(q.items).toEqual([]);
    expect(q.fileOf(taken[0]!.key)).toBeDefined(); // still held for the preview seed
    q.restore(taken);
    expect(q.items.map((i) => i.status)).toEqual(['done']);
    const again = q.take();
    q.release(again);
    expect(q.fileOf(again[0]!.key)).toBeUndefined();
    expect(revoked).toContain(again[0]!.previewUrl);
  });
});

describe('WebUI upload dedupe', () => {
  it('the same bytes twice (the server answers the first upload) leave one chip and a notice', async () => {
    const fake = fakeUploads();
    const store = { items: [] as UploadItem[], notice: null as string | null };
    const q = new UploadQueue(store, { upload: fake.upload });
    q.add([file('a.png', 'image/png'), file('copy of a.png', 'image/png')], 'tools');
    fake.calls[0]!.resolve(result('a.png'));
    fake.calls[1]!.resolve(result('a.png')); // deduped: the first upload's id and name
    await tick();
    expect(q.items.map((i) => i.name)).toEqual(['a.png']);
    expect(store.notice).toBe('copy of a.png is attached already (as a.png).');
  });
});

describe('WebUI upload answers', () => {
  it('reads the server error body, and names the status when there is none', () => {
    const e = errorFromResponse(403, JSON.stringify({ error: { code: 'forbidden', message: 'uploads are off in text mode' } }));
    expect(e).toMatchObject({ code: 'forbidden', message: 'uploads are off in text mode', status: 403 });
    expect(errorFromResponse(413, '<html>').message).toBe('the file is too large for the server (HTTP 413)');
    expect(errorFromResponse(404, '').message).toBe('this server does not accept uploads (HTTP 404)');
    expect(errorFromResponse(500, '{}').message).toBe('the upload failed (HTTP 500)');
  });

  it('takes a well-formed success body and refuses one without an uploadId', () => {
    expect(parseUploadResult(JSON.stringify({ uploadId: 'u1', name: 'a.png', path: '/p/a.png', size: 3, mediaType: 'image/png' }))).toEqual({ uploadId: 'u1', name: 'a.png', path: '/p/a.png', size: 3, mediaType: 'image/png' });
    expect(() => parseUploadResult('{"name":"a"}')).toThrow('without an uploadId');
    expect(() => parseUploadResult('nope')).toThrow('not JSON');
  });
});

const user = (id: string, content: unknown[], meta?: Message['meta']): Message => ({ id, role: 'user', content: content as Message['content'], createdAt: 1, ...(meta ? { meta } : {}) });
const assistant = (id: string): Message => ({ id, role: 'assistant', content: [{ type: 'text', text: 'ok' }], createdAt: 1 });
const tool = (id: string): Message => ({ id, role: 'tool', content: [], createdAt: 1 });

describe('WebUI message attachments', () => {
  it('shows image uploads as thumbnails and other files as chips; an image block of the same file shows once', () => {
    const m = user('m1', [
      { type: 'text', text: 'look' },
      { type: 'attachment', uploadId: 'u1', name: 'shot.png', path: '/up/shot.png', mediaType: 'image/png', size: 2048 },
      { type: 'image', mimeType: 'image/png', path: '/up/shot.png' },
      { type: 'attachment', uploadId: 'u2', name: 'spec.pdf', path: '/up/spec.pdf', mediaType: 'application/pdf', size: 3_500_000 },
      { type: 'image', mimeType: 'image/gif', data: 'R0lG' },
      { type: 'text', text: '<file name="notes.md">\nhello\n</file>' },
    ]);
    const { images, files } = messageMedia(m);
    expect(images.map((i) => [i.name, i.uploadId ?? i.src])).toEqual([
      ['shot.png', 'u1'],
      ['image 2', 'data:image/gif;base64,R0lG'],
    ]);
    expect(files.map((f) => [f.name, typeLabel(f.mediaType, f.name), f.size ?? f.chars])).toEqual([
      ['spec.pdf', 'PDF', 3_500_000],
      ['notes.md', 'MD', 5],
    ]);
    expect(uploadRefsOf(m)).toEqual([{ uploadId: 'u1' }, { uploadId: 'u2' }]);
  });

  it('finds tool-result images with bytes or a path, and formats sizes and types', () => {
    const imgs = resultImages({ content: [{ type: 'text', text: 'Image a.png' }, { type: 'image', mimeType: 'image/png', data: 'iVBO', path: '/w/a.png' }, { type: 'image', mimeType: 'image/png' }] }, 'call1');
    expect(imgs).toEqual([{ key: 'call1-1', name: 'a.png', mediaType: 'image/png', src: 'data:image/png;base64,iVBO', path: '/w/a.png' }]);
    expect([formatBytes(512), formatBytes(1536), formatBytes(3_500_000), formatBytes(20 * 1024 * 1024)]).toEqual(['512 B', '1.5 KB', '3.3 MB', '20 MB']);
    expect([typeLabel('image/jpeg', 'a.jpg'), typeLabel('application/octet-stream', 'data.parquet'), typeLabel('text/plain', 'README'), typeLabel('', 'README')]).toEqual(['JPEG', 'PARQUET', 'Text', 'File']);
  });
});

describe('WebUI edit and resend', () => {
  const history = [user('u1', [{ type: 'text', text: 'one' }]), assistant('a1'), tool('t1'), assistant('a2'), user('u2', [{ type: 'text', text: 'two' }]), assistant('a3'), user('s', [{ type: 'text', text: 'continue' }], { synthetic: 'continue' }), assistant('a4')];

  it('counts later messages as the transcript shows them: a reply of several rounds is one, a continue note none', () => {
    // After u1: its reply (3 messages), u2, u2's reply, the note, the reply after the note.
    expect(laterMessages(history, 'u1')).toEqual({ total: 4, yours: 1, replies: 3 });
    expect(laterMessages(history, 'u2')).toEqual({ total: 2, yours: 0, replies: 2 });
    expect(laterMessages(history, 'nope')).toBeNull();
  });

  it('asks first only when later turns of the user would go too', () => {
    expect(needsConfirm(laterMessages(history, 'u1'))).toBe(true);
    expect(needsConfirm(laterMessages(history, 'u2'))).toBe(false);
    expect(confirmText(laterMessages(history, 'u1')!)).toBe('Resending removes the 4 later messages (1 of yours, 3 replies).');
    expect(confirmText({ total: 1, yours: 1, replies: 0 })).toBe('Resending removes the 1 later message (1 of yours).');
  });
});
