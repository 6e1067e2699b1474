/**
 * Tool permissions in `liveagent chat`, run as a user runs it (bin/liveagent.js → dist/; build
 * first with `npm run build`), the real claude_code provider against the wire-faithful Anthropic
 * mock. The model's first round is a Bash call named by the prompt; a deny rule refuses it before
 * any process starts; with --json an "ask" is a `tool_approval` event on stdout and the decision a
 * JSON line on stdin; without --json it is a y / n / a prompt on stderr; an approval and an
 * AskUserQuestion in one run share stdin, each line reaching its owner.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { anthropicReply, startMockAnthropic, type MockAnthropicServer } from '../fixtures/mock-anthropic.js';
import { BIN, jsonLines, ROOT, runCli } from '../helpers/cli.js';

const COMMANDS: Record<string, string> = {
  'clean up': 'rm -rf build && touch ran.txt',
  'make a file': 'echo made > ran.txt',
};
const ASK_INPUT = { questions: [{ header: 'DB', prompt: 'Which database?', options: [{ label: 'Postgres' }, { label: 'SQLite', recommended: true }] }] };

interface WireBlock {
  type: string;
  text?: string;
  tool_use_id?: string;
  content?: string | WireBlock[];
}
const blocks = (m: { content: string | WireBlock[] }): WireBlock[] => (typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content);

let mock: MockAnthropicServer;
beforeAll(async () => {
  if (!fs.existsSync(path.join(ROOT, 'dist/plugins/permissions/index.js'))) throw new Error('dist/ has no permissions plugin: run `npm run build` first');
  mock = await startMockAnthropic({
    script: (req) => {
      const messages = req.body.messages as Array<{ role: string; content: string | WireBlock[] }>;
      const prompt = blocks(messages[0]!).map((b) => b.text ?? '').join('');
      const results = messages.flatMap((m) => blocks(m)).filter((b) => b.type === 'tool_result');
      const said = (b: WireBlock) => (typeof b.content === 'string' ? b.content : (b.content ?? []).map((c) => c.text ?? '').join(' '));
      if (prompt === 'both' && results.length === 0) return anthropicReply({ toolUses: [{ id: 'toolu_bash_1', name: 'Bash', input: { command: 'echo both > ran.txt' } }] });
      if (prompt === 'both' && results.length === 1) return anthropicReply({ toolUses: [{ id: 'toolu_ask_1', name: 'AskUserQuestion', input: ASK_INPUT }] });
      if (results.length === 0) return anthropicReply({ toolUses: [{ id: 'toolu_bash_1', name: 'Bash', input: { command: COMMANDS[prompt] ?? 'true' } }] });
      return anthropicReply({ text: `MODEL SAW: ${results.map(said).join(' | ')}` });
    },
  });
});
afterAll(() => mock?.close());

const children: ChildProcessWithoutNullStreams[] = [];
const homes: string[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill('SIGKILL');
  for (const h of homes.splice(0)) fs.rmSync(h, { recursive: true, force: true });
});

function home(permissions: unknown): { home: string; work: string } {
  const h = fs.mkdtempSync(path.join(os.tmpdir(), 'la-perm-cli-'));
  homes.push(h);
  fs.writeFileSync(path.join(h, 'settings.json'), JSON.stringify({ title: { enabled: false }, permissions }));
  const work = path.join(h, 'work');
  fs.mkdirSync(work);
  return { home: h, work };
}

const env = () => ({ ANTHROPIC_API_KEY: 'k', ANTHROPIC_BASE_URL: mock.url });

interface Cli {
  child: ChildProcessWithoutNullStreams;
  stdout: () => string;
  stderr: () => string;
  until(pred: () => boolean, what: string): Promise<void>;
  exit: Promise<number | null>;
}

function startCli(args: string[], h: string): Cli {
  const e: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !/^(ANTHROPIC|OPENAI|GEMINI)_/.test(k)) e[k] = v;
  Object.assign(e, env(), { LIVEAGENT_HOME: h });
  const child = spawn(process.execPath, [BIN, ...args], { env: e, cwd: h, stdio: ['pipe', 'pipe', 'pipe'] });
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

const approvalEvents = (stdout: string, name: string) => jsonLines(stdout).filter((e) => e.type === name);
const toolEnds = (stdout: string) => jsonLines(stdout).filter((e) => e.type === 'tool_execution_end');
const asked = (cli: Cli) => () => cli.stdout().includes('"type":"tool_approval"');

describe('permissions in liveagent chat', () => {
  it('a deny rule on Bash refuses it before any process starts; the tool result names the rule', async () => {
    const { home: h, work } = home({ rules: [{ tool: 'Bash', pattern: 'rm *', action: 'deny' }] });
    const r = await runCli(['chat', '--json', '--workdir', work, 'clean up'], { home: h, env: env() });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).not.toMatch(/unknown key permissions/);
    const [end] = toolEnds(r.stdout);
    expect(end.result).toMatchObject({ isError: true, details: { blocked: true } });
    expect(end.result.content[0].text).toContain('Tool call blocked: permissions rule #1 { tool: "Bash", pattern: "rm *", action: "deny" } deny Bash "rm -rf build && touch ran.txt"');
    expect(approvalEvents(r.stdout, 'tool_approval')).toEqual([]);
    expect(fs.existsSync(path.join(work, 'ran.txt'))).toBe(false);
  });

  it('--json: "ask" is an event on stdout; a line for nobody gets one diagnostic; the approve line runs the tool', async () => {
    const { home: h, work } = home({ rules: [{ tool: 'Bash', action: 'ask' }], approvalTimeoutMs: 60_000 });
    const cli = startCli(['chat', '--json', '--workdir', work, 'make a file'], h);
    await cli.until(asked(cli), 'the tool_approval event');
    const [event] = approvalEvents(cli.stdout(), 'tool_approval');
    expect(event.payload).toMatchObject({ toolCallId: 'toolu_bash_1', toolName: 'Bash', summary: 'echo made > ran.txt', rule: { index: 0, tool: 'Bash', action: 'ask' } });
    expect(fs.existsSync(path.join(work, 'ran.txt'))).toBe(false);

    cli.child.stdin.write('{"item_id": "toolu_nobody", "decision": "approve"}\n');
    await cli.until(() => cli.stderr().includes('nothing is waiting for item_id "toolu_nobody"'), 'the diagnostic for a line nobody owns');
    cli.child.stdin.write(JSON.stringify({ item_id: 'toolu_bash_1', decision: 'maybe' }) + '\n');
    await cli.until(() => cli.stderr().includes('approval ignored: decision: decision must be "approve", "deny" or "approve_session"'), 'the bad-decision diagnostic');
    // stdin stays open: the CLI must still exit once the run ends.
    cli.child.stdin.write(JSON.stringify({ item_id: 'toolu_bash_1', decision: 'approve' }) + '\n');
    expect(await cli.exit, cli.stderr()).toBe(0);
    expect(cli.stderr().split('\n').filter((l) => l.startsWith('liveagent:'))).toHaveLength(2);
    expect(approvalEvents(cli.stdout(), 'tool_approval_settled')[0].payload).toMatchObject({ outcome: 'approved', decision: 'approve' });
    expect(toolEnds(cli.stdout())[0].result.isError).toBe(false);
    expect(fs.readFileSync(path.join(work, 'ran.txt'), 'utf8')).toBe('made\n');
  });

  it('--json: "deny" on stdin refuses the call', async () => {
    const { home: h, work } = home({ default: 'ask' });
    const cli = startCli(['chat', '--json', '--workdir', work, 'make a file'], h);
    await cli.until(asked(cli), 'the tool_approval event');
    cli.child.stdin.write(JSON.stringify({ item_id: 'toolu_bash_1', decision: 'deny' }) + '\n');
    expect(await cli.exit, cli.stderr()).toBe(0);
    expect(toolEnds(cli.stdout())[0].result.content[0].text).toContain('Tool call denied: the user did not approve Bash "echo made > ran.txt"');
    expect(fs.existsSync(path.join(work, 'ran.txt'))).toBe(false);
  });

  it('--json: with stdin ended and no answer, the deadline denies it', async () => {
    const { home: h, work } = home({ default: 'ask', approvalTimeoutMs: 800 });
    const cli = startCli(['chat', '--json', '--workdir', work, 'make a file'], h);
    await cli.until(asked(cli), 'the tool_approval event');
    cli.child.stdin.end();
    expect(await cli.exit, cli.stderr()).toBe(0);
    expect(cli.stderr()).toContain('stdin ended; the approval stays pending until the deadline, then it is denied');
    expect(approvalEvents(cli.stdout(), 'tool_approval_settled')[0].payload).toMatchObject({ outcome: 'timedOut', approved: false });
    expect(toolEnds(cli.stdout())[0].result.content[0].text).toContain('nobody approved Bash "echo made > ran.txt" within 800 ms');
    expect(fs.existsSync(path.join(work, 'ran.txt'))).toBe(false);
  });

  it('without --json the approval is a prompt on stderr; "a" approves it', async () => {
    const { home: h, work } = home({ rules: [{ tool: 'Bash', pattern: 'echo *', action: 'ask' }] });
    const cli = startCli(['chat', '--workdir', work, 'make a file'], h);
    await cli.until(() => cli.stderr().includes('run it? y = yes'), 'the prompt');
    expect(cli.stderr()).toContain('[approval] Bash: echo made > ran.txt');
    expect(cli.stderr()).toContain('permissions rule #1 (Bash "echo *") asks');
    cli.child.stdin.write('sure\n');
    await cli.until(() => cli.stderr().includes('type y (approve), n (deny) or a (approve for this session)'), 'the hint');
    cli.child.stdin.write('a\n');
    expect(await cli.exit, cli.stderr()).toBe(0);
    expect(fs.readFileSync(path.join(work, 'ran.txt'), 'utf8')).toBe('made\n');
    expect(cli.stdout()).toContain('MODEL SAW: ');
  });

  it('--json: an approval and an AskUserQuestion in one run share stdin; each line reaches its owner', async () => {
    const { home: h, work } = home({ rules: [{ tool: 'Bash', action: 'ask' }] });
    fs.writeFileSync(path.join(h, 'settings.json'), JSON.stringify({ ...JSON.parse(fs.readFileSync(path.join(h, 'settings.json'), 'utf8')), askUserQuestion: { timeoutMs: 60_000 } }));
    const cli = startCli(['chat', '--json', '--workdir', work, 'both'], h);
    await cli.until(asked(cli), 'the tool_approval event');
    cli.child.stdin.write(JSON.stringify({ item_id: 'toolu_bash_1', decision: 'approve' }) + '\n');
    await cli.until(() => cli.stdout().includes('"type":"ask_user_question"'), 'the ask_user_question event');
    cli.child.stdin.write(JSON.stringify({ item_id: 'toolu_ask_1', request_json: JSON.stringify([{ questionId: 'q1', selectedLabel: 'Postgres' }]) }) + '\n');
    expect(await cli.exit, cli.stderr()).toBe(0);
    expect(cli.stderr()).not.toMatch(/ignored/);
    expect(fs.readFileSync(path.join(work, 'ran.txt'), 'utf8')).toBe('both\n');
    const reply = jsonLines(cli.stdout()).filter((e) => e.type === 'message_update' && e.delta.kind === 'text').map((e) => e.delta.text).join('');
    expect(reply).toContain('"Which database?": Postgres');
  });
});
