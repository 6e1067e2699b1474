/**
 * Architecture rules that the code must keep: the kernel imports no SDK, database, socket, UI,
 * plugin or host module; heavy SDKs are only ever imported lazily (dynamic import), so start-up
 * does not pay for providers nobody uses; a plugin reaches another plugin only through the
 * contract (services and events typed by merging into plugin-api.d.ts), never its files; the
 * helper libraries in lib/ (what plugins share) import no plugin or host.
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
    for (const dir of ['lib', 'plugins', 'hosts']) {
      if (!fs.existsSync(path.join(ROOT, dir))) continue;
      for (const f of tsFiles(dir)) for (const spec of staticImports(f)) if (heavy.test(spec)) offenders.push(`${f} -> ${spec}`);
    }
    expect(offenders).toEqual([]);
  });

  it('built-in plugins and lib/ reach the kernel only through the public API (define-plugin and errors)', () => {
    const offenders: string[] = [];
    for (const f of [...tsFiles('plugins'), ...tsFiles('lib')]) {
      for (const spec of staticImports(f)) {
        if (/(^|\/)core\//.test(spec) && !/(^|\/)core\/(define-plugin|errors)\.js$/.test(spec)) offenders.push(`${f} -> ${spec}`);
        if (/hosts\//.test(spec)) offenders.push(`${f} -> ${spec}`);
      }
    }
    expect(offenders).toEqual([]);
  });

  it('lib/ is a library: it imports no plugin and no host (type or not)', () => {
    const offenders: string[] = [];
    for (const f of tsFiles('lib')) {
      for (const spec of allImports(f)) {
        if (!spec.startsWith('.')) continue;
        const top = path.normalize(path.join(path.dirname(f), spec)).split(path.sep)[0];
        if (top === 'plugins' || top === 'hosts') offenders.push(`${f} -> ${spec}`);
      }
    }
    expect(offenders).toEqual([]);
  });
});

/** Every module a file names: static, type-only, re-exported, dynamic, side-effect and `declare module`. */
function allImports(file: string): string[] {
  const text = fs.readFileSync(path.join(ROOT, file), 'utf8');
  return [...text.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+|\bdeclare\s+module\s+)['"]([^'"]+)['"]/gm)].map((m) => m[1]!);
}

/**
 * Plugin pairs (`from -> to`) that still reach into another plugin's files, as of issue 21. The
 * list only shrinks: a new pair fails, and so does a pair that is gone (take it off the list).
 * The helper libraries in lib/ may be imported; they import no plugin (see above).
 */
const KNOWN_CROSS_PLUGIN: string[] = [
];

describe('plugins reach each other only through the contract', () => {
  it('a plugin never imports another plugin\'s files, type or not (lib/ libraries it may)', () => {
    const pairs = new Map<string, string[]>();
    for (const f of tsFiles('plugins')) {
      const own = f.split(path.sep)[1]!;
      for (const spec of allImports(f)) {
        if (!spec.startsWith('.')) continue;
        const [top, other] = path.normalize(path.join(path.dirname(f), spec)).split(path.sep);
        if (top !== 'plugins' || !other || other === own) continue;
        const pair = `${own} -> ${other}`;
        pairs.set(pair, [...(pairs.get(pair) ?? []), `${f} -> ${spec}`]);
      }
    }
    const found = [...pairs.keys()].sort();
    expect(found.filter((p) => !KNOWN_CROSS_PLUGIN.includes(p)).map((p) => pairs.get(p)!.join(', ')), 'new cross-plugin imports: type the service in ServiceMap instead').toEqual([]);
    expect(KNOWN_CROSS_PLUGIN.filter((p) => !found.includes(p)), 'fixed: take these off KNOWN_CROSS_PLUGIN').toEqual([]);
  });

  it('no builtin plugin casts its settings section: Plugin<Config> types ctx.config from settingsSchema', () => {
    const casts: string[] = [];
    for (const f of tsFiles('plugins')) {
      const text = fs.readFileSync(path.join(ROOT, f), 'utf8');
      for (const m of text.matchAll(/ctx\.config\b[^;\n]*?\bas\s+[A-Z]\w*/g)) casts.push(`${f}: ${m[0]}`);
    }
    expect(casts).toEqual([]);
  });
});
