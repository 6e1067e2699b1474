/**
 * Caps on what one MCP tool result may carry into the conversation. A result goes into the next
 * provider request, the stored tool message and a gateway frame, every time; a server that
 * answers with megabytes must not take the context window (or the socket) with it. Like Bash's
 * output: the text keeps its head and its tail with a marker saying how much of the middle was
 * left out; an image over the size limit becomes a text note; structured content too big to keep
 * is dropped from `details` (the model never sees it; the text mirror is what it reads).
 */
import type { JsonObject, ToolResult, ToolResultContent } from '../../plugin-api.js';

export interface ResultLimits {
  /** UTF-8 bytes of text one result keeps (all its text blocks together). */
  maxResultBytes: number;
  /** Decoded bytes of one image. */
  maxImageBytes: number;
}

/** "8.0 MB", "512 KB", "900 bytes". */
export function formatBytes(n: number): string {
  if (n < 1024) return `${n} bytes`;
  if (n < 1024 * 1024) return `${Math.round(n / 1024)} KB`;
  return `${(n / (1024 * 1024)).toFixed(1)} MB`;
}

/** Decoded size of base64 text, without decoding it. */
export function base64Bytes(data: string): number {
  return Math.floor((data.length * 3) / 4) - (data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0);
}

/** The first `n` bytes of `text` as a string, never ending inside a character. */
function headBytes(text: string, n: number): string {
  const buf = Buffer.from(text, 'utf8');
  let end = Math.min(n, buf.length);
  // Back off continuation bytes (10xxxxxx) so the cut falls between characters.
  while (end > 0 && end < buf.length && (buf[end]! & 0xc0) === 0x80) end--;
  return buf.subarray(0, end).toString('utf8');
}

/** The last `n` bytes of `text` as a string, never starting inside a character. */
function tailBytes(text: string, n: number): string {
  const buf = Buffer.from(text, 'utf8');
  let start = Math.max(0, buf.length - n);
  while (start < buf.length && (buf[start]! & 0xc0) === 0x80) start++;
  return buf.subarray(start).toString('utf8');
}

const marker = (omitted: number) => `\n\n[... ${omitted} bytes of MCP output omitted (over mcp.maxResultBytes) ...]\n\n`;

/**
 * Keep the first and the last `max / 2` bytes of the text across all text blocks, in order: blocks
 * wholly in the middle go, the blocks at the two cuts are trimmed, one marker stands where the
 * text was cut. Images stay where they were.
 */
function capText(content: ToolResultContent[], max: number): { content: ToolResultContent[]; omitted: number } {
  const sizes = content.map((b) => (b.type === 'text' ? Buffer.byteLength(b.text, 'utf8') : 0));
  const total = sizes.reduce((a, b) => a + b, 0);
  if (total <= max) return { content, omitted: 0 };
  const keepHead = sizes.map(() => 0);
  const keepTail = sizes.map(() => 0);
  let budget = Math.floor(max / 2);
  for (let i = 0; i < content.length && budget > 0; i++) {
    keepHead[i] = Math.min(sizes[i]!, budget);
    budget -= keepHead[i]!;
  }
  budget = max - Math.floor(max / 2);
  for (let i = content.length - 1; i >= 0 && budget > 0; i--) {
    keepTail[i] = Math.min(sizes[i]! - keepHead[i]!, budget);
    budget -= keepTail[i]!;
  }
  const out: ToolResultContent[] = [];
  let marked = false;
  for (let i = 0; i < content.length; i++) {
    const b = content[i]!;
    if (b.type !== 'text') {
      out.push(b);
      continue;
    }
    const size = sizes[i]!;
    if (keepHead[i]! + keepTail[i]! >= size) {
      out.push(b);
      continue;
    }
    const head = keepHead[i] ? headBytes(b.text, keepHead[i]!) : '';
    const tail = keepTail[i] ? tailBytes(b.text, keepTail[i]!) : '';
    const mark = marked ? '' : marker(total - max);
    marked = true;
    const text = head + mark + tail;
    if (text) out.push({ type: 'text', text });
  }
  return { content: out, omitted: total - max };
}

function capImages(content: ToolResultContent[], max: number): { content: ToolResultContent[]; dropped: number } {
  let dropped = 0;
  const out = content.map((b): ToolResultContent => {
    if (b.type !== 'image' || !b.data) return b;
    const size = base64Bytes(b.data);
    if (size <= max) return b;
    dropped++;
    return { type: 'text', text: `[${b.mimeType} image of ${formatBytes(size)} left out: larger than the ${formatBytes(max)} mcp.maxImageBytes allows]` };
  });
  return { content: dropped ? out : content, dropped };
}

/**
 * Apply the limits. Returns the same result when nothing is over; otherwise `details.truncated`
 * says what was cut (`omittedBytes`, `droppedImages`, `structuredContentBytes`).
 */
export function capResult(result: ToolResult, limits: ResultLimits): ToolResult {
  const images = capImages(result.content, limits.maxImageBytes);
  const text = capText(images.content, limits.maxResultBytes);
  let details = result.details;
  let structuredBytes = 0;
  const structured = details?.structuredContent;
  if (structured !== undefined) {
    structuredBytes = Buffer.byteLength(JSON.stringify(structured), 'utf8');
    if (structuredBytes > limits.maxResultBytes) {
      const { structuredContent: _dropped, ...rest } = details!;
      details = rest;
    } else structuredBytes = 0;
  }
  if (!text.omitted && !images.dropped && !structuredBytes) return result;
  const truncated: JsonObject = {
    ...(text.omitted ? { omittedBytes: text.omitted } : {}),
    ...(images.dropped ? { droppedImages: images.dropped } : {}),
    ...(structuredBytes ? { structuredContentBytes: structuredBytes } : {}),
  };
  return { ...result, content: text.content, details: { ...details, truncated } };
}
