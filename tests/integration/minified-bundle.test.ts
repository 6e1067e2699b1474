/**
 * Issue 16 item 5: a bundled, minified build of the kernel and builtins behaves like the
 * unbundled one. The CLI entry (hosts/cli/main.ts, the kernel and every builtin it loads) is
 * bundled from the sources twice with rolldown, once minified (identifiers mangled, class and
 * function names gone) and once not, and each runs a real `chat --json --mode tools` turn with
 * tool calls against the wire-faithful Anthropic mock: the events, the tool results, the files
 * written and the requests the model got are the same. What would break under mangling: hook
 * kinds read off class names, plugin names taken from function names, `instanceof` across
 * duplicated copies of a module.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { anthropicReply, startMockAnthropic, type MockAnthropicServer } from '../fixtures/mock-anthropic.js';
import { jsonLines, ROOT, type CliResult } from '../helpers/cli.js';

let tmp: string;
let mock: MockAnthropicServer;

/** Bundle the CLI from the sources into `<tmp>/<name>/hosts/cli/` (the same depth as in the package). */
async function bundle(name: string, minify: boolean): Promise<string> {
  const { build } = await import('rolldown');
  const dir = path.join(tmp, name);
  const out = path.join(dir, 'hosts', 'cli');
  // What the bundle finds by climbing from its own file: the package.json (version, package
  // root) and node_modules (the packages kept outside the bundle).
  fs.mkdirSync(out, { recursive: true });
  fs.copyFileSync(path.join(ROOT, 'package.json'), path.join(dir, 'package.json'));
  fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
  await build({
    input: { main: path.join(ROOT, 'hosts/cli/main.ts') },
    platform: 'node',
    cwd: ROOT,
    resolve: { extensionAlias: { '.js': ['.ts', '.js'] } },
    external: [/^node:/, 'better-sqlite3', 'knex', 'electron'],
    output: { dir: out, format: 'esm', chunkFileNames: '[name]-[hash].js', minify, ...(minify ? { keepNames: false } : {}) },
    logLevel: 'silent',
  });
  const runner = path.join(dir, 'run.mjs');
  fs.writeFileSync(runner, "import { main } from './hosts/cli/main.js';\nprocess.exitCode = await main(process.argv.slice(2));\n");
  return runner;
}

function run(runner: string, args: string[], home: string, cwd: string): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !/^(ANTHROPIC|OPENAI|GEMINI)_/.test(k)) env[k] = v;
    Object.assign(env, { LIVEAGENT_HOME: home, ANTHROPIC_API_KEY: 'k', ANTHROPIC_BASE_URL: mock.url });
    const child = spawn(process.execPath, [runner, ...args], { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`timed out\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, 60_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

const STEPS: Array<{ name: string; input: (work: string) => Record<string, unknown> }> = [
  { name: 'Write', input: () => ({ file_path: 'notes/a.txt', content: 'alpha\n' }) },
  { name: 'Read', input: () => ({ file_path: 'notes/a.txt' }) },
  { name: 'Bash', input: () => ({ command: 'echo from-bash && cat notes/a.txt' }) },
  { name: 'Read', input: () => ({ file_path: 'missing.txt' }) },
];

/** One turn in a fresh home: the events with what varies between runs (ids, times, paths) left out. */
async function turn(runner: string) {
  const home = fs.mkdtempSync(path.join(tmp, 'home-'));
  fs.writeFileSync(path.join(home, 'settings.json'), JSON.stringify({ title: { enabled: false } }));
  const work = fs.mkdtempSync(path.join(tmp, 'work-'));
  const before = mock.requests.length;
  const r = await run(runner, ['chat', '--json', '--mode', 'tools', '--workdir', work, 'do the steps'], home, work);
  expect(r.code, r.stderr).toBe(0);
  const events = jsonLines(r.stdout);
  const scrub = (v: unknown): unknown =>
    JSON.parse(
      JSON.stringify(v)
        .split(work)
        .join('<work>')
        .split(home)
        .join('<home>')
        .replace(/"(id|runId|conversationId|messageId|toolCallId|turnId|createdAt|updatedAt|startedAt|endedAt|timestamp|ts|at|durationMs|elapsedMs|ms|pid)":("[^"]*"|\d+(\.\d+)?)/g, '"$1":"*"'),
    );
  return {
    events: events.map(scrub),
    requests: mock.requests.slice(before).map((q) => scrub(q.body.messages)),
    file: fs.readFileSync(path.join(work, 'notes/a.txt'), 'utf8'),
  };
}

beforeAll(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'h16b-minified-'));
  mock = await startMockAnthropic({
    script: (req) => {
      if (!req.body.tools?.length) return anthropicReply({ text: 'Just talking.' });
      const round = req.body.messages.filter((m: { role: string; content: unknown }) => m.role === 'user' && JSON.stringify(m.content).includes('tool_result')).length;
      const step = STEPS[round];
      return step ? anthropicReply({ toolUses: [{ id: `toolu_${round}`, name: step.name, input: step.input('') }], stopReason: 'tool_use' }) : anthropicReply({ text: ['All ', 'done.'] });
    },
  });
}, 30_000);

afterAll(async () => {
  await mock?.close();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

describe('the minified CLI bundle', () => {
  it('runs a turn with tool calls exactly like the unminified bundle', async () => {
    const [minified, plain] = await Promise.all([bundle('min', true), bundle('plain', false)]);
    // Minified for real: the kernel's class names are gone from the main chunk.
    const code = (runner: string) => fs.readdirSync(path.join(path.dirname(runner), 'hosts/cli')).filter((f) => f.endsWith('.js')).map((f) => fs.readFileSync(path.join(path.dirname(runner), 'hosts/cli', f), 'utf8')).join('\n');
    const names = /class (RuntimeError|PluginError|UsageError)\b|function createKernel\b/;
    expect(code(plain)).toMatch(names);
    expect(code(minified)).not.toMatch(names);

    const a = await turn(plain);
    const b = await turn(minified);
    // The plain bundle did the work: every tool ran, the failure was reported, the reply came.
    const ends = a.events.filter((e: any) => e.type === 'tool_execution_end') as any[];
    expect(ends.map((e) => [e.toolName, e.result.isError])).toEqual([
      ['Write', false],
      ['Read', false],
      ['Bash', false],
      ['Read', true],
    ]);
    expect(a.events.at(-1)).toMatchObject({ type: 'agent_end', status: 'completed' });
    expect(a.file).toBe('alpha\n');
    // And the minified one did exactly the same.
    expect(b.file).toBe(a.file);
    // A running tool's progress (how much output was read when, so how many updates and the
    // seq after them) depends on timing, not on the bundle: every other event must match exactly,
    // in order, and seq must rise in both.
    for (const run of [a, b]) expect(run.events.every((e: any, i: number) => i === 0 || e.seq > (run.events[i - 1] as any).seq)).toBe(true);
    const settled = (events: any[]) => events.filter((e) => e.type !== 'tool_execution_update').map((e) => ({ ...e, seq: '*' }));
    expect(settled(b.events).map((e) => e.type)).toEqual(settled(a.events).map((e) => e.type));
    expect(settled(b.events)).toEqual(settled(a.events));
    expect(b.requests).toEqual(a.requests);

    // A failure before the run (an unknown provider) reads the same too: the kernel's error
    // classes name themselves (core/errors.ts), not by their mangled class names.
    const fail = async (runner: string) => {
      const home = fs.mkdtempSync(path.join(tmp, 'home-'));
      const r = await run(runner, ['chat', '--json', '--provider', 'nope', 'hi'], home, home);
      return { code: r.code, stdout: r.stdout.split(home).join('<home>'), stderr: r.stderr.split(home).join('<home>') };
    };
    const [fa, fb] = [await fail(plain), await fail(minified)];
    expect(fa.code).not.toBe(0);
    expect(fb).toEqual(fa);
    const { RuntimeError, UsageError } = await import('../../core/errors.js');
    expect([new RuntimeError('usage', 'x').name, new UsageError('x').name]).toEqual(['RuntimeError', 'UsageError']);
  }, 180_000);
});
