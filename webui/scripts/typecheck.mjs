/**
 * Type-checks the WebUI, .vue files included, without vue-tsc (not a dependency): each SFC's
 * script is compiled with its template inlined (so template expressions are checked too) into
 * a scratch copy of the tree, and tsc runs over that. Usage: node webui/scripts/typecheck.mjs
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { compileScript, parse } from '@vue/compiler-sfc';

const repo = path.resolve(fileURLToPath(new URL('../..', import.meta.url)));
const scratch = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'webui-tc-')));
const renderStart = new Map();
const TEMPLATE_CODES = new Set(['TS2304', 'TS2339', 'TS2551', 'TS2554', 'TS2322']);
try {
  fs.cpSync(path.join(repo, 'webui'), path.join(scratch, 'webui'), { recursive: true, filter: (p) => !p.includes(`${path.sep}dist`) && !p.includes('node_modules') });
  fs.mkdirSync(path.join(scratch, 'lib/gateway-protocol'), { recursive: true });
  fs.copyFileSync(path.join(repo, 'lib/gateway-protocol/protocol.ts'), path.join(scratch, 'lib/gateway-protocol/protocol.ts'));
  fs.copyFileSync(path.join(repo, 'plugin-api.d.ts'), path.join(scratch, 'plugin-api.d.ts'));
  fs.cpSync(path.join(repo, 'plugin-api'), path.join(scratch, 'plugin-api'), { recursive: true });
  fs.mkdirSync(path.join(scratch, 'core'), { recursive: true });
  fs.copyFileSync(path.join(repo, 'core/message-fold.ts'), path.join(scratch, 'core/message-fold.ts'));
  fs.mkdirSync(path.join(scratch, 'hosts/desktop'), { recursive: true });
  fs.copyFileSync(path.join(repo, 'hosts/desktop/contract.ts'), path.join(scratch, 'hosts/desktop/contract.ts'));
  fs.symlinkSync(path.join(repo, 'node_modules'), path.join(scratch, 'node_modules'));
  const walk = (dir) => fs.readdirSync(dir, { withFileTypes: true }).flatMap((d) => (d.isDirectory() ? walk(path.join(dir, d.name)) : [path.join(dir, d.name)]));
  for (const file of walk(path.join(scratch, 'webui/src')).filter((f) => f.endsWith('.vue'))) {
    const { descriptor, errors } = parse(fs.readFileSync(file, 'utf8'), { filename: file });
    if (errors.length) throw new Error(`${file}: ${errors[0]}`);
    const out = compileScript(descriptor, { id: path.basename(file), inlineTemplate: true, isProd: false });
    fs.writeFileSync(`${file}.ts`, out.content);
    // Render functions lose v-if narrowing and v-for element types, so only name errors count there.
    const at = out.content.search(/return \(_ctx(: any)?, ?_cache(: any)?\) =>/);
    renderStart.set(`${file}.ts`, at < 0 ? Infinity : out.content.slice(0, at).split('\n').length);
  }
  fs.writeFileSync(
    path.join(scratch, 'webui/tsconfig.check.json'),
    // compileScript types `setup(__props: any)`, so implicit anys from props are noise.
    JSON.stringify({ extends: './tsconfig.json', compilerOptions: { noImplicitAny: false }, include: ['src/**/*.ts'] }),
  );
  let output = '';
  try {
    execFileSync(process.execPath, [path.join(repo, 'node_modules/typescript/bin/tsc'), '--pretty', 'false', '-p', path.join(scratch, 'webui/tsconfig.check.json')], { encoding: 'utf8' });
  } catch (err) {
    output = String(err.stdout ?? '');
  }
  const errors = output
    .split('\n')
    .filter((l) => /error TS\d+/.test(l))
    .filter((l) => {
      const m = /^(.*?)\((\d+),\d+\): error (TS\d+)/.exec(l);
      if (!m) return true;
      const file = fs.realpathSync(path.resolve(m[1]));
      const start = renderStart.get(file);
      return start === undefined || Number(m[2]) < start || TEMPLATE_CODES.has(m[3]);
    })
    .map((l) => l.replace(/^.*?webui-tc-[^/]+\//, '').replace(/\.vue\.ts/, '.vue (compiled)'));
  if (errors.length) {
    console.error(errors.join('\n'));
    process.exitCode = 1;
  } else console.log('webui: types OK');
} finally {
  fs.rmSync(scratch, { recursive: true, force: true });
}
