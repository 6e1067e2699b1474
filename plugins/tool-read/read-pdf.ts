/**
 * Read of a PDF: its text, extracted with pdf-parse (imported the first time a PDF is read),
 * paged by lines like a text file. Attached PDFs live in the uploads folder and their reference
 * tells the model to Read them, so a PDF must not be "a binary file" here. Layout, images and
 * scanned pages have no text: the header says so.
 */
import type { FileHandle } from 'node:fs/promises';
import type { ToolResult } from '../../plugin-api.js';
import type { FileIo } from '../../lib/tool-shared/abort.js';
import { formatBytes, ToolFailure } from '../../lib/tool-shared/results.js';
import type { SandboxTarget } from '../../lib/tool-shared/sandbox.js';
import { readAll } from '../../lib/tool-shared/sandbox-fs.js';
import type { ReadSettings } from '../../lib/tool-shared/settings.js';

/** The largest PDF whose text Read extracts. */
export const PDF_MAX_BYTES = 64 * 1024 * 1024;

/** `%PDF-` */
export function isPdf(head: Buffer): boolean {
  return head.length >= 5 && head.toString('latin1', 0, 5) === '%PDF-';
}

export async function readPdf(p: SandboxTarget, fh: FileHandle, size: number, settings: ReadSettings, args: { offset?: number | undefined; limit?: number | undefined }, io: FileIo): Promise<ToolResult> {
  if (size > PDF_MAX_BYTES) throw new ToolFailure(`${p.display} is a ${formatBytes(size)} PDF; Read extracts the text of PDFs up to ${formatBytes(PDF_MAX_BYTES)}.`);
  const buf = await readAll(fh, PDF_MAX_BYTES, io, size);
  let text: string;
  let pages: number;
  const { PDFParse } = await import('pdf-parse');
  const parser = new PDFParse({ data: new Uint8Array(buf) });
  try {
    const r = await parser.getText();
    text = r.text.replace(/\n*-- (\d+) of \d+ --\n*/g, '\n[end of page $1]\n').trim();
    pages = r.total;
  } catch (err) {
    throw new ToolFailure(`${p.display} is a PDF whose text cannot be extracted (${(err as Error).message}).`);
  } finally {
    await parser.destroy().catch(() => undefined);
  }
  io.check();
  const all = text ? text.split(/\r?\n/) : [];
  const offset = args.offset ?? 1;
  const limit = args.limit ?? settings.maxLines;
  const head = `[PDF ${p.display}: ${pages} page${pages === 1 ? '' : 's'}, text extracted (layout, images and scanned pages are not shown)]`;
  const base = { path: p.display, bytes: size, pdfPages: pages };
  if (all.length === 0) return { content: [{ type: 'text', text: `${head}\n(no text: the pages may be scanned images)` }], details: { ...base, startLine: 0, endLine: 0, totalLines: 0, hasMore: false } };
  if (offset > all.length) throw new ToolFailure(`The text of ${p.display} has ${all.length} lines; offset ${offset} is past the end.`);
  const shown: string[] = [];
  let bytes = 0;
  let n = offset;
  for (; n <= all.length && shown.length < limit; n++) {
    const line = all[n - 1]!;
    const cut = line.length > settings.maxLineLength;
    const row = `${String(n).padStart(6)}\t${cut ? line.slice(0, settings.maxLineLength) : line}${cut ? ` [... line cut at ${settings.maxLineLength} characters]` : ''}`;
    if (shown.length && bytes + row.length > settings.maxBytes) break;
    shown.push(row);
    bytes += row.length + 1;
  }
  const last = n - 1;
  const hasMore = last < all.length;
  const note = hasMore ? `\n\n[Lines ${offset}-${last} shown. The text continues: call Read with offset=${last + 1} to read on.]` : '';
  return {
    content: [{ type: 'text', text: `${head}\n${shown.join('\n')}${note}` }],
    details: { ...base, startLine: offset, endLine: last, totalLines: all.length, hasMore },
  };
}
