/**
 * A third-party plugin as its own npm package: `npm pack` of tests/fixtures/third-party-plugin,
 * `npm install --prefix $LIVEAGENT_HOME <tarball>`, named in settings.json → `plugins`, and the
 * `liveagent` CLI runs a turn through its provider and its tool. The optional peer dependency on
 * liveagent (for the types) is not installed with it.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonLines, runCli } from '../helpers/cli.js';

const run = promisify(execFile);
const fixture = path.resolve(import.meta.dirname, '../fixtures/third-party-plugin');
let tmp: string;
let home: string;

function npmEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!/^npm_/i.test(k)) env[k] = v;
  return env;
}

beforeAll(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'la-pack-plugin-'));
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', tmp], { cwd: fixture, env: npmEnv() });
  const tarball = path.join(tmp, (JSON.parse(stdout)[0] as { filename: string }).filename);
  home = path.join(tmp, 'home');
  fs.mkdirSync(home);
  await run('npm', ['install', '--prefix', home, tarball, '--offline', '--no-audit', '--no-fund'], { cwd: tmp, env: npmEnv() });
  fs.writeFileSync(path.join(home, 'settings.json'), JSON.stringify({ plugins: ['acme-weather'] }));
}, 60_000);

afterAll(() => {
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

describe('a packed third-party plugin', () => {
  it('installs under $LIVEAGENT_HOME without its optional peer liveagent', () => {
    expect(fs.existsSync(path.join(home, 'node_modules/acme-weather/index.js'))).toBe(true);
    expect(fs.existsSync(path.join(home, 'node_modules/liveagent'))).toBe(false);
  });

  it('named in settings, its provider and tool drive a `liveagent chat` turn', async () => {
    const r = await runCli(['chat', '--json', '--provider', 'acme', 'weather in Paris?'], { home });
    expect(r.code, r.stderr).toBe(0);
    const events = jsonLines(r.stdout);
    const end = events.find((e) => e.type === 'tool_execution_end');
    expect(end, r.stdout).toBeDefined();
    expect(JSON.stringify(end)).toContain('Sunny in Paris');
    const text = events.filter((e) => e.type === 'message_update' && e.delta.kind === 'text').map((e) => e.delta.text).join('');
    expect(text).toBe('The tool said: Sunny in Paris, 21°C');
  });

  it('imports definePlugin and ToolError from liveagent/plugin-api at runtime (the host copy): its ToolError reaches the model as the tool error', async () => {
    const r = await runCli(['chat', '--json', '--provider', 'acme', 'weather in Atlantis?'], { home });
    expect(r.code, r.stderr).toBe(0);
    const end = jsonLines(r.stdout).find((e) => e.type === 'tool_execution_end');
    expect(end?.result?.isError, r.stdout).toBe(true);
    expect(JSON.stringify(end?.result)).toContain('no weather station in Atlantis');
  });
});
