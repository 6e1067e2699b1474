/**
 * `liveagent desktop`: on a machine without Electron's binary (these machines), one line on
 * stderr and exit 1; with a binary (a stand-in script), it runs the main entry and passes its
 * exit code on; a binary that cannot run is one line too.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { electronBinary, runDesktop } from '../../hosts/cli/desktop.js';
import { ROOT, runCli, tempHome } from '../helpers/cli.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});
const tmp = () => {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'h16-cli-'));
  dirs.push(d);
  return d;
};

describe('liveagent desktop', () => {
  it.skipIf(!!electronBinary(process.env, ROOT))('without the binary: one line on stderr, exit 1', async () => {
    const home = tempHome();
    dirs.push(home);
    const r = await runCli(['desktop'], { home, env: { LIVEAGENT_ELECTRON: undefined } });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe("liveagent: the desktop app cannot start here: Electron's binary is not installed (use `liveagent serve` and open the WebUI, or see docs/desktop.md)\n");
  });

  it('runs the binary with the main entry and passes its exit code on', async () => {
    const root = tmp();
    fs.writeFileSync(path.join(root, 'package.json'), '{}');
    fs.mkdirSync(path.join(root, 'dist/hosts/desktop'), { recursive: true });
    fs.writeFileSync(path.join(root, 'dist/hosts/desktop/electron-main.js'), '');
    const out = path.join(root, 'args.json');
    const bin = path.join(root, 'electron');
    fs.writeFileSync(bin, `#!${process.execPath}\nrequire('fs').writeFileSync(${JSON.stringify(out)}, JSON.stringify(process.argv.slice(2)));\nprocess.exit(3);\n`, { mode: 0o755 });
    const lines: string[] = [];
    const code = await runDesktop({ root, env: { ...process.env, LIVEAGENT_ELECTRON: bin }, stderr: (l) => lines.push(l) });
    expect(code).toBe(3);
    expect(lines).toEqual([]);
    expect(JSON.parse(fs.readFileSync(out, 'utf8'))).toEqual([path.join(root, 'dist/hosts/desktop/electron-main.js')]);
  });

  it('finds a downloaded binary through path.txt, and says so when it cannot run', async () => {
    const root = tmp();
    fs.writeFileSync(path.join(root, 'package.json'), '{}');
    const pkg = path.join(root, 'node_modules/electron');
    fs.mkdirSync(path.join(pkg, 'dist'), { recursive: true });
    fs.writeFileSync(path.join(pkg, 'package.json'), '{"name":"electron"}');
    expect(electronBinary({}, root)).toBeUndefined(); // never downloaded
    fs.writeFileSync(path.join(pkg, 'path.txt'), 'electron');
    expect(electronBinary({}, root)).toBeUndefined(); // path.txt but no binary
    fs.writeFileSync(path.join(pkg, 'dist/electron'), 'not a program', { mode: 0o644 });
    expect(electronBinary({}, root)).toBe(path.join(pkg, 'dist/electron'));
    fs.mkdirSync(path.join(root, 'dist/hosts/desktop'), { recursive: true });
    fs.writeFileSync(path.join(root, 'dist/hosts/desktop/electron-main.js'), '');
    const lines: string[] = [];
    expect(await runDesktop({ root, env: {}, stderr: (l) => lines.push(l) })).toBe(1);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^liveagent: the desktop app cannot start here: Electron's binary at .* does not run \(spawn .*EACCES\)$/);
  });
});
