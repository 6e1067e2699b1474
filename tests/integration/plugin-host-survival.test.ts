/**
 * The host survives every plugin (issue 11, items 7-9), with real `liveagent chat` and
 * `liveagent serve` processes and third-party plugin folders under $LIVEAGENT_HOME/plugins:
 * an `apply` that never settles (was: exit 13, nothing on stderr), a promise `apply` rejects and
 * forgets (was: a raw stack and a crash), a tap that throws from a timer mid-run (was: a crash),
 * a tool that never settles and ignores the stop (was: the CLI kept running after Ctrl-C), and
 * plugins whose names are taken (was: "two plugins are named…" and no boot).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BIN, jsonLines, runCli, tempHome, type CliResult } from '../helpers/cli.js';

const children: ChildProcess[] = [];
const homes: string[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const h of homes.splice(0)) fs.rmSync(h, { recursive: true, force: true });
});

/**
 * A provider plugin (`survive`): a prompt `tool:<Name>` calls that tool once; `slow` answers
 * after 400 ms (stopping when asked); anything else answers at once.
 */
const PROVIDER = `
const sleep = (ms, signal) => new Promise((r) => { const t = setTimeout(r, ms); signal.addEventListener('abort', () => { clearTimeout(t); r(); }, { once: true }); });
export default {
  name: 'survive-provider',
  apply(ctx) {
    ctx.registerProvider({
      id: 'survive', displayName: 'Survive', defaultModel: 'survive-1', isConfigured: () => true,
      async *stream(request, signal) {
        const first = request.messages.find((m) => m.role === 'user');
        const prompt = first?.content?.[0]?.text ?? '';
        const last = request.messages[request.messages.length - 1];
        if (prompt.startsWith('tool:') && last.role !== 'tool') {
          const name = prompt.slice(5);
          yield { type: 'block_start', index: 0, block: { type: 'tool_call', id: 'call_1', name } };
          yield { type: 'block_end', index: 0, block: { type: 'tool_call', id: 'call_1', name, input: {} } };
          yield { type: 'done', stopReason: 'tool_use' };
          return;
        }
        if (prompt === 'slow') await sleep(400, signal);
        if (signal.aborted) { yield { type: 'error', error: { code: 'aborted', message: 'aborted', retryable: false } }; return; }
        const text = 'hello from survive';
        yield { type: 'block_start', index: 0, block: { type: 'text' } };
        yield { type: 'text_delta', index: 0, text };
        yield { type: 'block_end', index: 0, block: { type: 'text', text } };
        yield { type: 'done', stopReason: 'end' };
      },
    });
  },
};`;

function home(plugins: Record<string, string>, runtime: Record<string, number> = {}): string {
  const h = tempHome({ defaultProvider: 'survive', runtime: { pluginApplyTimeoutMs: 300, toolAbortGraceMs: 300, ...runtime } });
  homes.push(h);
  for (const [folder, source] of Object.entries({ 'survive-provider': PROVIDER, ...plugins })) {
    const dir = path.join(h, 'plugins', folder);
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: folder, type: 'module', main: 'index.js' }));
    fs.writeFileSync(path.join(dir, 'index.js'), source);
  }
  return h;
}

const plugin = (name: string, body: string) => `export default { name: ${JSON.stringify(name)}, ${body} };`;

/** The CLI as a child we can signal; `onLine` sees every stdout line as it comes. */
function spawnCli(args: string[], h: string, onLine: (line: string, child: ChildProcess) => void = () => {}): Promise<CliResult> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !/^(ANTHROPIC|OPENAI|GEMINI)_/.test(k)) env[k] = v;
  env.LIVEAGENT_HOME = h;
  const child = spawn(process.execPath, [BIN, ...args], { env, cwd: h, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let stdout = '';
  let stderr = '';
  let pending = '';
  child.stdout!.on('data', (d: Buffer) => {
    stdout += d;
    pending += d;
    let nl: number;
    while ((nl = pending.indexOf('\n')) >= 0) {
      onLine(pending.slice(0, nl), child);
      pending = pending.slice(nl + 1);
    }
  });
  child.stderr!.on('data', (d) => (stderr += d));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

/** No Node crash report (a raw stack ends with the Node version line). */
const noCrash = (r: CliResult) => expect(r.stderr).not.toMatch(/Node\.js v\d+|^\s+at /m);

describe('a plugin whose apply never settles', () => {
  const hang = plugin('hang', 'apply() { return new Promise(() => {}); }');

  it('chat reports it by name after the timeout and answers without it', async () => {
    const h = home({ hang });
    const r = await runCli(['chat', 'hi'], { home: h });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('hello from survive');
    expect(r.stderr).toContain('plugin "hang" did not finish apply within 300 ms and was skipped');
    noCrash(r);
  });

  it('serve reports it by name, starts, and stops on SIGINT', async () => {
    const h = home({ hang });
    const r = await spawnCli(['serve', '--port', '0'], h, (line, child) => {
      if (line.includes('#token=')) child.kill('SIGINT');
    });
    expect(r.stdout).toContain('LiveAgent is running at');
    expect(r.stderr).toContain('plugin "hang" did not finish apply within 300 ms and was skipped');
    expect(r.code, r.stderr).toBe(130);
    noCrash(r);
  });
});

describe('errors a plugin throws where no try reaches', () => {
  it('a promise apply rejects and forgets: one line naming the plugin, and the run completes', async () => {
    const h = home({ rej: plugin('rej', 'apply() { Promise.reject(new Error("forgotten")); }') });
    const r = await runCli(['chat', 'hi'], { home: h });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('hello from survive');
    const lines = r.stderr.split('\n').filter((l) => l.includes('plugin "rej"'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('plugin "rej" failed in code its apply started (unhandled promise rejection): forgotten');
    noCrash(r);
  });

  it('a tap that throws from a timer during a run ends that run with an error event and agent_end naming the plugin', async () => {
    const ticker = plugin('ticker', `apply(ctx) {
      ctx.sessionHooks.event.tap((e) => { if (e.type === 'agent_start') setTimeout(() => { throw new Error('tick'); }, 50); });
    }`);
    const h = home({ ticker });
    const r = await runCli(['chat', '--json', 'slow'], { home: h });
    expect(r.code, r.stderr).toBe(1);
    const events = jsonLines(r.stdout);
    const error = events.find((e) => e.type === 'error');
    expect(error?.error).toMatchObject({ code: 'plugin', plugin: 'ticker', hook: 'event' });
    expect(error?.error.message).toContain('plugin "ticker" failed in code its event tap started (uncaught exception): tick');
    expect(events.at(-1)).toMatchObject({ type: 'agent_end', status: 'error', error: { plugin: 'ticker' } });
    expect(events.filter((e) => e.type === 'agent_end')).toHaveLength(1);
    expect(r.stderr).toContain('plugin "ticker"');
    noCrash(r);
  });
});

describe('a tool that never settles and ignores abort', () => {
  it('after SIGINT and the grace, its result says it did not stop, the run ends aborted and the CLI exits 130', async () => {
    // setInterval: the tool also keeps the event loop busy, as a stuck socket or child would.
    const stuck = plugin('stuck-tool', `apply(ctx) {
      ctx.registerTool({ name: 'Stuck', description: 'never returns', parameters: { safeParse: (v) => ({ success: true, data: v }) }, jsonSchema: { type: 'object' },
        execute: () => new Promise(() => { setInterval(() => {}, 1000); }) });
    }`);
    const h = home({ stuck });
    const r = await spawnCli(['chat', '--json', '--mode', 'tools', 'tool:Stuck'], h, (line, child) => {
      if (line.includes('"tool_execution_start"')) child.kill('SIGINT');
    });
    expect(r.code, r.stderr).toBe(130);
    const events = jsonLines(r.stdout);
    const end = events.find((e) => e.type === 'tool_execution_end');
    expect(end?.result).toMatchObject({ isError: true, details: { abandoned: true, tool: 'Stuck' } });
    expect(end?.result.content[0].text).toBe('Tool call abandoned: Stuck did not stop within 300 ms after the run was stopped; it may still be running.');
    expect(events.at(-1)).toMatchObject({ type: 'agent_end', status: 'aborted' });
    noCrash(r);
  });
});

describe('plugins whose name is taken', () => {
  it('a third-party plugin named like a builtin is skipped, naming the builtin and its folder; the host boots', async () => {
    const h = home({ 'my-bash': plugin('tool-bash', 'apply() {}') });
    const r = await runCli(['chat', 'hi'], { home: h });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('hello from survive');
    const folder = path.join(h, 'plugins', 'my-bash');
    expect(r.stderr).toContain(`plugin "tool-bash" from ${folder} was skipped: it has the name of a builtin plugin, which was kept`);
  });

  it('of two third-party plugins with one name the first (sorted) is kept, and both folders are named', async () => {
    const h = home({ 'a-dup': plugin('dup', 'apply() {}'), 'b-dup': plugin('dup', 'apply() {}') });
    const r = await runCli(['chat', 'hi'], { home: h });
    expect(r.code, r.stderr).toBe(0);
    const [a, b] = ['a-dup', 'b-dup'].map((f) => path.join(h, 'plugins', f));
    expect(r.stderr).toContain(`plugin "dup" from ${b} was skipped: the plugin from ${a} has the same name and was loaded instead`);
  });
});
