/**
 * What a request carries of attachments and old media (the uploads plugin's CONTEXT_POLICY tap)
 * and the providers' preflight: history stores a compact attachment block; each request expands
 * it (reference + native image); image bytes of older turns and of earlier tools' results become
 * a note while the file stays in storage; hosted searches of earlier turns are not re-sent; a
 * message is the same object in every round of a run; and items over a provider's limits become
 * notes, newest first.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { AttachmentBlock, ContentBlock, ImageBlock, Message, Plugin, Provider, ProviderEvent, ProviderRequest } from '../../plugin-api.js';
import { createKernel, type Kernel } from '../../core/kernel.js';
import { ANTHROPIC_MEDIA_LIMITS, GEMINI_MEDIA_LIMITS, fitMedia, openaiMediaLimits } from '../../lib/provider-shared/media-limits.js';
import toolImage from '../../plugins/tool-image/index.js';
import uploadsPlugin, { UPLOADS_SERVICE, type UploadsService } from '../../plugins/uploads/index.js';
import { attachmentBlock } from '../../plugins/uploads/service.js';
import { removeTempDirs, tempDir, tinyPng } from '../helpers/uploads-fixtures.js';

const kernels: Kernel[] = [];
afterEach(async () => {
  for (const k of kernels.splice(0)) await k.shutdown();
  removeTempDirs();
});

type Step = { text?: string; call?: { id: string; name: string; input: Record<string, unknown> }; search?: boolean };

/** A provider that answers from steps and keeps each request's message array as given (no copy), to compare identities. */
function recordingProvider(steps: (req: ProviderRequest, i: number) => Step) {
  const requests: ProviderRequest[] = [];
  const provider: Provider = {
    id: 'rec',
    displayName: 'Recording',
    defaultModel: 'rec-1',
    isConfigured: () => true,
    async *stream(request): AsyncGenerator<ProviderEvent> {
      requests.push(request);
      const step = steps(request, requests.length - 1);
      let i = 0;
      if (step.search) {
        yield { type: 'block_end', index: i++, block: { type: 'hosted_search', provider: 'rec', queries: ['q'], sources: [{ title: 't', url: 'https://example.com' }], status: 'completed' } };
      }
      if (step.text) {
        yield { type: 'block_start', index: i, block: { type: 'text' } };
        yield { type: 'text_delta', index: i, text: step.text };
        yield { type: 'block_end', index: i++, block: { type: 'text', text: step.text } };
      }
      if (step.call) {
        yield { type: 'block_start', index: i, block: { type: 'tool_call', id: step.call.id, name: step.call.name } };
        yield { type: 'block_end', index: i++, block: { type: 'tool_call', ...step.call } as ContentBlock };
      }
      yield { type: 'done', stopReason: step.call ? 'tool_use' : 'end' };
    },
  };
  return { provider, requests };
}

async function boot(steps: (req: ProviderRequest, i: number) => Step, settings: Record<string, unknown> = {}) {
  const home = tempDir();
  const rec = recordingProvider(steps);
  const plugin: Plugin = { name: 'test-rec', apply: (ctx) => void ctx.registerProvider(rec.provider) };
  const kernel = await createKernel({ home, plugins: [plugin, uploadsPlugin as Plugin, toolImage], settings: { defaultProvider: 'rec', ...settings }, thirdParty: false });
  kernels.push(kernel);
  const uploads = kernel.services.get<UploadsService>(UPLOADS_SERVICE)!;
  return { kernel, home, uploads, ...rec };
}

const images = (m: Message) => m.content.filter((b): b is ImageBlock => b.type === 'image' && !!b.data);
const texts = (m: Message) => m.content.flatMap((b) => (b.type === 'text' ? [b.text] : []));

describe('context policy', () => {
  it('history keeps the compact attachment block; the request carries the reference and the native image', async () => {
    const { kernel, uploads, requests } = await boot(() => ({ text: 'seen' }));
    const png = tinyPng(4, 3);
    const block = attachmentBlock((await uploads.stageBytes(png, 'photo.png')).record);
    const run = kernel.runtime.startRun({ input: [{ type: 'text', text: 'look' }, block] });
    const events = [];
    for await (const e of run.events) events.push(e);
    expect((await run.result).status).toBe('completed');
    const start = events.find((e) => e.type === 'agent_start');
    const stored = start?.type === 'agent_start' ? start.userMessage! : undefined;
    expect(stored?.content).toEqual([{ type: 'text', text: 'look' }, block]);
    expect(JSON.stringify(stored)).not.toContain(png.toString('base64'));
    const sent = requests[0]!.messages[0]!;
    expect(sent.content[0]).toEqual({ type: 'text', text: 'look' });
    expect(texts(sent)[1]).toContain(`path="${block.path}"`);
    expect(texts(sent)[1]).toMatch(/read it with the Read tool by that absolute path/);
    expect(images(sent)).toEqual([{ type: 'image', mimeType: 'image/png', data: png.toString('base64'), path: block.path }]);
  });

  it('image bytes of turns past uploads.imageWindowTurns become a note in later requests; the file stays stored', async () => {
    const { kernel, uploads, requests } = await boot(() => ({ text: 'ok' }), { uploads: { imageWindowTurns: 2 } });
    const block = attachmentBlock((await uploads.stageBytes(tinyPng(), 'old.png')).record);
    const first = kernel.runtime.startRun({ input: [{ type: 'text', text: 'one' }, block] });
    await first.result;
    const c = first.conversationId;
    for (const t of ['two', 'three']) await kernel.runtime.startRun({ conversationId: c, input: [{ type: 'text', text: t }] }).result;
    // Request 2 (turn 2 of the window) still has the bytes; request 3 (turn 3) has the note.
    expect(images(requests[1]!.messages[0]!)).toHaveLength(1);
    const late = requests[2]!.messages[0]!;
    expect(images(late)).toEqual([]);
    expect(texts(late).join('\n')).toMatch(/attached in an earlier turn and is not included again/);
    expect(texts(late).join('\n')).toContain(block.path);
    expect(fs.existsSync(block.path)).toBe(true);
    expect(uploads.get(block.uploadId)?.size).toBe(block.size);
  });

  it('an Image-tool result keeps its bytes in its own turn and becomes a note in later turns', async () => {
    const { kernel, home, requests } = await boot((req, i) => (i === 0 ? { call: { id: 'c1', name: 'Image', input: { file_path: path.join(home, 'shot.png') } } } : { text: `answer ${i}` }));
    fs.writeFileSync(path.join(home, 'shot.png'), tinyPng(5, 5));
    const run = kernel.runtime.startRun({ input: [{ type: 'text', text: 'show it' }], workdir: home });
    await run.result;
    const toolImages = (m: Message | undefined) => (m?.content ?? []).flatMap((b) => (b.type === 'tool_result' ? b.content.filter((c) => c.type === 'image' && c.data) : []));
    expect(toolImages(requests[1]!.messages.find((m) => m.role === 'tool'))).toHaveLength(1);
    await kernel.runtime.startRun({ conversationId: run.conversationId, input: [{ type: 'text', text: 'next' }] }).result;
    const later = requests[2]!.messages.find((m) => m.role === 'tool')!;
    expect(toolImages(later)).toEqual([]);
    expect(JSON.stringify(later)).toMatch(/returned by a tool in an earlier turn is no longer included/);
  });

  it('hosted-search blocks of earlier turns are not re-sent (history keeps them)', async () => {
    const { kernel, requests } = await boot((req, i) => (i === 0 ? { search: true, text: 'found' } : { text: 'more' }));
    const run = kernel.runtime.startRun({ input: [{ type: 'text', text: 'search' }] });
    const r = await run.result;
    expect(r.messages[0]!.content.some((b) => b.type === 'hosted_search')).toBe(true);
    await kernel.runtime.startRun({ conversationId: run.conversationId, input: [{ type: 'text', text: 'again' }] }).result;
    const assistant = requests[1]!.messages.find((m) => m.role === 'assistant')!;
    expect(assistant.content.map((b) => b.type)).toEqual(['text']);
  });

  it('an expanded message is the same object in every round of a run', async () => {
    const { kernel, uploads, requests } = await boot((req, i) => (i < 2 ? { call: { id: `c${i}`, name: 'Nope', input: {} } } : { text: 'done' }));
    const block = attachmentBlock((await uploads.stageBytes(tinyPng(), 'p.png')).record);
    await kernel.runtime.startRun({ input: [{ type: 'text', text: 'go' }, block] }).result;
    expect(requests).toHaveLength(3);
    expect(requests[1]!.messages[0]).toBe(requests[0]!.messages[0]);
    expect(requests[2]!.messages[0]).toBe(requests[0]!.messages[0]);
    expect(requests[2]!.messages[2]).toBe(requests[1]!.messages[2]);
  });

  it('a stored file that is gone goes as the reference with a note', async () => {
    const { kernel, uploads, requests } = await boot(() => ({ text: 'ok' }));
    const block: AttachmentBlock = attachmentBlock((await uploads.stageBytes(Buffer.from('bye'), 'gone.txt')).record);
    fs.rmSync(path.dirname(block.path), { recursive: true });
    await kernel.runtime.startRun({ input: [block] }).result;
    expect(texts(requests[0]!.messages[0]!).join('\n')).toMatch(/The stored file is gone/);
  });
});

describe('provider preflight (fitMedia)', () => {
  const msg = (content: ContentBlock[]): Message => ({ id: `m${Math.random()}`, role: 'user', content, createdAt: 0 });
  const img = (chars: number): ImageBlock => ({ type: 'image', mimeType: 'image/png', data: 'A'.repeat(chars), path: '/u/x.png' });

  it('an image over Anthropic’s 5 MB is sent as a note, never as bytes; the history message is untouched', () => {
    const big = msg([{ type: 'text', text: 'see' }, img(5 * 1024 * 1024 + 4)]);
    const [out] = fitMedia([big], ANTHROPIC_MEDIA_LIMITS);
    expect(out!.content[1]).toEqual({ type: 'text', text: expect.stringMatching(/not included in this request: it is 5\.0 MB encoded, over the 5\.0 MB per image/) });
    expect(big.content[1]!.type).toBe('image');
    // Same decision, same object: provider caches by identity keep working.
    expect(fitMedia([big], ANTHROPIC_MEDIA_LIMITS)[0]).toBe(out);
  });

  it('a PNG over 8000 px a side is refused for Anthropic, accepted for OpenAI (which resizes)', () => {
    const wide = msg([{ type: 'image', mimeType: 'image/png', data: tinyPng(8001, 1).toString('base64') }]);
    expect(fitMedia([wide], ANTHROPIC_MEDIA_LIMITS)[0]!.content[0]).toMatchObject({ type: 'text', text: expect.stringMatching(/8001 px on its longest side, over the 8000 px/) });
    expect(fitMedia([wide], openaiMediaLimits(true))[0]).toBe(wide);
  });

  it('the request budget keeps the newest items and notes the older ones', () => {
    const mb = 1024 * 1024;
    const old = msg([img(12 * mb)]);
    const mid = msg([img(6 * mb)]);
    const recent = msg([img(6 * mb)]);
    const out = fitMedia([old, mid, recent], GEMINI_MEDIA_LIMITS);
    expect(out[2]).toBe(recent);
    expect(out[1]).toBe(mid);
    expect(out[0]!.content[0]).toMatchObject({ type: 'text', text: expect.stringMatching(/newer images and documents already fill/) });
  });

  it('PDFs: over the page cap they go as their text; providers without documents always get the text', () => {
    const pdf = msg([{ type: 'document', mimeType: 'application/pdf', name: 'r.pdf', path: '/u/r.pdf', data: 'JVBERi0', text: 'the text', pages: 150 }]);
    const [capped] = fitMedia([pdf], ANTHROPIC_MEDIA_LIMITS);
    expect(capped!.content[0]).toMatchObject({ type: 'text', text: expect.stringMatching(/150 pages, over the 100 pages[\s\S]*<file name="r.pdf">\nthe text\n<\/file>/) });
    const small = msg([{ type: 'document', mimeType: 'application/pdf', name: 'r.pdf', data: 'JVBERi0', text: 'the text', pages: 1 }]);
    expect(fitMedia([small], ANTHROPIC_MEDIA_LIMITS)[0]).toBe(small);
    expect(fitMedia([small], openaiMediaLimits(false))[0]!.content[0]).toEqual({ type: 'text', text: '<file name="r.pdf">\nthe text\n</file>' });
  });
});
