/**
 * The tests serve webui/dist; build it when it is missing or older than the sources (the
 * normal path is `npm run build`). A lock directory keeps parallel test files from building twice.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const root = path.resolve('webui');
const dist = path.join(root, 'dist', 'index.html');
const lock = path.join(root, '.build-lock');

function newestSource(dir: string): number {
  let newest = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    newest = Math.max(newest, e.isDirectory() ? newestSource(p) : fs.statSync(p).mtimeMs);
  }
  return newest;
}

function stale(): boolean {
  if (!fs.existsSync(dist)) return true;
  const built = fs.statSync(dist).mtimeMs;
  return newestSource(path.join(root, 'src')) > built || fs.statSync(path.join(root, 'index.html')).mtimeMs > built;
}

export async function ensureWebuiBuilt(): Promise<void> {
  for (let i = 0; stale(); i++) {
    if (i > 1500) throw new Error(`timed out waiting for the WebUI build (lock ${lock})`);
    try {
      fs.mkdirSync(lock);
    } catch {
      // Another file is building; a lock left by a killed run is taken over after two minutes.
      const age = Date.now() - (fs.statSync(lock, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
      if (age > 120_000) fs.rmSync(lock, { recursive: true, force: true });
      await new Promise((r) => setTimeout(r, 100));
      continue;
    }
    try {
      if (!stale()) return;
      const r = spawnSync(process.execPath, [path.resolve('node_modules/vite/bin/vite.js'), 'build', '--config', 'webui/vite.config.ts', '--logLevel', 'warn'], { encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`building the WebUI failed:\n${r.stderr || r.stdout}`);
      return;
    } finally {
      fs.rmSync(lock, { recursive: true, force: true });
    }
  }
}
