/**
 * LiveAgent as users install it: `npm pack` of this project, `npm install -g` of the tarball into
 * a temp prefix (runtime dependencies only, from the npm cache), and the installed `liveagent`
 * runs chat against a wire mock, serves the WebUI and explains a missing Electron. The installed
 * copy lives outside the source tree, so nothing it imports can come from here.
 *
 * Packs the current build (`--ignore-scripts`: a test never rebuilds the shared dist/; `npm test`
 * builds first). One pack and one install for the whole file.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { builtinModules } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { anthropicReply, startMockAnthropic, type MockAnthropicServer } from '../fixtures/mock-anthropic.js';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../..');
const KEY = 'sk-ant-test';

let tmp: string;
let tarball: string;
let packed: string[];
let prefix: string;
let installed: string;
let mock: MockAnthropicServer;

/**
 * better-sqlite3's install script downloads a prebuilt binary from GitHub, which this machine
 * cannot reach (it would compile from source for minutes instead). prebuild-install's documented
 * `local_prebuilds` folder stands in for that download, made from the binary already built here.
 */
function localPrebuilds(dir: string): Promise<string> {
  const sqlite = path.join(ROOT, 'node_modules/better-sqlite3');
  const version = JSON.parse(fs.readFileSync(path.join(sqlite, 'package.json'), 'utf8')).version as string;
  const stage = path.join(dir, 'stage');
  fs.mkdirSync(path.join(stage, 'build/Release'), { recursive: true });
  fs.copyFileSync(path.join(sqlite, 'build/Release/better_sqlite3.node'), path.join(stage, 'build/Release/better_sqlite3.node'));
  const out = path.join(dir, 'prebuilds');
  fs.mkdirSync(out);
  const name = `better-sqlite3-v${version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`;
  return new Promise<string>((resolve, reject) => {
    execFile('tar', ['-czf', path.join(out, name), '-C', stage, 'build'], (err) => (err ? reject(err) : resolve(out)));
  });
}

/** npm with a clean environment: no npm_* variables inherited from an `npm test` parent. */
function npmEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!/^npm_/i.test(k) && !/^(ANTHROPIC|OPENAI|GEMINI)_/.test(k)) env[k] = v;
  return { ...env, ...extra };
}

beforeAll(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'la-pack-'));
  const { stdout } = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', tmp], { cwd: ROOT, env: npmEnv(), maxBuffer: 16 << 20 });
  const info = JSON.parse(stdout)[0] as { filename: string; files: Array<{ path: string }> };
  tarball = path.join(tmp, info.filename);
  packed = info.files.map((f) => f.path);
  prefix = path.join(tmp, 'prefix');
  const prebuilds = await localPrebuilds(tmp);
  // --prefer-offline: every tarball comes from the npm cache; the registry only for metadata it lacks.
  await run('npm', ['install', '-g', '--prefix', prefix, tarball, '--prefer-offline', '--no-audit', '--no-fund', '--allow-scripts=better-sqlite3'], {
    cwd: tmp,
    env: npmEnv({ npm_config_better_sqlite3_local_prebuilds: prebuilds }),
    maxBuffer: 16 << 20,
  });
  installed = path.join(prefix, 'lib/node_modules/liveagent');
  mock = await startMockAnthropic({ apiKey: KEY, script: () => anthropicReply({ text: ['Hello', ' from', ' the mock'] }) });
}, 150_000);

afterAll(async () => {
  await mock?.close();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

function liveagent(args: string[], home: string, env: Record<string, string> = {}) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    execFile(path.join(prefix, 'bin/liveagent'), args, { cwd: home, env: npmEnv({ LIVEAGENT_HOME: home, ...env }), timeout: 30_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

const home = () => fs.mkdtempSync(path.join(tmp, 'home-'));

describe('npm pack', () => {
  it('holds the build, the WebUI, the contract, README and license, and no sources, tests or maps', () => {
    const contract = ['plugin-api.d.ts', ...fs.readdirSync(path.join(ROOT, 'plugin-api')).map((f) => `plugin-api/${f}`)];
    for (const f of ['package.json', 'README.md', 'LICENSE', ...contract, 'bin/liveagent.js', 'dist/hosts/cli/main.js', 'dist/hosts/cli-bundle/main.js', 'dist/core/define-plugin.js', 'webui/dist/index.html', 'docs/plugin-authoring.md']) {
      expect(packed, f).toContain(f);
    }
    const unwanted = packed.filter((f) => /\.map$|\.test\.|(^|\/)tests?\//.test(f) || (/\.ts$/.test(f) && !contract.includes(f)) || /^(core|plugins|hosts|webui\/src|bench|scripts|dist\/bench|dist\/tests)\//.test(f) || f === 'docs/HELPER-BRIEF.md');
    expect(unwanted).toEqual([]);
  });

  it('the unbundled dist/ imports only dependencies, Node builtins, and Electron in the desktop host', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    const allowed = new Set([...Object.keys(pkg.dependencies), ...builtinModules]);
    const bad: string[] = [];
    // The bundle (cli-bundle/) inlines its packages; these are the files that import by name.
    for (const f of packed.filter((p) => /^dist\/(core|plugins|hosts)\/.*\.c?js$/.test(p) && !p.startsWith('dist/hosts/cli-bundle/'))) {
      const text = fs.readFileSync(path.join(installed, f), 'utf8');
      for (const m of text.matchAll(/^\s*(?:import|export)\b[^'"]*?\bfrom\s*['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)|\brequire\(\s*['"]([^'"]+)['"]\s*\)/gm)) {
        const spec = (m[1] ?? m[2] ?? m[3])!;
        if (spec.startsWith('.') || spec.startsWith('node:')) continue;
        const name = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!;
        if (name === 'electron' && f.startsWith('dist/hosts/desktop/')) continue; // desktop looks for it, says so when absent
        if (!allowed.has(name)) bad.push(`${f}: ${spec}`);
      }
    }
    expect(bad).toEqual([]);
  });
});

describe('the installed liveagent', () => {
  it('has its runtime dependencies and none of the dev ones', () => {
    const mods = path.join(installed, 'node_modules');
    for (const dep of ['zod', 'better-sqlite3', 'ws']) expect(fs.existsSync(path.join(mods, dep)), dep).toBe(true);
    for (const dev of ['vite', 'vitest', 'typescript', 'electron', 'vue', 'rolldown']) expect(fs.existsSync(path.join(mods, dev)), dev).toBe(false);
  });

  it('--version and help', async () => {
    const h = home();
    const v = await liveagent(['--version'], h);
    expect(v.code).toBe(0);
    expect(v.stdout.trim()).toBe(JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')).version);
    const help = await liveagent(['help'], h);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/Exit codes:/);
  });

  it('chat --json streams a reply from a wire mock', async () => {
    const h = home();
    const r = await liveagent(['chat', '--json', '--mode', 'text', 'Say hello'], h, { ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: mock.url });
    expect(r.code, r.stderr).toBe(0);
    const events = r.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l) as { type: string; delta?: { kind: string; text?: string } });
    expect(events[0]!.type).toBe('agent_start');
    expect(events.at(-1)!.type).toBe('agent_end');
    expect(events.filter((e) => e.type === 'message_update' && e.delta?.kind === 'text').map((e) => e.delta!.text).join('')).toBe('Hello from the mock');
  });

  it('serve --port 0 serves the WebUI', async () => {
    const h = home();
    const child: ChildProcess = spawn(path.join(prefix, 'bin/liveagent'), ['serve', '--port', '0'], { cwd: h, env: npmEnv({ LIVEAGENT_HOME: h }), stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let out = '';
        const timer = setTimeout(() => reject(new Error(`serve printed no URL: ${out}`)), 20_000);
        const onData = (d: Buffer) => {
          out += d;
          const m = /http:\/\/127\.0\.0\.1:\d+\//.exec(out);
          if (m) {
            clearTimeout(timer);
            resolve(m[0]);
          }
        };
        child.stdout!.on('data', onData);
        child.stderr!.on('data', onData);
        child.once('exit', (code) => reject(new Error(`serve exited ${code}: ${out}`)));
      });
      const res = await fetch(url);
      expect(res.status).toBe(200);
      expect(await res.text()).toMatch(/<div id="app"|<script[^>]+type="module"/);
    } finally {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
  });

  it('desktop says in one line that Electron is not installed, exit 1', async () => {
    const r = await liveagent(['desktop'], home());
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/Electron/);
  });
});
