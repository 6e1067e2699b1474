/**
 * Bundles the compiled CLI (dist/hosts/cli/main.js and everything it imports) into a few ES
 * module chunks in dist/hosts/cli-bundle/. Why: Node's ES module loader pays per file (resolve,
 * read, parse, link), and the CLI's first request waited ~350 ms on ~600 small files (zod,
 * awilix, tapable, the kernel, every builtin) before a provider SDK was even imported. Dynamic
 * imports stay separate chunks, so the provider SDKs, MCP and the tokenizer still load only when
 * used. Not minified: names stay readable in stacks.
 *
 * Kept outside the bundle: native and dialect-loading packages (better-sqlite3, knex) and Electron
 * (only the desktop host has it). Third-party plugins import `liveagent/plugin-api` from dist/
 * themselves; that second copy holds only an identity helper and constants, so it is harmless.
 * bin/liveagent.js runs this bundle when it is at least as new as the tsc
 * output, and the unbundled dist/ otherwise, so a `tsc`-only rebuild is never shadowed by a stale bundle.
 */
import { build } from 'rolldown';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const entry = path.join(root, 'dist/hosts/cli/main.js');
// Same depth as dist/hosts/cli/, so paths relative to import.meta.url (package.json) still hold.
const outDir = path.join(root, 'dist/hosts/cli-bundle');

if (!fs.existsSync(entry)) {
  process.stderr.write('build-bundle: dist/hosts/cli/main.js is missing; run tsc -p tsconfig.build.json first\n');
  process.exit(1);
}
fs.rmSync(outDir, { recursive: true, force: true });
const started = performance.now();
await build({
  input: { main: entry },
  platform: 'node',
  external: [/^node:/, 'better-sqlite3', 'knex', 'electron'],
  output: { dir: outDir, format: 'esm', chunkFileNames: '[name]-[hash].js', sourcemap: true, minify: false },
  logLevel: 'warn',
});
process.stdout.write(`bundled the CLI into ${path.relative(root, outDir)} in ${Math.round(performance.now() - started)} ms\n`);
