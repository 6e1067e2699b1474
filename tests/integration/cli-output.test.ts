/**
 * Where `liveagent chat` output goes when things go wrong: a reader that leaves early
 * (`| head -1`) ends the output quietly while the run completes and is stored; a workdir that
 * does not exist is refused before anything runs; with --json, failures before the run are
 * JSON lines too.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { anthropicReply, startMockAnthropic, type MockAnthropicServer } from '../fixtures/mock-anthropic.js';
import { BIN, jsonLines, runCli, tempHome } from '../helpers/cli.js';

const LINES = Array.from({ length: 30 }, (_, i) => `line ${i + 1}\n`);

let mock: MockAnthropicServer;
beforeAll(async () => {
  mock = await startMockAnthropic({
    script: (req) => {
      const round = req.body.messages.filter((m: { role: string; content: unknown }) => m.role === 'user' && JSON.stringify(m.content).includes('tool_result')).length;
      if (req.body.tools?.length && round === 0) return anthropicReply({ toolUses: [{ id: 'toolu_0', name: 'Bash', input: { command: 'echo hi' } }], stopReason: 'tool_use' });
      // Slow enough that most of the reply is written after the reader has gone.
      return { kind: 'sse', events: anthropicReply({ text: LINES }), delayMs: 15 };
    },
  });
});
afterAll(() => mock.close());
const env = () => ({ ANTHROPIC_API_KEY: 'k', ANTHROPIC_BASE_URL: mock.url });

const children: ChildProcess[] = [];
const homes: string[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const h of homes.splice(0)) fs.rmSync(h, { recursive: true, force: true });
});
function home(): string {
  const h = tempHome();
  homes.push(h);
  return h;
}

/** Run the CLI and close its stdout after the first line, as `| head -1` does. */
function runIntoHead(args: string[], h: string): Promise<{ code: number | null; first: string; stderr: string }> {
  const full: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !/^(ANTHROPIC|OPENAI|GEMINI)_/.test(k)) full[k] = v;
  Object.assign(full, env(), { LIVEAGENT_HOME: h });
  const child = spawn(process.execPath, [BIN, ...args], { env: full, cwd: h, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let out = '';
  let first = '';
  let stderr = '';
  child.stdout!.on('data', (d) => {
    out += d;
    const nl = out.indexOf('\n');
    if (nl >= 0 && !first) {
      first = out.slice(0, nl);
      child.stdout!.destroy();
    }
  });
  child.stderr!.on('data', (d) => (stderr += d));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, first, stderr })));
}

function storedAssistantText(h: string, conversationId: string): string {
  const db = new Database(path.join(h, 'liveagent.db'), { readonly: true });
  try {
    const rows = db.prepare("SELECT content, status FROM messages WHERE conversation_id = ? AND role = 'assistant' ORDER BY ordinal").all(conversationId) as Array<{ content: string; status: string }>;
    expect(rows.map((r) => r.status)).toEqual(rows.map(() => 'complete'));
    return rows
      .flatMap((r) => JSON.parse(r.content) as Array<{ type: string; text?: string }>)
      .filter((b) => b.type === 'text')
      .map((b) => b.text)
      .join('');
  } finally {
    db.close();
  }
}

describe('liveagent chat | head -1', () => {
  it('ends the output quietly; the run completes and the whole reply is stored', async () => {
    const h = home();
    const r = await runIntoHead(['chat', '--mode', 'text', 'count to thirty'], h);
    expect(r.first).toBe('line 1');
    expect(r.stderr).not.toMatch(/EPIPE|Error|at .*\.js:\d+/);
    expect(r.code, r.stderr).toBe(0);
    const id = /conversation: (c_[a-z0-9]+)/.exec(r.stderr)?.[1];
    expect(id, r.stderr).toBeTruthy();
    expect(storedAssistantText(h, id!)).toBe(LINES.join(''));
  });

  it('with --json too: the events stop at the reader, the run does not', async () => {
    const h = home();
    const r = await runIntoHead(['chat', '--json', '--mode', 'text', 'count to thirty'], h);
    const first = JSON.parse(r.first);
    expect(first.type).toBe('agent_start');
    expect(r.stderr).not.toMatch(/EPIPE|Error|at .*\.js:\d+/);
    expect(r.code, r.stderr).toBe(0);
    expect(storedAssistantText(h, first.conversationId)).toBe(LINES.join(''));
  });
});

describe('liveagent chat --workdir', () => {
  it('a folder that does not exist (or a file) exits 2 with a one-line reason before anything runs', async () => {
    const h = home();
    const file = path.join(h, 'plain.txt');
    fs.writeFileSync(file, 'x');
    const cases: Array<[string, RegExp]> = [
      ['/nonexistent/liveagent-workdir', /^liveagent: --workdir \/nonexistent\/liveagent-workdir: no such folder$/],
      [file, /^liveagent: --workdir .*plain\.txt: not a folder$/],
    ];
    for (const [dir, reason] of cases) {
      const before = mock.requests.length;
      const r = await runCli(['chat', '--mode', 'tools', '--workdir', dir, 'run echo hi'], { home: h, env: env() });
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr.trim()).toMatch(reason);
      expect(r.stdout).toBe('');
      // Nothing ran: no request reached the model.
      expect(mock.requests.length).toBe(before);
    }
  });
});

describe('liveagent chat --json: failures before the run are JSON lines', () => {
  it('bad arguments, a bad workdir, no provider key and an unknown provider each give one JSON error line', async () => {
    const h = home();
    const cases: Array<{ args: string[]; env?: Record<string, string>; message: RegExp }> = [
      { args: ['chat', '--json', '--frobnicate', 'x'], message: /unknown option '--frobnicate'/i },
      { args: ['chat', '--json', '--mode', 'turbo', 'x'], message: /mode must be text, tools or agent-dev/ },
      { args: ['chat', '--json'], message: /PROMPT is required/ },
      { args: ['chat', '--json', '--workdir', '/nonexistent/liveagent-workdir', 'x'], message: /--workdir .*: no such folder/ },
      { args: ['chat', '--json', 'x'], env: {}, message: /no provider is configured/ },
      { args: ['chat', '--json', '--provider', 'nope', 'x'], message: /unknown provider "nope"/ },
    ];
    for (const c of cases) {
      const r = await runCli(c.args, { home: h, env: c.env ?? env() });
      const what = `${c.args.join(' ')}: ${r.stderr}`;
      expect(r.code, what).toBe(2);
      const lines = jsonLines(r.stdout);
      expect(lines, what).toHaveLength(1);
      expect(lines[0]).toMatchObject({ type: 'error', exitCode: 2, error: { code: expect.any(String) } });
      expect(lines[0]!.error.message).toMatch(c.message);
      // The diagnostic stays on stderr, one line.
      expect(r.stderr.trim().split('\n'), what).toHaveLength(1);
    }
  });
});
