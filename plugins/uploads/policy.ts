/**
 * The `messages` tap at MessageStages.CONTEXT_POLICY: what of the history a request carries.
 *
 * - Attachment blocks are expanded (expand.ts): the reference, plus the file in its native form.
 * - Image bytes are sent for the latest `uploads.imageWindowTurns` user turns only (PDF bytes
 *   too; an older PDF goes as its extracted text); older ones become a note naming the path.
 *   Images returned by tools keep their bytes for `uploads.toolImageWindowTurns` turns.
 * - Hosted-search blocks of earlier turns are not sent again (the UI still shows them from
 *   history); the current turn's stay, as a provider may continue its own search.
 *
 * History is never changed. Each message's request form is made once per form and reused, so a
 * message is the same object in every round of a run (the Anthropic provider caches its
 * conversion by message identity).
 */
import type { AttachmentBlock, ContentBlock, ImageBlock, Message, RequestContext, ToolResultContent } from '../../plugin-api.js';
import { attachmentReference } from '../../lib/provider-shared/attachments.js';
import { expandAttachment } from './expand.js';
import { uploadsSettings, type UploadsSettings } from './settings.js';
import type { UploadStore } from './store.js';

/** What happens to one message in this request. */
interface Form {
  /** User images (and PDF bytes) keep their bytes. */
  media: boolean;
  /** Tool-result images keep their bytes. */
  toolMedia: boolean;
  /** Hosted searches are sent. */
  searches: boolean;
}

const key = (f: Form, s: UploadsSettings) => `${f.media ? 'm' : '-'}${f.toolMedia ? 't' : '-'}${f.searches ? 's' : '-'}${s.inlineTextBytes}`;

export class ContextPolicy {
  private made = new WeakMap<Message, Map<string, Promise<Message>>>();

  constructor(private readonly store: UploadStore) {}

  async apply(messages: Message[], ctx: RequestContext): Promise<Message[]> {
    const s = uploadsSettings(ctx.settings);
    // The turn each message belongs to, counted back (1 = the current turn): one more than the
    // real user messages after it (a user message opens its turn; synthetic ones do not count).
    const turn: number[] = new Array(messages.length);
    let after = 0;
    for (let i = messages.length - 1; i >= 0; i--) {
      const m = messages[i]!;
      turn[i] = after + 1;
      if (m.role === 'user' && !m.meta?.synthetic) after++;
    }
    // Most messages need nothing: only those that do are awaited, and a window with none is returned as it came.
    let pending: Array<Promise<void>> | undefined;
    const out = messages.slice();
    for (let i = 0; i < messages.length; i++) {
      const t = turn[i]!;
      const form = this.formOf(messages[i]!, { media: t <= s.imageWindowTurns, toolMedia: t <= s.toolImageWindowTurns, searches: t <= 1 }, s);
      if (form instanceof Promise) (pending ??= []).push(form.then((m) => void (out[i] = m)));
    }
    if (!pending) return messages;
    await Promise.all(pending);
    return out;
  }

  private formOf(m: Message, f: Form, s: UploadsSettings): Message | Promise<Message> {
    if (!needsWork(m, f)) return m;
    let forms = this.made.get(m);
    if (!forms) this.made.set(m, (forms = new Map()));
    const k = key(f, s);
    let hit = forms.get(k);
    if (!hit) {
      hit = this.rewrite(m, f, s);
      forms.set(k, hit);
      // A failed expansion (a read error) is tried again next round rather than remembered.
      hit.catch(() => forms!.delete(k));
    }
    return hit;
  }

  private async rewrite(m: Message, f: Form, s: UploadsSettings): Promise<Message> {
    const out: ContentBlock[] = [];
    for (const b of m.content) {
      if (b.type === 'attachment') out.push(...(await this.expand(b, f, s)));
      else if (b.type === 'image' && b.data && !f.media) out.push(imageNote(b, 'attached in an earlier turn'));
      else if (b.type === 'document' && b.data && !f.media) {
        const { data: _bytes, ...rest } = b;
        out.push(rest);
      }
      else if (b.type === 'hosted_search' && !f.searches) continue;
      else if (b.type === 'tool_result' && !f.toolMedia && b.content.some((c) => c.type === 'image' && c.data)) {
        out.push({ ...b, content: b.content.map((c): ToolResultContent => (c.type === 'image' && c.data ? imageNote(c, 'returned by a tool in an earlier turn') : c)) });
      } else out.push(b);
    }
    return { ...m, content: out };
  }

  private expand(b: AttachmentBlock, f: Form, s: UploadsSettings): Promise<ContentBlock[]> {
    // The store's record wins only when it is this file (a home moved elsewhere keeps its ids); else the block's path is read as it is.
    const found = this.store.get(b.uploadId);
    const rec = found && (found.path === b.path || (found.size === b.size && found.mediaType === b.mediaType)) ? found : undefined;
    const a = rec && rec.path !== b.path ? { ...b, path: rec.path } : b;
    // A file that cannot be read (permissions, a disk error) must not fail the run: the model gets the reference and why.
    return expandAttachment(a, { settings: s, media: f.media, ...(rec ? { isText: rec.text } : {}) }).catch((err: Error) => [
      { type: 'text' as const, text: attachmentReference(a, `It could not be read for this request (${err.message})`) },
    ]);
  }
}

function needsWork(m: Message, f: Form): boolean {
  for (const b of m.content) {
    if (b.type === 'attachment') return true;
    if ((b.type === 'image' || b.type === 'document') && b.data && !f.media) return true;
    if (b.type === 'hosted_search' && !f.searches) return true;
    if (b.type === 'tool_result' && !f.toolMedia && b.content.some((c) => c.type === 'image' && c.data)) return true;
  }
  return false;
}

/** What the model reads instead of an image whose bytes this request leaves out. */
function imageNote(img: ImageBlock, when: string): { type: 'text'; text: string } {
  const where = img.path ? ` ${JSON.stringify(img.path)}` : '';
  const again = img.path ? '; open it again with the Read or Image tool by that path if you need to see it' : '';
  return { type: 'text', text: `[image${where} (${img.mimeType}) ${when} is no longer included${again}]` };
}
