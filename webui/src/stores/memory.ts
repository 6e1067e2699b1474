/**
 * Memory (the memory plugin's gateway messages, docs/gateway-protocol.md "Memory"): the memory
 * files of both scopes and the proposals extraction left for review, reloaded on every
 * (re)connect and on each `memory.changed` broadcast. The shapes mirror plugins/memory/files.ts
 * and unreviewed.ts; they are restated because the WebUI's type-check sees only the gateway
 * protocol, not the plugin's sources.
 */
import { defineStore } from 'pinia';
import { computed, ref } from 'vue';
import { client, type ClientRequest } from '../api/client.js';
import { useChatStore } from './chat.js';

export type MemoryScope = 'user' | 'project';

export interface MemoryFile {
  /** Virtual path (`/memories/...`, project files under `/memories/project/`). */
  path: string;
  scope: MemoryScope;
  size: number;
  mtimeMs: number;
  firstLine: string;
}

export interface MemoryProposal {
  id: string;
  text: string;
  scope: MemoryScope;
  /** Suggested file, relative to the scope. */
  file: string;
  workdir?: string;
  source: { conversationId: string; messageId?: string; runId?: string };
  provider?: string;
  model?: string;
  createdAt: number;
}

/** What extraction proposed after an agent-dev turn (the `extracted` of a `memory.changed`). */
export interface Extraction {
  conversationId: string;
  items: Array<{ id: string; text: string; scope: string; file?: string }>;
}

/** Conversations whose latest extraction is kept for display (the newest win). */
const MAX_EXTRACTIONS = 20;

interface Listing {
  workdir: string;
  files: MemoryFile[];
  unreviewed: MemoryProposal[];
}

/** Plugin messages are not in the built-in protocol union; the handler validates them. */
function memoryRequest<T>(msg: { type: string; [field: string]: unknown }): Promise<T> {
  return client().request<T>(msg as unknown as ClientRequest);
}

/** The proposal's file as a virtual path, as the server's accept writes it. */
export function proposalPath(p: MemoryProposal): string {
  return p.scope === 'project' ? `/memories/project/${p.file}` : `/memories/${p.file}`;
}

export const useMemoryStore = defineStore('memory', () => {
  /** null until the first answer. */
  const files = ref<MemoryFile[] | null>(null);
  const unreviewed = ref<MemoryProposal[]>([]);
  /** The folder whose project memory is listed (the composer's workdir, or the server's). */
  const workdir = ref('');
  const loadError = ref<string | null>(null);
  /** Proposals being accepted or dismissed (their buttons are disabled meanwhile). */
  const busy = ref(new Set<string>());
  /** The latest extraction per conversation, from agent-dev turns: the chat shows it under the transcript. */
  const extractions = ref(new Map<string, Extraction>());
  let seq = 0;

  const userFiles = computed(() => (files.value ?? []).filter((f) => f.scope === 'user'));
  const projectFiles = computed(() => (files.value ?? []).filter((f) => f.scope === 'project'));
  const hasUnreviewed = computed(() => unreviewed.value.length > 0);

  const wd = () => useChatStore().prefs.workdir.trim();

  function init(): void {
    const c = client();
    c.on('extension', (m) => {
      if (m.name !== 'memory.changed') return;
      const shown = (m.data as { extracted?: Extraction[] } | undefined)?.extracted;
      if (Array.isArray(shown) && shown.length) {
        const next = new Map(extractions.value);
        for (const e of shown) {
          if (!e || typeof e.conversationId !== 'string' || !Array.isArray(e.items)) continue;
          next.delete(e.conversationId);
          next.set(e.conversationId, e);
        }
        while (next.size > MAX_EXTRACTIONS) next.delete(next.keys().next().value!);
        extractions.value = next;
      }
      void load();
    });
    c.onStatus((s) => {
      if (s.state === 'open') void load();
    });
  }

  async function load(): Promise<void> {
    const mine = ++seq;
    try {
      const got = await memoryRequest<Listing>({ type: 'memory.list', ...(wd() ? { workdir: wd() } : {}) });
      if (mine !== seq) return;
      files.value = got.files;
      unreviewed.value = got.unreviewed;
      workdir.value = got.workdir;
      loadError.value = null;
    } catch (err) {
      if (mine === seq) loadError.value = (err as Error).message;
    }
  }

  // Files are named by path in the listed folder's scope: the same workdir goes with each request.
  const scoped = () => (workdir.value ? { workdir: workdir.value } : {});

  async function read(path: string): Promise<string> {
    return (await memoryRequest<{ text: string }>({ type: 'memory.read', path, ...scoped() })).text;
  }

  async function write(path: string, text: string): Promise<void> {
    await memoryRequest({ type: 'memory.write', path, text, ...scoped() });
    await load();
  }

  async function remove(path: string): Promise<void> {
    await memoryRequest({ type: 'memory.delete', path, ...scoped() });
    await load();
  }

  async function review(id: string, action: 'accept' | 'dismiss'): Promise<void> {
    busy.value = new Set([...busy.value, id]);
    try {
      await memoryRequest({ type: `memory.${action}`, proposalId: id });
      unreviewed.value = unreviewed.value.filter((p) => p.id !== id);
      await load();
    } finally {
      const next = new Set(busy.value);
      next.delete(id);
      busy.value = next;
    }
  }

  function dismissExtraction(conversationId: string): void {
    const next = new Map(extractions.value);
    next.delete(conversationId);
    extractions.value = next;
  }

  return { extractions, dismissExtraction, files, unreviewed, workdir, loadError, busy, userFiles, projectFiles, hasUnreviewed, init, load, read, write, remove, accept: (id: string) => review(id, 'accept'), dismiss: (id: string) => review(id, 'dismiss') };
});
