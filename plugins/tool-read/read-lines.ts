/**
 * Page through a text file by lines without loading it whole: the stream stops once the page
 * is full, and an overlong line is captured only up to the cut, so a multi-gigabyte log or a
 * one-line minified bundle costs no more memory than the page shown. It reads the handle the
 * sandbox opened and checked, never the path again, and checks abort between chunks.
 */
import type { FileHandle } from 'node:fs/promises';
import type { FileIo } from '../../lib/tool-shared/abort.js';

export interface PagedLine {
  n: number;
  text: string;
  /** The line was longer than the limit and was cut. */
  cut: boolean;
}

export interface LinePage {
  lines: PagedLine[];
  /** More lines follow the page. */
  hasMore: boolean;
  /** Known only when the whole file was scanned. */
  totalLines?: number;
}

export interface PageOptions {
  /** 1-based first line. */
  offset: number;
  limit: number;
  maxLineLength: number;
  /** Stop adding lines once the page holds this many bytes (at least one line is shown). */
  maxBytes: number;
}

const CHUNK = 64 * 1024;

export async function readLinePage(fh: FileHandle, o: PageOptions, io: FileIo): Promise<LinePage> {
  const capBytes = o.maxLineLength * 4; // enough bytes for maxLineLength characters of UTF-8
  const lines: PagedLine[] = [];
  let lineNo = 1;
  let parts: Buffer[] = [];
  let partLen = 0;
  let overflow = false;
  let pending = false; // bytes seen since the last newline
  let pageBytes = 0;
  let hasMore = false;
  let stopped = false;

  /** Close the current line; returns true when the page is full. */
  const closeLine = (): boolean => {
    if (lineNo >= o.offset) {
      if (lines.length >= o.limit || (lines.length > 0 && pageBytes >= o.maxBytes)) {
        hasMore = true;
        return true;
      }
      let text = Buffer.concat(parts, partLen).toString('utf8');
      if (text.endsWith('\r')) text = text.slice(0, -1);
      let cut = overflow;
      if (text.length > o.maxLineLength) {
        text = text.slice(0, o.maxLineLength);
        cut = true;
      }
      lines.push({ n: lineNo, text, cut });
      pageBytes += Buffer.byteLength(text) + 8;
    }
    lineNo++;
    parts = [];
    partLen = 0;
    overflow = false;
    pending = false;
    return false;
  };

  outer: for (let position = 0; ; ) {
    io.check();
    // A fresh buffer per read: the line parts keep slices of the previous one.
    const buf = Buffer.allocUnsafe(CHUNK);
    const { bytesRead } = await fh.read(buf, 0, CHUNK, position);
    if (bytesRead === 0) break;
    position += bytesRead;
    const chunk = buf.subarray(0, bytesRead);
    let start = 0;
    while (start < chunk.length) {
      const nl = chunk.indexOf(10, start);
      const end = nl < 0 ? chunk.length : nl;
      if (end > start) {
        pending = true;
        if (lineNo >= o.offset) {
          const room = capBytes - partLen;
          if (room > 0) {
            const piece = chunk.subarray(start, Math.min(end, start + room));
            parts.push(piece);
            partLen += piece.length;
          }
          if (end - start > Math.max(0, room)) overflow = true;
        }
      }
      if (nl < 0) break;
      if (closeLine()) {
        stopped = true;
        break outer;
      }
      start = nl + 1;
    }
  }
  if (!stopped && pending) stopped = closeLine();
  return stopped ? { lines, hasMore } : { lines, hasMore, totalLines: lineNo - 1 };
}
