/**
 * A settings patch applied to a document: the merge rule of every settings save (the file, and a
 * shared backend such as plugins/team-settings, through `applySettingsPatch` in the contract).
 * Pure, with no imports, so the runtime half of the contract can carry it.
 */
import type { SettingsPatchOp } from '../plugin-api.js';

type Doc = Record<string, unknown>;
const isPlainObject = (v: unknown): v is Doc => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `base` with the ops applied (a copy; `base` is untouched). */
export function applySettingsPatch(base: Doc, ops: readonly SettingsPatchOp[]): Doc {
  const root = structuredClone(base);
  next: for (const op of ops) {
    if (!op.path.length) continue; // the root is always an object: never replaced whole
    let parent: Doc = root;
    for (const k of op.path.slice(0, -1)) {
      if (!isPlainObject(parent[k])) {
        if (op.value === undefined && !op.object) continue next; // removing below something that is gone: nothing to do
        parent[k] = {};
      }
      parent = parent[k] as Doc;
    }
    const last = op.path.at(-1)!;
    if (op.object) {
      if (!isPlainObject(parent[last])) parent[last] = {};
    } else if (op.value === undefined) delete parent[last];
    else parent[last] = structuredClone(op.value);
  }
  return root;
}
