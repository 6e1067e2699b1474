/**
 * Text and page count of a PDF, with pdf-parse (pdf.js underneath), imported the first time a
 * PDF is attached: it costs a quarter of a second to load, which no run without a PDF should pay.
 *
 * The result is kept beside the upload (`.pdf-text.json`, written atomically), so a CLI run or
 * a later request does not parse the same file again; the folder's removal takes it along.
 */
import { randomUUID } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import path from 'node:path';

export interface PdfText {
  text: string;
  pages: number;
}

const CACHE_FILE = '.pdf-text.json';
const memory = new Map<string, Promise<PdfText | undefined>>();
const MEMORY_ENTRIES = 32;

/** Extract once per file (by path and size); undefined when the PDF cannot be read (encrypted, broken). */
export function pdfText(file: string, size: number, maxChars: number): Promise<PdfText | undefined> {
  const key = `${file}\0${size}\0${maxChars}`;
  let hit = memory.get(key);
  if (!hit) {
    hit = load(file, size, maxChars);
    memory.set(key, hit);
    if (memory.size > MEMORY_ENTRIES) memory.delete(memory.keys().next().value!);
  }
  return hit;
}

async function load(file: string, size: number, maxChars: number): Promise<PdfText | undefined> {
  const cache = path.join(path.dirname(file), CACHE_FILE);
  const stored = await fsp.readFile(cache, 'utf8').then(
    (t) => JSON.parse(t) as { size?: number; maxChars?: number; text?: unknown; pages?: unknown },
    () => undefined,
  );
  if (stored && stored.size === size && stored.maxChars === maxChars && typeof stored.text === 'string' && typeof stored.pages === 'number') {
    return { text: stored.text, pages: stored.pages };
  }
  let parser: { getText(): Promise<{ text: string; total: number }>; destroy(): Promise<void> } | undefined;
  try {
    const { PDFParse } = await import('pdf-parse');
    parser = new PDFParse({ data: new Uint8Array(await fsp.readFile(file)) });
    const r = await parser.getText();
    // pdf-parse marks page ends with "-- N of M --" lines: our own wrapper says where the file is.
    let text = r.text.replace(/\n*-- \d+ of \d+ --\n*/g, '\n\n').trim();
    if (text.length > maxChars) text = `${text.slice(0, maxChars)}\n[… text cut at ${maxChars} characters]`;
    const out = { text, pages: r.total };
    const tmp = `${cache}.${process.pid}.${randomUUID()}.tmp`;
    await fsp
      .writeFile(tmp, JSON.stringify({ size, maxChars, ...out }), { mode: 0o600 })
      .then(() => fsp.rename(tmp, cache))
      .catch(() => fsp.rm(tmp, { force: true }));
    return out;
  } catch {
    return undefined;
  } finally {
    await parser?.destroy().catch(() => undefined);
  }
}
