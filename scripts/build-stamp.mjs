/**
 * Skips a build whose output is already current. Why: `npx liveagent …` in the project folder
 * installs the folder into npx's cache as a link, and npm runs a linked folder's `prepare` (the
 * whole build, 13-50 s) again, though `npm install` had just built it. So `prepare` asks this
 * script first (`check`: exit 0 when current, 1 otherwise) and `npm run build` ends by recording
 * what it built from (`write`).
 *
 * "Current" means the build outputs exist and a hash of every build input (the sources tsc,
 * rolldown and vite read, their configs, package.json and the lockfile) equals the one recorded
 * after the last successful build. Content, not mtimes: a fresh clone or `git checkout` touches
 * every mtime without changing what would be built. Hashing ~400 small files takes ~30 ms.
 *
 * Usage: node scripts/build-stamp.mjs check|write
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const stampFile = path.join(root, 'dist', '.build-stamp');

/** What the build reads (tsconfig.build.json's include, the WebUI, the build scripts). */
const INPUT_DIRS = ['core', 'lib', 'plugins', 'hosts', 'bench', 'plugin-api', 'tests/fixtures', 'webui'];
const INPUT_FILES = ['plugin-api.d.ts', 'tsconfig.json', 'tsconfig.build.json', 'package.json', 'package-lock.json'];
/** Folders inside the inputs that are outputs or installs, never inputs. */
const SKIP_DIRS = new Set(['node_modules', 'dist']);
/** Outputs that must exist for the build to count as done (the rest is vouched for by the recorded hash). */
const OUTPUTS = ['dist/hosts/cli/main.js', 'dist/hosts/cli-bundle/main.js', 'dist/core/define-plugin.js', 'webui/dist/index.html'];

function listFiles(dir, out) {
  let entries;
  try {
    entries = fs.readdirSync(path.join(root, dir), { withFileTypes: true });
  } catch {
    return; // an optional input folder that is absent
  }
  for (const e of entries) {
    const rel = `${dir}/${e.name}`;
    if (e.isDirectory()) {
      if (!SKIP_DIRS.has(e.name)) listFiles(rel, out);
    } else if (e.isFile()) out.push(rel);
  }
}

export function inputsHash() {
  const files = [];
  for (const d of INPUT_DIRS) listFiles(d, files);
  for (const f of INPUT_FILES) if (fs.existsSync(path.join(root, f))) files.push(f);
  files.sort();
  const hash = createHash('sha256');
  for (const f of files) {
    hash.update(`${f}\0`);
    hash.update(fs.readFileSync(path.join(root, f)));
    hash.update('\0');
  }
  return `${files.length} files ${hash.digest('hex')}`;
}

/** Why the build must run, or undefined when its output is current. */
export function staleReason() {
  const missing = OUTPUTS.find((f) => !fs.existsSync(path.join(root, f)));
  if (missing) return `${missing} is missing`;
  let recorded;
  try {
    recorded = fs.readFileSync(stampFile, 'utf8').trim();
  } catch {
    return 'no build was recorded';
  }
  return recorded === inputsHash() ? undefined : 'the sources changed since the last build';
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const command = process.argv[2];
  if (command === 'write') {
    fs.mkdirSync(path.dirname(stampFile), { recursive: true });
    fs.writeFileSync(stampFile, `${inputsHash()}\n`);
  } else if (command === 'check') {
    const reason = staleReason();
    if (reason) {
      process.stderr.write(`liveagent: building (${reason})\n`);
      process.exit(1);
    }
    process.stderr.write('liveagent: the build is current, skipping it\n');
  } else {
    process.stderr.write('usage: node scripts/build-stamp.mjs check|write\n');
    process.exit(2);
  }
}
