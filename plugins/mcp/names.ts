/**
 * Model-facing names of MCP tools: `mcp__<server>__<tool>`, cleaned to what every provider
 * accepts (letters, digits, `_`, `-`; at most 64 characters).
 *
 * Names must be deterministic so a conversation's history keeps matching the tools after a
 * restart. A name that had to be truncated always carries a short hash of the original server
 * and tool names; names that collide after cleaning are disambiguated the same way, and the
 * one that needed no cleaning keeps the plain name. Nothing depends on listing order.
 */
import { createHash } from 'node:crypto';

export const MAX_TOOL_NAME = 64;

export function cleanName(s: string): string {
  return s.replace(/[^A-Za-z0-9_-]/g, '_');
}

export function shortHash(s: string, length = 8): string {
  return createHash('sha256').update(s).digest('hex').slice(0, length);
}

function withHash(base: string, key: string): string {
  const h = shortHash(key);
  return `${base.slice(0, MAX_TOOL_NAME - h.length - 1)}_${h}`;
}

/**
 * The name segment of each server (by its settings key). Two servers whose names clean to the
 * same text are told apart by a hash of the original name, except one that needed no cleaning.
 */
export function serverSegments(names: string[]): Map<string, string> {
  const byClean = new Map<string, string[]>();
  for (const n of names) {
    const c = cleanName(n);
    byClean.set(c, [...(byClean.get(c) ?? []), n]);
  }
  const out = new Map<string, string>();
  for (const [clean, group] of byClean) {
    for (const n of group) out.set(n, group.length === 1 || n === clean ? clean : `${clean}_${shortHash(n, 6)}`);
  }
  return out;
}

/**
 * Model-facing names for one server's tools (keyed by the MCP tool name). `taken` holds names
 * other plugins or servers already registered; a clash with one of them gets a hash as well.
 */
export function toolNames(segment: string, server: string, tools: string[], taken: ReadonlySet<string> = new Set()): Map<string, string> {
  const candidates = new Map<string, { name: string; exact: boolean }>();
  for (const tool of new Set(tools)) {
    const full = `mcp__${segment}__${cleanName(tool)}`;
    const key = `${server}\u0000${tool}`;
    if (full.length > MAX_TOOL_NAME) candidates.set(tool, { name: withHash(full, key), exact: false });
    else candidates.set(tool, { name: full, exact: cleanName(tool) === tool });
  }
  const count = new Map<string, number>();
  for (const c of candidates.values()) count.set(c.name, (count.get(c.name) ?? 0) + 1);
  const out = new Map<string, string>();
  for (const [tool, c] of candidates) {
    const clash = taken.has(c.name) || ((count.get(c.name) ?? 0) > 1 && !c.exact);
    // A different key than truncation's, so a truncated name that clashes still changes.
    out.set(tool, clash ? withHash(c.name, `${server}\u0000${tool}\u0000clash`) : c.name);
  }
  return out;
}
