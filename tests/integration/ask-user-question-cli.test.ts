/**
 * AskUserQuestion in `liveagent chat`, run as a user runs it (bin/liveagent.js → dist/; build
 * first with `npm run build`). A scripted provider from a third-party plugin folder calls
 * AskUserQuestion; with --json the question is an event on stdout and the answer a JSON line on
 * stdin; without --json it is asked on the terminal.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { BIN, ROOT, tempHome } from '../helpers/cli.js';

const DIST_PLUGIN = path.join(ROOT, 'dist/plugins/tool-ask-user-question/index.js');
const DIST_BUILTINS = path.join(ROOT, 'dist/hosts/builtins.js');

// The model: asks once, then repeats the tool result so the test can read what it received.
const SCRIPTED_PROVIDER = `
const input = {
  questions: [
    { header: 'DB', prompt: 'Which database?', options: [{ label: 'Postgres' }, { label: 'SQLite', recommended: true }] },
  ],
};
export default {
  name: 'scripted-asker',
  apply(ctx) {
    ctx.registerProvider({
      id: 'scripted',
      displayName: 'Scripted asker',
      defaultModel: 'scripted-1',
      isConfigured: () => true,
      async *stream(request) {
        const last = request.messages[request.messages.length - 1];
        const result = last && last.role === 'tool' ? last.content.find((b) => b.type === 'tool_result') : undefined;
        if (!result) {
          const json = JSON.stringify(input);
          yield { type: 'block_start', index: 0, block: { type: 'tool_call', id: 'ask_cli_1', name: 'AskUserQuestion' } };
          yield { type: 'tool_input_delta', index: 0, json };
          yield { type: 'block_end', index: 0, block: { type: 'tool_call', id: 'ask_cli_1', name: 'AskUserQuestion', input } };
          yield { type: 'done', stopReason: 'tool_use' };
          return;
        }
        const text = 'MODEL SAW: ' + result.content.map((c) => c.text).join(' ');
        yield { type: 'block_start', index: 0, block: { type: 'text' } };
        yield { type: 'text_delta', index: 0, text };
        yield { type: 'block_end', index: 0, block: { type: 'text', text } };
        yield { type: 'done', stopReason: 'end' };
      },
    });
  },
};
`;

let needsShim = false;
beforeAll(async () => {
  if (!fs.existsSync(DIST_PLUGIN)) throw new Error('dist/ has no AskUserQuestion plugin: run `npm run build` first');
  // Until the host's builtins include the plugin, load the built plugin as a third-party folder.
  const { builtinPlugins } = (await import(pathToFileURL(DIST_BUILTINS).href)) as { builtinPlugins(): Promise<unknown[]> };
  const names = (await builtinPlugins()).map((p) => (p && typeof p === 'object' ? (p as { name?: unknown }).name : undefined));
  needsShim = !names.includes('tool-ask-user-question');
});

function writePlugin(home: string, dir: string, source: string) {
  const folder = path.join(home, 'plugins', dir);
  fs.mkdirSync(folder, { recursive: true });
  fs.writeFileSync(path.join(folder, 'package.json'), JSON.stringify({ name: dir, version: '1.0.0', type: 'module', main: 'index.js' }));
  fs.writeFileSync(path.join(folder, 'index.js'), source);
}

function homeWith(settings: unknown) {
  const home = tempHome(settings);
  writePlugin(home, 'scripted-asker', SCRIPTED_PROVIDER);
  if (needsShim) writePlugin(home, 'ask-user-question-shim', `export { default } from ${JSON.stringify(pathToFileURL(DIST_PLUGIN).href)};\n`);
  return home;
}

interface Cli {
  child: ChildProcessWithoutNullStreams;
  stdout: () => string;
  stderr: () => string;
  /** Resolves once `pred` holds for the output so far. */
  until(pred: () => boolean, what: string): Promise<void>;
  exit: Promise<number | null>;
}

const children: ChildProcessWithoutNullStreams[] = [];
const homes: string[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill('SIGKILL');
  for (const h of homes.splice(0)) fs.rmSync(h, { recursive: true, force: true });
});

function startCli(args: string[], home: string): Cli {
  homes.push(home);
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !/^(ANTHROPIC|OPENAI|GEMINI)_/.test(k)) env[k] = v;
  env.LIVEAGENT_HOME = home;
  const child = spawn(process.execPath, [BIN, ...args], { env, cwd: home, stdio: ['pipe', 'pipe', 'pipe'] });
  children.push(child);
  let out = '';
  let err = '';
  const waiters = new Set<() => void>();
  const poke = () => waiters.forEach((w) => w());
  child.stdout.on('data', (d) => ((out += d), poke()));
  child.stderr.on('data', (d) => ((err += d), poke()));
  const exit = new Promise<number | null>((resolve) => child.on('close', (code) => (poke(), resolve(code))));
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exit,
    until(pred, what) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (pred()) {
            waiters.delete(check);
            clearTimeout(timer);
            resolve();
          } else if (child.exitCode !== null) {
            waiters.delete(check);
            clearTimeout(timer);
            reject(new Error(`the CLI exited before ${what}\nstdout: ${out}\nstderr: ${err}`));
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`timed out waiting for ${what}\nstdout: ${out}\nstderr: ${err}`));
        }, 20_000);
        waiters.add(check);
        check();
      });
    },
  };
}

const events = (stdout: string) =>
  stdout
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as Record<string, any>);

describe('AskUserQuestion in liveagent chat', () => {
  it('--json: the question is an event on stdout, a bad line gets a diagnostic, the answer line settles it', async () => {
    const cli = startCli(['chat', '--json', '--provider', 'scripted', '--mode', 'tools', 'set it up'], homeWith({ askUserQuestion: { timeoutMs: 60_000 } }));
    await cli.until(() => cli.stdout().includes('"type":"ask_user_question"'), 'the ask_user_question event');
    const asked = events(cli.stdout()).find((e) => e.type === 'ask_user_question')!;
    expect(asked.payload).toMatchObject({ toolCallId: 'ask_cli_1', questions: [{ id: 'q1', options: [{ label: 'SQLite', recommended: true }, { label: 'Postgres' }] }] });
    const start = events(cli.stdout()).find((e) => e.type === 'tool_execution_start')!;
    expect(start.args.__askUserQuestionDeadlineAt).toBe(asked.payload.deadlineAt);

    cli.child.stdin.write('this is not json\n');
    await cli.until(() => /answer ignored: the line is not JSON/.test(cli.stderr()), 'the bad-line diagnostic');
    cli.child.stdin.write(JSON.stringify({ item_id: 'ask_cli_1', request_json: JSON.stringify([{ questionId: 'q1', selectedLabel: 'MySQL' }]) }) + '\n');
    await cli.until(() => /"MySQL" is not an option of question "q1"/.test(cli.stderr()), 'the bad-choice diagnostic');
    expect(cli.stderr().trim().split('\n').filter((l) => l.startsWith('liveagent: answer ignored'))).toHaveLength(2);

    // stdin stays open: the CLI must still exit once the run ends.
    cli.child.stdin.write(JSON.stringify({ item_id: 'ask_cli_1', request_json: JSON.stringify([{ questionId: 'q1', selectedLabel: 'Postgres' }]) }) + '\n');
    const code = await cli.exit;
    expect(code, cli.stderr()).toBe(0);
    const all = events(cli.stdout());
    expect(all.map((e) => e.seq)).toEqual(all.map((_, i) => i + 1));
    expect(all.find((e) => e.type === 'ask_user_question_settled')?.payload).toMatchObject({ outcome: 'answered', answers: [{ questionId: 'q1', selectedLabel: 'Postgres' }] });
    const reply = all.filter((e) => e.type === 'message_update' && e.delta.kind === 'text').map((e) => e.delta.text).join('');
    expect(reply).toContain('MODEL SAW: The user answered the question:');
    expect(reply).toContain('"Which database?": Postgres');
  });

  it('--json: when stdin ends with the question pending, it waits for the timeout (recommended option)', async () => {
    const cli = startCli(['chat', '--json', '--provider', 'scripted', 'go'], homeWith({ askUserQuestion: { timeoutMs: 1500 } }));
    await cli.until(() => cli.stdout().includes('"type":"ask_user_question"'), 'the ask_user_question event');
    cli.child.stdin.end();
    const code = await cli.exit;
    expect(code, cli.stderr()).toBe(0);
    expect(cli.stderr()).toMatch(/stdin ended; the question stays pending until the timeout/);
    const settled = events(cli.stdout()).find((e) => e.type === 'ask_user_question_settled')!;
    expect(settled.payload).toMatchObject({ outcome: 'timedOut', answers: [{ questionId: 'q1', selectedLabel: 'SQLite' }] });
  });

  it('without --json the question is asked on the terminal and a number picks an option', async () => {
    const cli = startCli(['chat', '--provider', 'scripted', 'set it up'], homeWith({ askUserQuestion: { timeoutMs: 60_000 } }));
    await cli.until(() => cli.stderr().includes('or type your own answer'), 'the question on stderr');
    expect(cli.stderr()).toContain('[question] DB: Which database?');
    expect(cli.stderr()).toContain('1. SQLite (recommended)');
    expect(cli.stderr()).toContain('2. Postgres');
    cli.child.stdin.write('7\n');
    await cli.until(() => cli.stderr().includes('there is no option 7'), 'the out-of-range hint');
    cli.child.stdin.write('2\n');
    const code = await cli.exit;
    expect(code, cli.stderr()).toBe(0);
    expect(cli.stdout()).toContain('"Which database?": Postgres');
    expect(cli.stderr().trim().split('\n').at(-1)).toMatch(/^conversation: c_/);
  });

  it('without --json a typed answer is sent as the user\'s own answer', async () => {
    const cli = startCli(['chat', '--provider', 'scripted', 'set it up'], homeWith({}));
    await cli.until(() => cli.stderr().includes('or type your own answer'), 'the question on stderr');
    cli.child.stdin.write('DuckDB please\n');
    expect(await cli.exit, cli.stderr()).toBe(0);
    expect(cli.stdout()).toContain('the user typed their own answer: "DuckDB please"');
  });
});
