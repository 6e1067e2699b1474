/**
 * The active segments this process has loaded, kept up to date by its own writes, so a run on a
 * long conversation does not read and parse every stored message again at each turn start.
 *
 * Other processes writing the same file are noticed through SQLite's `data_version` (it changes
 * only when another connection commits), which empties the cache. Bounded by a total message
 * count across conversations, least recently used first out.
 */
import type { Message } from '../../plugin-api.js';

interface Entry {
  segmentId: string;
  messages: Message[];
  index: Map<string, number>;
}

export class WindowCache {
  private entries = new Map<string, Entry>();
  private size = 0;
  private version: number | undefined;

  constructor(
    private readonly dataVersion: () => number,
    private readonly maxMessages = 50_000,
  ) {}

  /** The cached window of the segment, or undefined (another process wrote, or never loaded). */
  get(conversationId: string, segmentId: string): Message[] | undefined {
    this.checkVersion();
    const e = this.entries.get(conversationId);
    if (!e || e.segmentId !== segmentId) return undefined;
    this.entries.delete(conversationId);
    this.entries.set(conversationId, e);
    return e.messages.slice();
  }

  set(conversationId: string, segmentId: string, messages: Message[]): void {
    this.checkVersion();
    this.forget(conversationId);
    if (messages.length > this.maxMessages / 2) return; // one giant window would evict every other
    this.entries.set(conversationId, { segmentId, messages: messages.slice(), index: new Map(messages.map((m, i) => [m.id, i])) });
    this.size += messages.length;
    for (const [id, e] of this.entries) {
      if (this.size <= this.maxMessages) break;
      this.entries.delete(id);
      this.size -= e.messages.length;
    }
  }

  /** This process stored `m` in the conversation's active segment: new at the end, or in place. */
  upsert(conversationId: string, m: Message): void {
    const e = this.entries.get(conversationId);
    if (!e) return;
    const at = e.index.get(m.id);
    if (at !== undefined) e.messages[at] = m;
    else {
      e.index.set(m.id, e.messages.length);
      e.messages.push(m);
      this.size++;
    }
  }

  /** The conversation's segments or messages changed in a way not worth mirroring (truncation, a checkpoint, deletion). */
  forget(conversationId: string): void {
    const e = this.entries.get(conversationId);
    if (!e) return;
    this.entries.delete(conversationId);
    this.size -= e.messages.length;
  }

  private checkVersion(): void {
    const v = this.dataVersion();
    if (this.version !== undefined && v !== this.version) {
      this.entries.clear();
      this.size = 0;
    }
    this.version = v;
  }
}
