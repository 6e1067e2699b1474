/**
 * A TypeScript fixture bundled into one runnable ES module for a child process (tests that need
 * real concurrent processes: crashes, concurrent writers, settings writers). Packages stay
 * imports: the native better-sqlite3 binding and knex's dialect loading must not be bundled.
 * Registers its own beforeAll/afterAll; `entry()` is the bundled file once beforeAll ran.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'rolldown';
import { afterAll, beforeAll } from 'vitest';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export function bundledChild(fixture: string, name: string): { entry(): string } {
  let dir = '';
  beforeAll(async () => {
    const cache = path.join(root, 'node_modules', '.cache');
    fs.mkdirSync(cache, { recursive: true });
    dir = fs.mkdtempSync(path.join(cache, `la-${name}-`));
    await build({
      input: path.join(root, fixture),
      platform: 'node',
      external: (id) => !id.startsWith('.') && !path.isAbsolute(id),
      resolve: { extensionAlias: { '.js': ['.ts', '.js'] } },
      logLevel: 'warn',
      output: { dir, format: 'esm', entryFileNames: 'child.mjs' },
    });
  });
  afterAll(() => {
    if (!dir) return;
    fs.rmSync(dir, { recursive: true, force: true });
    try {
      fs.rmdirSync(path.dirname(dir)); // only if we left it empty
    } catch {
      /* something else uses node_modules/.cache */
    }
  });
  return { entry: () => path.join(dir, 'child.mjs') };
}
