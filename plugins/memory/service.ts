/**
 * The `memory` service, for a WebUI memory page (and hosts): list, read, write and delete memory
 * files, and review what silent extraction proposed (accept into a file, or dismiss). It goes
 * through the same store and checks as the Memory tool. Project-scope paths need `workdir`.
 *
 * Consumers import this type only (`import type`), as gateway does with the mcp service.
 */
import type { Disposable } from '../../plugin-api.js';
import { listAll, type MemoryFileInfo } from './files.js';
import { virtualOf } from './paths.js';
import type { MemoryStore } from './store.js';
import type { MemoryProposal, UnreviewedList } from './unreviewed.js';

export const MEMORY_SERVICE = 'memory';

export interface MemoryService {
  /** Memory files of both scopes (the project's only with `workdir`). */
  list(opts?: { workdir?: string }): Promise<MemoryFileInfo[]>;
  /** A file's text, by virtual path (`/memories/...`). */
  read(path: string, opts?: { workdir?: string }): Promise<string>;
  /** Create or replace a file. */
  write(path: string, text: string, opts?: { workdir?: string }): Promise<void>;
  /** Delete a file or folder. */
  delete(path: string, opts?: { workdir?: string }): Promise<void>;
  /** Proposals waiting for review, oldest first. */
  unreviewed(): Promise<MemoryProposal[]>;
  /**
   * Accept a proposal: its text (or `text`, edited) is appended as a list item to its file (or
   * `path`), and it leaves the list. Resolves to the file's virtual path.
   */
  accept(id: string, opts?: { path?: string; text?: string; workdir?: string }): Promise<string>;
  /** Dismiss a proposal; false when there was none with that id. */
  dismiss(id: string): Promise<boolean>;
  /** Resolves once no extraction is waiting or running (tests, orderly hosts). */
  whenIdle(): Promise<void>;
  /**
   * Called after a change made here, by the Memory tool, or a new proposal from extraction (not
   * changes other processes make). `proposed` is set when the unreviewed list gained items.
   */
  onChange(listener: (change: MemoryChange) => void): Disposable;
}

export interface MemoryChange {
  kind: 'files' | 'unreviewed';
  /** The file written or deleted (files), the proposals added (unreviewed, from extraction). */
  path?: string;
  proposed?: number;
  /** What extraction proposed, for a conversation that ran in agent-dev mode (its clients show it). */
  extracted?: { conversationId: string; items: Array<{ id: string; text: string; scope: string; file?: string }> };
}

/** Who tells the service's listeners (index.ts also feeds it the tool's edits and extraction). */
export class MemoryChanges {
  private readonly listeners = new Set<(c: MemoryChange) => void>();
  constructor(private readonly warn: (message: string) => void) {}
  on(listener: (c: MemoryChange) => void): Disposable {
    this.listeners.add(listener);
    return { dispose: () => void this.listeners.delete(listener) };
  }
  emit(change: MemoryChange): void {
    for (const l of this.listeners) {
      try {
        l(change);
      } catch (err) {
        this.warn(`a memory change listener failed: ${(err as Error)?.message ?? String(err)}`);
      }
    }
  }
}

export function createMemoryService(store: MemoryStore, list: UnreviewedList, home: string, whenIdle: () => Promise<void>, changes: MemoryChanges): MemoryService {
  return {
    list: (opts = {}) => listAll(opts.workdir ? { home, workdir: opts.workdir } : { home }),
    read: (p, opts = {}) => store.read(p, opts.workdir),
    async write(p, text, opts = {}) {
      await store.create(p, text, opts.workdir, { overwrite: true });
      changes.emit({ kind: 'files', path: p });
    },
    async delete(p, opts = {}) {
      await store.delete(p, opts.workdir);
      changes.emit({ kind: 'files', path: p });
    },
    unreviewed: () => list.list(),
    async accept(id, opts = {}) {
      const pending = (await list.list()).find((p) => p.id === id);
      if (!pending) throw new Error(`no unreviewed memory with id "${id}"`);
      const workdir = opts.workdir ?? pending.workdir;
      const target = opts.path ?? virtualOf(pending.scope, [pending.file]);
      const text = (opts.text ?? pending.text).trim();
      if (!text) throw new Error('the memory text is empty');
      // Written first, taken from the list second: a failed write leaves the proposal pending.
      const written = await store.append(target, `- ${text.replace(/\n+/g, ' ')}`, workdir);
      await list.take(id);
      changes.emit({ kind: 'files', path: written });
      changes.emit({ kind: 'unreviewed' });
      return written;
    },
    async dismiss(id) {
      const gone = (await list.take(id)) !== undefined;
      if (gone) changes.emit({ kind: 'unreviewed' });
      return gone;
    },
    whenIdle,
    onChange: (listener) => changes.on(listener),
  };
}
