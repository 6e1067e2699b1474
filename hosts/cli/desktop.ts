/**
 * `liveagent desktop`: the Electron host. Electron's binary is not installed with this package
 * (its npm package downloads it on first require, which we never trigger: no network from a
 * CLI command), so the binary is looked up where that download puts it, `$LIVEAGENT_ELECTRON`
 * first. Found: it runs dist/hosts/desktop/electron-main.js and its exit code is ours. Missing
 * or not runnable: one line on stderr, exit 1.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export interface DesktopRunOptions {
  env?: NodeJS.ProcessEnv;
  /** The package root (default: found from this file). */
  root?: string;
  stderr?: (line: string) => void;
}

const MISSING = "liveagent: the desktop app cannot start here: Electron's binary is not installed (use `liveagent serve` and open the WebUI, or see docs/desktop.md)";

function packageRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!fs.existsSync(path.join(dir, 'package.json')) && path.dirname(dir) !== dir) dir = path.dirname(dir);
  return dir;
}

/** Where Electron's binary is, without running the `electron` package's download-on-require. */
export function electronBinary(env: NodeJS.ProcessEnv, root: string): string | undefined {
  if (env.LIVEAGENT_ELECTRON) return fs.existsSync(env.LIVEAGENT_ELECTRON) ? env.LIVEAGENT_ELECTRON : undefined;
  let dir: string;
  try {
    dir = path.dirname(createRequire(path.join(root, 'package.json')).resolve('electron/package.json'));
  } catch {
    return undefined;
  }
  let name: string;
  try {
    name = fs.readFileSync(path.join(dir, 'path.txt'), 'utf8').trim();
  } catch {
    return undefined; // the binary was never downloaded
  }
  const full = env.ELECTRON_OVERRIDE_DIST_PATH ? path.join(env.ELECTRON_OVERRIDE_DIST_PATH, name || 'electron') : path.join(dir, 'dist', name);
  return name && fs.existsSync(full) ? full : undefined;
}

export async function runDesktop(options: DesktopRunOptions = {}): Promise<number> {
  const env = options.env ?? process.env;
  const root = options.root ?? packageRoot();
  const say = options.stderr ?? ((line: string) => void process.stderr.write(`${line}\n`));
  const binary = electronBinary(env, root);
  if (!binary) {
    say(MISSING);
    return 1;
  }
  const entry = path.join(root, 'dist', 'hosts', 'desktop', 'electron-main.js');
  if (!fs.existsSync(entry)) {
    say(`liveagent: the desktop app cannot start here: ${path.relative(root, entry)} is missing (run \`npm run build\`)`);
    return 1;
  }
  return new Promise<number>((resolve) => {
    // ELECTRON_RUN_AS_NODE in the environment would turn the app into a plain Node process.
    const childEnv = { ...env };
    delete childEnv.ELECTRON_RUN_AS_NODE;
    const child = spawn(binary, [entry], { stdio: 'inherit', env: childEnv });
    child.once('error', (err) => {
      say(`liveagent: the desktop app cannot start here: Electron's binary at ${binary} does not run (${err.message})`);
      resolve(1);
    });
    child.once('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}
