/**
 * The working folder for tools runs: the server's default (its dedicated workspace, asked with
 * `workdir.check`), the folders used recently (remembered in this browser, newest first,
 * bounded), and a check of a typed folder against the server (exists, is a folder).
 */
import { defineStore } from 'pinia';
import { ref } from 'vue';
import { client, type ClientRequest } from '../api/client.js';

const RECENT_KEY = 'liveagent.recentWorkdirs';
/** Folders remembered at most. */
export const MAX_RECENT = 8;

/** `list` with `dir` first, once, bounded. */
export function withRecent(list: readonly string[], dir: string): string[] {
  const d = dir.trim();
  if (!d) return [...list];
  return [d, ...list.filter((x) => x !== d)].slice(0, MAX_RECENT);
}

function loadRecent(): string[] {
  try {
    const v = JSON.parse(localStorage.getItem(RECENT_KEY) ?? '[]') as unknown;
    return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string' && x.length > 0).slice(0, MAX_RECENT) : [];
  } catch {
    return [];
  }
}

export const useWorkdirStore = defineStore('workdir', () => {
  /** The folder a run without a chosen one works in (null until the server said). */
  const defaultPath = ref<string | null>(null);
  const recent = ref<string[]>(loadRecent());

  async function check(dir?: string): Promise<string> {
    const data = await client().request<{ path: string; isDefault: boolean }>({ type: 'workdir.check', ...(dir?.trim() ? { path: dir.trim() } : {}) } as unknown as ClientRequest);
    if (!dir?.trim()) defaultPath.value = data.path;
    return data.path;
  }

  async function loadDefault(): Promise<void> {
    if (defaultPath.value) return;
    try {
      await check();
    } catch {
      // an older server without the check: the composer says "server default"
    }
  }

  function remember(dir: string): void {
    recent.value = withRecent(recent.value, dir);
    try {
      localStorage.setItem(RECENT_KEY, JSON.stringify(recent.value));
    } catch {
      // not remembered, still used
    }
  }

  function forget(dir: string): void {
    recent.value = recent.value.filter((x) => x !== dir);
    try {
      localStorage.setItem(RECENT_KEY, JSON.stringify(recent.value));
    } catch {
      // as above
    }
  }

  return { defaultPath, recent, check, loadDefault, remember, forget };
});
