/**
 * Read: a text file with line numbers, paged by lines; an image file as image content; a PDF as
 * its extracted text (read-pdf.ts). Sandboxed
 * to the workspace and the (read-only) uploads folder. Only regular files are read, through the
 * handle the sandbox walker opened (O_NOFOLLOW, O_NONBLOCK) and checked with fstat.
 */
import type { FileHandle } from 'node:fs/promises';
import { z } from 'zod';
import type { ToolContext, ToolDefinition, ToolResult } from '../../plugin-api.js';
import { definePlugin } from '../../core/define-plugin.js';
import { FileIo } from '../../lib/tool-shared/abort.js';
import { loadImage, sniffImage } from '../../lib/tool-shared/image.js';
import { describeFsError, guarded, ToolFailure } from '../../lib/tool-shared/results.js';
import { resolveSandboxTarget, type SandboxTarget } from '../../lib/tool-shared/sandbox.js';
import { SandboxEntry } from '../../lib/tool-shared/sandbox-fs.js';
import { sectionSchema, toolSettings, type ReadSettings } from '../../lib/tool-shared/settings.js';
import { description } from './description.js';
import { readLinePage } from './read-lines.js';
import { isPdf, readPdf } from './read-pdf.js';

export const ReadArgsSchema = z.object({
  file_path: z.string().min(1).describe('The file to read: absolute, or relative to the workspace.'),
  offset: z.number().int().min(1).optional().describe('The 1-based line to start at. Default 1.'),
  limit: z.number().int().min(1).optional().describe('How many lines to return. Default 2000.'),
});
export type ReadArgs = z.output<typeof ReadArgsSchema>;

const SNIFF_BYTES = 8192;

async function readFile(args: ReadArgs, ctx: ToolContext): Promise<ToolResult> {
  const settings = toolSettings(ctx.settings, 'read');
  const imageMax = toolSettings(ctx.settings, 'image').maxBytes;
  const { target: p, scope } = await resolveSandboxTarget(args.file_path, { workdir: ctx.workdir, uploads: ctx.paths?.uploads, access: 'read' });
  const io = new FileIo(ctx.signal, `reading ${p.display}`);
  // Everything is read through the handle the walker opened and checked; the body is raced against abort.
  return io.run(
    SandboxEntry.use(p, scope, io, { followLast: true }, async (entry) => {
      const { fh, stat } = await entry.openRead(`${p.display} is a folder, not a file. List it with Bash (e.g. \`ls ${p.display}\`).`);
      try {
        return await readOpened(p, fh, stat.size, settings, imageMax, args, io);
      } finally {
        await fh.close().catch(() => {});
      }
    }).catch((err: unknown) => {
      if (err instanceof ToolFailure) throw err;
      throw new ToolFailure(describeFsError(err, p.display));
    }),
  );
}

async function readOpened(p: SandboxTarget, fh: FileHandle, size: number, settings: ReadSettings, imageMax: number, args: ReadArgs, io: FileIo): Promise<ToolResult> {
  const head = Buffer.alloc(Math.min(SNIFF_BYTES, size));
  if (head.length) await fh.read(head, 0, head.length, 0);
  const mime = sniffImage(head.subarray(0, 12));
  if (mime) {
    const img = await loadImage(p, fh, size, imageMax, io);
    return { content: img.content, details: img.details };
  }
  if (isPdf(head)) return readPdf(p, fh, size, settings, args, io);
  if (head.includes(0)) throw new ToolFailure(`${p.display} looks like a binary file (${size} bytes); Read shows text and images only.`);

  const offset = args.offset ?? 1;
  const limit = args.limit ?? settings.maxLines;
  const base = { path: p.display, bytes: size };
  if (size === 0) return { content: [{ type: 'text', text: `(${p.display} is empty)` }], details: { ...base, startLine: 0, endLine: 0, totalLines: 0, hasMore: false } };

  const page = await readLinePage(fh, { offset, limit, maxLineLength: settings.maxLineLength, maxBytes: settings.maxBytes }, io);
  if (page.lines.length === 0) {
    throw new ToolFailure(`${p.display} has ${page.totalLines ?? 'fewer'} lines; offset ${offset} is past the end.`);
  }
  const first = page.lines[0]!.n;
  const last = page.lines.at(-1)!.n;
  const body = page.lines.map((l) => `${String(l.n).padStart(6)}\t${l.text}${l.cut ? ` [... line cut at ${settings.maxLineLength} characters]` : ''}`).join('\n');
  const note = page.hasMore
    ? `\n\n[Lines ${first}-${last} shown. ${p.display} continues: call Read with offset=${last + 1} to read on.]`
    : first > 1
      ? `\n\n[Lines ${first}-${last} of ${last} shown.]`
      : '';
  return {
    content: [{ type: 'text', text: body + note }],
    details: { ...base, startLine: first, endLine: last, totalLines: page.totalLines ?? null, hasMore: page.hasMore },
  };
}

export function createReadTool(): ToolDefinition<ReadArgs> {
  return {
    name: 'Read',
    description,
    parameters: ReadArgsSchema,
    concurrency: 'parallel',
    execute: guarded(readFile),
  };
}

export default definePlugin({
  name: 'tool-read',
  settingsKey: 'tools',
  settingsSchema: sectionSchema('read'),
  apply(ctx) {
    ctx.registerTool(createReadTool());
  },
});
