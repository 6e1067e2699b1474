/**
 * The memory overview is pinned per conversation: the list of files as it was at the
 * conversation's first turn is what its system prompt shows for the rest of its life, so the
 * cached prompt prefix never changes under it. What changed since (a file written in another
 * conversation, one the model created, one the user deleted on the Memory page) reaches the
 * model as a short `<memory-update>` on the newest user message of each request, recomputed at
 * every run: earlier messages never carry it, so everything before the newest turn stays
 * byte-identical and cached.
 *
 * The pin lives in the conversation's meta (`memoryOverview`) through the history service, so
 * it survives restarts and goes when the conversation is deleted; without a history service it
 * is kept in this process only. Both are bounded (an LRU of conversations).
 */
import type { JsonObject, Logger, Message } from '../../plugin-api.js';
import { neutralizeClosingTag } from '../../core/define-plugin.js';
import type { MemoryFileInfo } from './files.js';

/** What the overview shows of a file: enough to rebuild the same text. */
export interface PinnedFile {
  path: string;
  size: number;
  firstLine: string;
}

/** The subset of the history service used here (history-sqlite provides it). */
export interface MetaStore {
  getConversation(id: string, page?: { limit?: number }): Promise<{ meta: JsonObject } | undefined>;
  setConversationMeta(id: string, patch: JsonObject): Promise<JsonObject | undefined>;
}

const META_KEY = 'memoryOverview';
const MAX_CACHED = 256;
const MAX_LISTED_CHANGES = 20;

export class OverviewPins {
  private readonly cache = new Map<string, PinnedFile[]>();

  constructor(
    private readonly store: () => MetaStore | undefined,
    private readonly logger: Logger,
  ) {}

  /** The conversation's pinned files; pins `current` when it has none yet. */
  async pinFor(conversationId: string, current: MemoryFileInfo[]): Promise<PinnedFile[]> {
    const known = this.cache.get(conversationId) ?? (await this.read(conversationId));
    if (known) return this.remember(conversationId, known);
    const pinned = current.map(({ path, size, firstLine }) => ({ path, size, firstLine }));
    this.remember(conversationId, pinned);
    // Not awaited: the request needs only the pin in hand; the store keeps it for later runs.
    void this.store()
      ?.setConversationMeta(conversationId, { [META_KEY]: { files: pinned } as unknown as JsonObject })
      .catch((err: unknown) => this.logger.warn(`cannot store the memory overview of conversation ${conversationId}: ${(err as Error)?.message ?? String(err)}`));
    return pinned;
  }

  private async read(conversationId: string): Promise<PinnedFile[] | undefined> {
    const store = this.store();
    if (!store) return undefined;
    try {
      const detail = await store.getConversation(conversationId, { limit: 1 });
      const files = (detail?.meta?.[META_KEY] as { files?: unknown } | undefined)?.files;
      if (!Array.isArray(files)) return undefined;
      return files.filter((f): f is PinnedFile => !!f && typeof f === 'object' && typeof f.path === 'string' && typeof f.size === 'number' && typeof f.firstLine === 'string');
    } catch (err) {
      this.logger.warn(`cannot read the memory overview of conversation ${conversationId}: ${(err as Error)?.message ?? String(err)}`);
      return undefined;
    }
  }

  private remember(conversationId: string, files: PinnedFile[]): PinnedFile[] {
    this.cache.delete(conversationId);
    this.cache.set(conversationId, files);
    if (this.cache.size > MAX_CACHED) this.cache.delete(this.cache.keys().next().value!);
    return files;
  }

  forget(conversationId: string): void {
    this.cache.delete(conversationId);
  }
}

/** What changed between the pinned list and the files now, as the model's short update; undefined when nothing did. */
export function memoryUpdateText(pinned: PinnedFile[], now: MemoryFileInfo[]): string | undefined {
  const before = new Map(pinned.map((f) => [f.path, f]));
  const lines: string[] = [];
  let more = 0;
  const add = (line: string) => (lines.length < MAX_LISTED_CHANGES ? lines.push(line) : more++);
  for (const f of now) {
    const old = before.get(f.path);
    before.delete(f.path);
    if (!old) add(`- new: ${f.path}${f.firstLine ? `: ${f.firstLine}` : ''}`);
    else if (old.size !== f.size || old.firstLine !== f.firstLine) add(`- changed: ${f.path}${f.firstLine ? `: ${f.firstLine}` : ''}`);
  }
  for (const f of before.values()) add(`- removed: ${f.path}`);
  if (!lines.length) return undefined;
  if (more) lines.push(`- ... and ${more} more changes: view /memories to see them all.`);
  // First lines are the files' own words: none may close the wrapper early.
  const body = neutralizeClosingTag(lines.join('\n'), 'memory-update');
  return ['<memory-update>', 'Your memory changed since the overview at the start of this conversation (view a file before relying on it):', body, '</memory-update>'].join('\n');
}

/**
 * The request's messages with `update` appended to the newest user message, as a copy made once
 * per (message, update): the same objects every round, so a provider's per-message conversion
 * cache keeps working.
 */
export class UpdateAttacher {
  private readonly copies = new WeakMap<Message, { text: string; copy: Message }>();

  attach(messages: Message[], update: string): Message[] {
    let at = -1;
    for (let i = messages.length - 1; i >= 0; i--) {
      if (messages[i]!.role === 'user') {
        at = i;
        break;
      }
    }
    if (at < 0) return messages;
    const original = messages[at]!;
    let entry = this.copies.get(original);
    if (!entry || entry.text !== update) {
      entry = { text: update, copy: { ...original, content: [...original.content, { type: 'text', text: update }] } };
      this.copies.set(original, entry);
    }
    const out = messages.slice();
    out[at] = entry.copy;
    return out;
  }
}
