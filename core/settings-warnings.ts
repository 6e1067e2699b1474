/**
 * Unknown settings keys. A misspelt key (`defaultModle`, `runtime.maxRoundz`) is valid JSON
 * that nothing reads, so it used to be accepted in silence. Unknown keys are warnings, not
 * errors (a settings.json written for a newer version must still load); the warning names the
 * key and the nearest known one.
 *
 * The keys a place knows come from its zod schema (zod 4 keeps the definition on
 * `schema._zod.def`): object shapes, followed through optional/default/pipe wrappers, records,
 * arrays and unions. A schema that is not zod knows nothing here, so it never warns.
 */

/** A problem in the settings that stops nothing. */
export interface SettingsWarning {
  /** Where, as `runtime.maxRoundz` (empty for the file as a whole). */
  path: string;
  /** One line for a log or a UI. */
  message: string;
  /** The nearest known key, as a full path (`runtime.maxRounds`), when one is close enough. */
  suggestion?: string;
}

export type KeyPath = ReadonlyArray<string | number>;

/** An unknown key and the keys its object knows. */
export interface UnknownKey {
  path: KeyPath;
  candidates: string[];
}

interface Def {
  type: string;
  shape?: Record<string, unknown>;
  catchall?: unknown;
  innerType?: unknown;
  in?: unknown;
  element?: unknown;
  valueType?: unknown;
  options?: unknown[];
  left?: unknown;
  right?: unknown;
  getter?: () => unknown;
}

const defOf = (schema: unknown): Def | undefined => (schema as { _zod?: { def?: Def } } | undefined)?._zod?.def;
const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const WRAPPERS = new Set(['optional', 'nullable', 'default', 'prefault', 'catch', 'readonly', 'nonoptional', 'success']);

export function formatKeyPath(path: KeyPath): string {
  let out = '';
  for (const k of path) out += typeof k === 'number' ? `[${k}]` : `${out ? '.' : ''}${k}`;
  return out;
}

/** Peel wrappers (optional, default, a transform's input, lazy) off a schema. */
function unwrap(schema: unknown): { schema: unknown; def: Def } | undefined {
  let s = schema;
  for (let i = 0; i < 32; i++) {
    const def = defOf(s);
    if (!def) return undefined;
    if (WRAPPERS.has(def.type)) s = def.innerType;
    else if (def.type === 'pipe') s = def.in;
    else if (def.type === 'lazy' && def.getter) s = def.getter();
    else return { schema: s, def };
  }
  return undefined;
}

/** Keys found unknown by every one of several readings of the same value (union options, sections sharing a key). */
export function intersectUnknown(lists: UnknownKey[][]): UnknownKey[] {
  if (!lists.length) return [];
  const [first, ...rest] = lists;
  const keyOf = (u: UnknownKey) => formatKeyPath(u.path);
  return first!.flatMap((u) => {
    const others = rest.map((l) => l.find((o) => keyOf(o) === keyOf(u)));
    if (others.some((o) => !o)) return [];
    return [{ path: u.path, candidates: [...new Set([u.candidates, ...others.map((o) => o!.candidates)].flat())] }];
  });
}

/**
 * Keys of `value` that `schema` does not know, with the keys each object knows. An object whose
 * extra keys are data (a catchall with its own schema, a record) has none; a strict object has
 * none either, since zod already refuses those.
 */
export function unknownKeys(schema: unknown, value: unknown, path: KeyPath = [], depth = 0): UnknownKey[] {
  const u = unwrap(schema);
  if (!u || depth > 32) return [];
  const { def } = u;
  const next = (s: unknown, v: unknown, p: KeyPath) => unknownKeys(s, v, p, depth + 1);
  switch (def.type) {
    case 'object': {
      if (!isPlainObject(value)) return [];
      const shape = def.shape ?? {};
      const catchType = def.catchall === undefined ? undefined : defOf(def.catchall)?.type;
      const open = catchType === undefined || catchType === 'unknown' || catchType === 'any' || catchType === 'never';
      const out: UnknownKey[] = [];
      for (const [k, v] of Object.entries(value)) {
        if (Object.hasOwn(shape, k)) out.push(...next(shape[k], v, [...path, k]));
        else if (open) out.push({ path: [...path, k], candidates: Object.keys(shape) });
        else out.push(...next(def.catchall, v, [...path, k]));
      }
      return out;
    }
    case 'record':
      return isPlainObject(value) ? Object.entries(value).flatMap(([k, v]) => next(def.valueType, v, [...path, k])) : [];
    case 'array':
      return Array.isArray(value) ? value.flatMap((v, i) => next(def.element, v, [...path, i])) : [];
    case 'union': {
      // Only the options the value satisfies say anything about it.
      const fits = (def.options ?? []).filter((o) => (o as { safeParse?: (v: unknown) => { success: boolean } }).safeParse?.(value).success);
      return intersectUnknown(fits.map((o) => next(o, value, path)));
    }
    case 'intersection':
      return intersectUnknown([next(def.left, value, path), next(def.right, value, path)]);
    default:
      return [];
  }
}

/** The keys an object at `path` (under `schema`) knows; empty when that place is not an object. */
export function knownKeysAt(schema: unknown, path: KeyPath): string[] {
  let s = schema;
  for (const k of path) {
    const u = unwrap(s);
    if (!u) return [];
    const { def } = u;
    if (def.type === 'object') s = def.shape && typeof k === 'string' && Object.hasOwn(def.shape, k) ? def.shape[k] : def.catchall;
    else if (def.type === 'record') s = def.valueType;
    else if (def.type === 'array') s = def.element;
    else if (def.type === 'union') s = def.options?.find((o) => knownKeysAt(o, []).includes(String(k)));
    else return [];
  }
  const u = unwrap(s);
  if (u?.def.type === 'object') return Object.keys(u.def.shape ?? {});
  if (u?.def.type === 'union') return [...new Set((u.def.options ?? []).flatMap((o) => knownKeysAt(o, [])))];
  return [];
}

/** Optimal string alignment distance (Levenshtein plus adjacent transpositions), ignoring case. */
export function editDistance(a: string, b: string): number {
  const s = a.toLowerCase();
  const t = b.toLowerCase();
  const rows: number[][] = Array.from({ length: s.length + 1 }, (_, i) => [i, ...Array<number>(t.length).fill(0)]);
  for (let j = 1; j <= t.length; j++) rows[0]![j] = j;
  for (let i = 1; i <= s.length; i++) {
    for (let j = 1; j <= t.length; j++) {
      const cost = s[i - 1] === t[j - 1] ? 0 : 1;
      let d = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && s[i - 1] === t[j - 2] && s[i - 2] === t[j - 1]) d = Math.min(d, rows[i - 2]![j - 2]! + 1);
      rows[i]![j] = d;
    }
  }
  return rows[s.length]![t.length]!;
}

/** The known key nearest to `key`, if it is close enough to be a typo (a third of its length, at least 1, at most 3 edits). */
export function nearestKey(key: string, candidates: Iterable<string>): string | undefined {
  const limit = Math.min(3, Math.max(1, Math.floor(key.length / 3)));
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const c of candidates) {
    if (c === key) continue;
    const d = editDistance(key, c);
    if (d <= limit && d < bestDistance) {
      best = c;
      bestDistance = d;
    }
  }
  return best;
}

/** The warning for an unknown key, naming the nearest known key when there is one. */
export function unknownKeyWarning(prefix: KeyPath, u: UnknownKey): SettingsWarning {
  const full = [...prefix, ...u.path];
  const path = formatKeyPath(full);
  const key = String(full.at(-1));
  const near = nearestKey(key, u.candidates);
  const suggestion = near === undefined ? undefined : formatKeyPath([...full.slice(0, -1), near]);
  return {
    path,
    message: `unknown key ${path}${suggestion ? ` (did you mean ${suggestion}?)` : ''}; it has no effect`,
    ...(suggestion ? { suggestion } : {}),
  };
}

/** ` (did you mean "x"?)` for zod's "Unrecognized key" issue of a strict object, else empty. */
export function unrecognizedHint(schema: unknown, issue: { code?: string; keys?: string[]; path: ReadonlyArray<PropertyKey> }): string {
  if (issue.code !== 'unrecognized_keys' || issue.keys?.length !== 1) return '';
  const path = issue.path.map((k) => (typeof k === 'number' ? k : String(k)));
  const near = nearestKey(issue.keys[0]!, knownKeysAt(schema, path));
  return near ? ` (did you mean "${near}"?)` : '';
}
