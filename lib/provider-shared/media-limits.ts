/**
 * Preflight of the images and documents a request carries, against the limits the provider
 * documents, before anything is sent. An item over a limit is sent as a short note instead (the
 * attachment's reference text, which names its path, stays beside it), so one oversized file
 * never turns into a request that fails every time it is retried. History is untouched: the
 * notes exist only in the request.
 *
 * Newer items win: the request budget is spent from the newest message back, so what the user
 * just attached goes in and older items give way first.
 *
 * Messages without a change are returned as the same objects, and a changed message is made
 * once per decision and reused, so providers that cache their conversion by message identity
 * (Anthropic) keep their cache across the rounds of a tool loop.
 */
import type { ContentBlock, DocumentBlock, ImageBlock, Message, ToolResultContent } from '../../plugin-api.js';
import { imageSize, type ImageMime } from '../tool-shared/image.js';
import { documentFallback, formatSize } from './attachments.js';
import { WindowPrefix } from './window-prefix.js';

/** What one provider accepts in one request. Sizes are base64 characters, as they travel. */
export interface MediaLimits {
  /** One image. */
  maxImageBase64: number;
  /** Longest side of an image in pixels (absent: the provider resizes). */
  maxImageSide?: number;
  /** Past `count` images in one request, a smaller side applies to every image (Anthropic). */
  manyImages?: { count: number; maxSide: number };
  /** Images in one request. */
  maxImages: number;
  /** The provider takes PDFs natively; false: documents go as their extracted text. */
  documents: boolean;
  /** Document pages in one request. */
  maxDocumentPages: number;
  /** Every image of a request together. */
  maxImagesBase64: number;
  /** Every document of a request together. */
  maxDocumentsBase64: number;
  /** Images and documents together (the request's size cap, less room for the text). */
  maxMediaBase64: number;
}

const MB = 1024 * 1024;
const b64 = (rawBytes: number) => Math.floor((rawBytes * 4) / 3);

/**
 * Anthropic Messages (platform.claude.com vision and pdf-support pages): 5 MB per base64 image,
 * 8000 px a side (2000 px once a request has more than 20 images), 100 images, a 32 MB request
 * and 100 PDF pages per request (600 on 1M-context models; 100 is the safe floor).
 */
export const ANTHROPIC_MEDIA_LIMITS: MediaLimits = Object.freeze({
  maxImageBase64: 5 * MB,
  maxImageSide: 8000,
  manyImages: { count: 20, maxSide: 2000 },
  maxImages: 100,
  documents: true,
  maxDocumentPages: 100,
  maxImagesBase64: 30 * MB,
  maxDocumentsBase64: 30 * MB,
  maxMediaBase64: 30 * MB,
});

/**
 * OpenAI (developers.openai.com images-vision and file-inputs guides): 20 MB per image, 500
 * images and 50 MB of image bytes per request; file inputs up to 100 pages and 32 MB per
 * request. `documents`: only OpenAI's own endpoints take file parts; compatible servers get text.
 */
export function openaiMediaLimits(official: boolean): MediaLimits {
  return official ? OPENAI_OFFICIAL : OPENAI_COMPATIBLE;
}
const OPENAI_OFFICIAL: MediaLimits = Object.freeze({
  maxImageBase64: b64(20 * MB),
  maxImages: 500,
  documents: true,
  maxDocumentPages: 100,
  maxImagesBase64: b64(50 * MB),
  maxDocumentsBase64: b64(32 * MB),
  maxMediaBase64: b64(50 * MB),
});
const OPENAI_COMPATIBLE: MediaLimits = Object.freeze({ ...OPENAI_OFFICIAL, documents: false });

/**
 * Gemini (ai.google.dev image-understanding and document-processing pages): inline data for a
 * request up to 20 MB in all, PDFs up to 1000 pages, 3600 images.
 */
export const GEMINI_MEDIA_LIMITS: MediaLimits = Object.freeze({
  maxImageBase64: 19 * MB,
  maxImages: 3600,
  documents: true,
  maxDocumentPages: 1000,
  maxImagesBase64: 19 * MB,
  maxDocumentsBase64: 19 * MB,
  maxMediaBase64: 19 * MB,
});

/** A media item's place: message, block, and (in a tool result) the content index. */
interface Item {
  m: number;
  b: number;
  c?: number;
  block: ImageBlock | DocumentBlock;
}

const IMAGE_MIMES = new Set<string>(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);
/** Base64 characters decoded to read an image header (a JPEG's frame header may follow its EXIF). */
const HEADER_CHARS = 256 * 1024;

const sides = new WeakMap<ImageBlock, { width: number; height: number } | null>();
function sideOf(img: ImageBlock): number | undefined {
  let dims = sides.get(img);
  if (dims === undefined) {
    dims = null;
    if (img.data && IMAGE_MIMES.has(img.mimeType)) dims = imageSize(Buffer.from(img.data.slice(0, HEADER_CHARS - (HEADER_CHARS % 4)), 'base64'), img.mimeType as ImageMime) ?? null;
    sides.set(img, dims);
  }
  return dims ? Math.max(dims.width, dims.height) : undefined;
}

/** A message's media items, at message index `m`. */
function collect(items: Item[], msg: Message, m: number): void {
  msg.content.forEach((block, b) => {
    if ((block.type === 'image' || block.type === 'document') && (block.data || block.type === 'document')) items.push({ m, b, block });
    else if (block.type === 'tool_result') block.content.forEach((c, ci) => c.type === 'image' && c.data && items.push({ m, b, c: ci, block: c }));
  });
}

/** The media of a window, found once per message: a tool loop's history is scanned every round. */
const scanned = new WindowPrefix<Item[]>(() => [], collect);

function itemsOf(messages: Message[]): readonly Item[] {
  return scanned.advance(messages);
}

/** Why each item cannot go (key `m:b[:c]`), spending the budgets from the newest item back. */
function decide(items: readonly Item[], limits: MediaLimits, maxSide: number | undefined): Map<string, string> {
  const out = new Map<string, string>();
  let images = 0;
  let imageChars = 0;
  let docChars = 0;
  let pages = 0;
  let media = 0;
  for (let i = items.length - 1; i >= 0; i--) {
    const it = items[i]!;
    const key = `${it.m}:${it.b}${it.c === undefined ? '' : `:${it.c}`}`;
    const why = (reason: string) => out.set(key, reason);
    if (it.block.type === 'image') {
      const len = it.block.data!.length;
      const side = maxSide ? sideOf(it.block) : undefined;
      if (len > limits.maxImageBase64) why(`it is ${formatSize(len)} encoded, over the ${formatSize(limits.maxImageBase64)} per image this provider accepts`);
      else if (maxSide && side !== undefined && side > maxSide) why(`it is ${side} px on its longest side, over the ${maxSide} px this provider accepts`);
      else if (images + 1 > limits.maxImages) why(`the request already has the ${limits.maxImages} images this provider accepts`);
      else if (imageChars + len > limits.maxImagesBase64 || media + len > limits.maxMediaBase64) why('newer images and documents already fill what one request may carry');
      else {
        images++;
        imageChars += len;
        media += len;
      }
      continue;
    }
    const d = it.block;
    if (!limits.documents) {
      why('');
      continue;
    }
    if (!d.data) continue; // nothing to send natively: the converter falls back to its text
    const len = d.data.length;
    const n = d.pages ?? 1;
    if (n > limits.maxDocumentPages) why(`it has ${n} pages, over the ${limits.maxDocumentPages} pages per request this provider accepts`);
    else if (pages + n > limits.maxDocumentPages) why(`newer documents already use the ${limits.maxDocumentPages} pages one request may carry`);
    else if (docChars + len > limits.maxDocumentsBase64 || media + len > limits.maxMediaBase64) why(`it is ${formatSize(len)} encoded and newer files already fill what one request may carry`);
    else {
      pages += n;
      docChars += len;
      media += len;
    }
  }
  return out;
}

function imageNote(img: ImageBlock, why: string): { type: 'text'; text: string } {
  const where = img.path ? ` ${JSON.stringify(img.path)}` : '';
  return { type: 'text', text: `[image${where} (${img.mimeType}) is not included in this request: ${why}]` };
}

const made = new WeakMap<Message, Map<MediaLimits, { sig: string; out: Message }>>();

/** The messages with what does not fit `limits` replaced by notes (documents by their text when the provider has no native form). */
export function fitMedia(messages: Message[], limits: MediaLimits): Message[] {
  const items = itemsOf(messages);
  if (items.length === 0) return messages;
  let drop = decide(items, limits, limits.maxImageSide);
  const many = limits.manyImages;
  if (many) {
    const kept = items.filter((it) => it.block.type === 'image' && !drop.has(`${it.m}:${it.b}${it.c === undefined ? '' : `:${it.c}`}`)).length;
    if (kept > many.count) drop = decide(items, limits, Math.min(many.maxSide, limits.maxImageSide ?? many.maxSide));
  }
  if (drop.size === 0) return messages;
  const byMessage = new Map<number, string[]>();
  for (const [key, why] of drop) {
    const m = Number(key.slice(0, key.indexOf(':')));
    // Index-free within the message: the same message at another place decides the same way.
    (byMessage.get(m) ?? byMessage.set(m, []).get(m)!).push(`${key.slice(key.indexOf(':'))}=${why}`);
  }
  return messages.map((msg, m) => {
    const keys = byMessage.get(m);
    if (!keys) return msg;
    const sig = keys.sort().join('|');
    let memo = made.get(msg);
    if (!memo) made.set(msg, (memo = new Map()));
    const hit = memo.get(limits);
    if (hit?.sig === sig) return hit.out;
    const out = rewrite(msg, m, drop);
    memo.set(limits, { sig, out });
    return out;
  });
}

function rewrite(msg: Message, m: number, drop: Map<string, string>): Message {
  const content = msg.content.map((block, b): ContentBlock => {
    if (block.type === 'tool_result') {
      let changed = false;
      const inner = block.content.map((c, ci): ToolResultContent => {
        const why = c.type === 'image' ? drop.get(`${m}:${b}:${ci}`) : undefined;
        if (why === undefined || c.type !== 'image') return c;
        changed = true;
        return imageNote(c, why);
      });
      return changed ? { ...block, content: inner } : block;
    }
    const why = drop.get(`${m}:${b}`);
    if (why === undefined) return block;
    if (block.type === 'image') return imageNote(block, why);
    if (block.type === 'document') return documentFallback(block, why || undefined);
    return block;
  });
  return { ...msg, content };
}
