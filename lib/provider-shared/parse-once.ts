/**
 * Settings are replaced, never mutated (the store freezes each new value), so a settings
 * section parses the same every time it is seen. Providers resolve their configuration on every
 * request; remembering each object's parse keeps zod off the per-round path (issue 10: "settings
 * validated when they change, not per request") without a cache to invalidate.
 */
import { z } from 'zod';
import { ONE_OFF_PARSE } from '../one-off-parse.js';

const bySchema = new WeakMap<z.ZodType, { objects: WeakMap<object, unknown>; empty?: unknown }>();

/** `schema.safeParse(value)`, remembered per (schema, object). Callers must not mutate the result. */
export function parseOnce<T extends z.ZodType>(schema: T, value: unknown): z.ZodSafeParseResult<z.output<T>> {
  if (value === null || typeof value !== 'object') return schema.safeParse(value, ONE_OFF_PARSE);
  let memo = bySchema.get(schema);
  if (!memo) bySchema.set(schema, (memo = { objects: new WeakMap() }));
  // Request options are often a fresh `{}`: one shared answer for every empty plain object.
  if (Object.getPrototypeOf(value) === Object.prototype && isEmpty(value)) return (memo.empty ??= schema.safeParse({}, ONE_OFF_PARSE)) as z.ZodSafeParseResult<z.output<T>>;
  let r = memo.objects.get(value);
  if (r === undefined) memo.objects.set(value, (r = schema.safeParse(value, ONE_OFF_PARSE)));
  return r as z.ZodSafeParseResult<z.output<T>>;
}

function isEmpty(o: object): boolean {
  for (const _ in o) return false;
  return true;
}

const urlChecks = new Map<string, boolean>();
let urlSchema: z.ZodURL | undefined;

/** Whether `s` parses as a URL, remembered (bounded: base URLs come from settings and the environment). */
export function isUrl(s: string): boolean {
  let ok = urlChecks.get(s);
  if (ok === undefined) {
    ok = (urlSchema ??= z.url()).safeParse(s).success;
    if (urlChecks.size >= 64) urlChecks.clear();
    urlChecks.set(s, ok);
  }
  return ok;
}
