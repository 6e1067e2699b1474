/**
 * Bundles the desktop preload (dist/hosts/desktop/preload.js from tsc, and the bridge it
 * imports) into one CommonJS file, dist/hosts/desktop/preload.cjs: a sandboxed preload can
 * neither be an ES module nor require anything but 'electron'. The main process needs no
 * bundle (Electron runs tsc's ES modules from dist/), the renderer is the webui/dist build.
 */
import { build } from 'rolldown';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const entry = path.join(root, 'dist/hosts/desktop/preload.js');
if (!fs.existsSync(entry)) {
  process.stderr.write('build-preload: dist/hosts/desktop/preload.js is missing; run tsc -p tsconfig.build.json first\n');
  process.exit(1);
}
await build({
  input: entry,
  platform: 'node',
  external: ['electron'],
  output: { file: path.join(root, 'dist/hosts/desktop/preload.cjs'), format: 'cjs', sourcemap: false, minify: false },
  logLevel: 'warn',
});
