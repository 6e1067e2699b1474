/**
 * Architecture rules that the code must keep: the kernel imports no SDK, database, socket, UI,
 * plugin or host module; heavy SDKs are only ever imported lazily (dynamic import), so start-up
 * does not pay for providers nobody uses.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');

function tsFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
    const rel = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...tsFiles(rel));
    else if (e.name.endsWith('.ts')) out.push(rel);
  }
  return out;
}

/** Static value imports (not `import type`, not dynamic `import()`). */
function staticImports(file: string): string[] {
  const text = fs.readFileSync(path.join(ROOT, file), 'utf8');
  const out: string[] = [];
  for (const m of text.matchAll(/^\s*(import|export)\s+(?!type\b)([^'"]*?)\s*from\s*['"]([^'"]+)['"]/gm)) {
    if (/^\{?\s*type\s/.test(m[2]!) && !m[2]!.includes(',')) continue;
    out.push(m[3]!);
  }
  for (const m of text.matchAll(/^\s*import\s+['"]([^'"]+)['"]/gm)) out.push(m[1]!);
  return out;
}

describe('import boundaries', () => {
  it('core/ imports only node built-ins, tapable, awilix, zod, its own files and the contract', () => {
    const offenders: string[] = [];
    for (const f of tsFiles('core')) {
      for (const spec of staticImports(f)) {
        const ok = spec.startsWith('node:') || ['tapable', 'awilix', 'zod'].includes(spec) || (spec.startsWith('./') && !spec.includes('..')) || spec === '../plugin-api.js';
        if (!ok) offenders.push(`${f} -> ${spec}`);
      }
      const text = fs.readFileSync(path.join(ROOT, f), 'utf8');
      for (const m of text.matchAll(/import\(\s*['"]([^'"]+)['"]\s*\)/g)) offenders.push(`${f} -> dynamic ${m[1]}`);
    }
    expect(offenders).toEqual([]);
  });

  it('provider SDKs, the MCP SDK and playwright are never imported statically by plugins or hosts', () => {
    const heavy = /^(@anthropic-ai\/sdk|openai|@google\/generative-ai|@modelcontextprotocol\/sdk|playwright-core)(\/|$)/;
    const offenders: string[] = [];
    for (const dir of ['plugins', 'hosts']) {
      if (!fs.existsSync(path.join(ROOT, dir))) continue;
      for (const f of tsFiles(dir)) for (const spec of staticImports(f)) if (heavy.test(spec)) offenders.push(`${f} -> ${spec}`);
    }
    expect(offenders).toEqual([]);
  });

  it('built-in plugins reach the kernel only through the public API (define-plugin and errors)', () => {
    const offenders: string[] = [];
    for (const f of tsFiles('plugins')) {
      for (const spec of staticImports(f)) {
        if (/core\//.test(spec) && !/core\/(define-plugin|errors)\.js$/.test(spec)) offenders.push(`${f} -> ${spec}`);
        if (/hosts\//.test(spec)) offenders.push(`${f} -> ${spec}`);
      }
    }
    expect(offenders).toEqual([]);
  });
});
