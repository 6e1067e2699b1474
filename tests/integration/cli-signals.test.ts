/**
 * Stop signals and crashes of the `liveagent` host, with real processes: SIGTERM, SIGHUP and
 * SIGINT to `liveagent chat` and SIGTERM to `liveagent serve` stop the run and every process
 * its tools started (none is reparented to PID 1) and exit 128 + the signal's number; after a
 * kill -9 of the host, the next start stops what the dead host left, and never a process whose
 * pid merely matches a record.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { WebSocket } from 'ws';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { anthropicReply, startMockAnthropic, type MockAnthropicServer } from '../fixtures/mock-anthropic.js';
import { BIN, runCli, tempHome, type CliResult } from '../helpers/cli.js';
import { killSleepers, running, sleeper, statOf, until } from '../helpers/processes.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));


const children: ChildProcess[] = [];
const homes: string[] = [];
let release: (() => void) | undefined;
afterEach(() => {
  release?.();
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  // Whatever a failing test left running: killed by pid, never by name.
  killSleepers();
  for (const h of homes.splice(0)) fs.rmSync(h, { recursive: true, force: true });
});

function home(settings: unknown = { tools: { bash: { killGraceMs: 300 }, managedProcess: { stopGraceMs: 300 } } }): string {
  const h = tempHome(settings);
  homes.push(h);
  return h;
}

/** The CLI as a child we can signal. */
function spawnCli(args: string[], h: string, env: Record<string, string>): { child: ChildProcess; done: Promise<CliResult & { signal: NodeJS.Signals | null }>; stdout: () => string } {
  const full: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !/^(ANTHROPIC|OPENAI|GEMINI)_/.test(k)) full[k] = v;
  Object.assign(full, env, { LIVEAGENT_HOME: h });
  const child = spawn(process.execPath, [BIN, ...args], { env: full, cwd: h, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => (stderr += d));
  const done = new Promise<CliResult & { signal: NodeJS.Signals | null }>((resolve) => child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })));
  return { child, done, stdout: () => stdout };
}

const records = (h: string) => {
  const dir = path.join(h, 'run', 'processes');
  // A record is written atomically (a temp file renamed): one caught mid-write is not a record.
  return fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => !f.endsWith('.tmp')) : [];
};

let mock: MockAnthropicServer;
/** Tool calls the model makes, one per round; after them it answers, or hangs when `hang` is set. */
let steps: Array<{ name: string; input: Record<string, unknown> }> = [];
let hang = false;
beforeAll(async () => {
  mock = await startMockAnthropic({
    script: async (req) => {
      if (!req.body.tools?.length) return anthropicReply({ text: 'Hello.' });
      const round = req.body.messages.filter((m: { role: string; content: unknown }) => m.role === 'user' && JSON.stringify(m.content).includes('tool_result')).length;
      const step = steps[round];
      if (step) return anthropicReply({ toolUses: [{ id: `toolu_${round}`, name: step.name, input: step.input }], stopReason: 'tool_use' });
      if (hang) await new Promise<void>((r) => (release = r));
      return anthropicReply({ text: 'Done.' });
    },
  });
});
afterAll(() => mock.close());
const env = () => ({ ANTHROPIC_API_KEY: 'k', ANTHROPIC_BASE_URL: mock.url });

describe('liveagent chat: stop signals', () => {
  for (const [signal, code] of [['SIGTERM', 143], ['SIGHUP', 129], ['SIGINT', 130]] as const) {
    it(`${signal} while Bash runs and a ManagedProcess (with a setsid child) lives: all stopped, exit ${code}`, async () => {
      const [bashSleep, managed, escaped] = [sleeper(), sleeper(), sleeper()];
      steps = [
        { name: 'ManagedProcess', input: { action: 'start', command: `setsid ${escaped} > /dev/null 2>&1 & ${managed}`, name: 'server' } },
        { name: 'Bash', input: { command: bashSleep } },
      ];
      hang = false;
      const h = home();
      const cli = spawnCli(['chat', '--json', '--workdir', h, 'start a server, then wait'], h, env());
      await until(() => [bashSleep, managed, escaped].every((c) => running(c).length === 1), 15_000, 'all three running');
      const recorded = records(h);
      cli.child.kill(signal);
      const r = await cli.done;
      // Nothing survived the host, in the group or out of it.
      for (const c of [bashSleep, managed, escaped]) expect(running(c), c).toEqual([]);
      expect(r.code, r.stderr).toBe(code);
      expect(r.stderr).toContain(`stopped by ${signal}`);
      // While it ran, the host recorded its processes; a clean exit removed the record.
      expect(recorded).toEqual([`${cli.child.pid}.json`]);
      expect(records(h)).toEqual([]);
    });
  }
});

describe('liveagent serve: stop signals', () => {
  it('SIGTERM stops the running Bash and the ManagedProcess tree, then exits 143', async () => {
    const [bashSleep, managed, escaped] = [sleeper(), sleeper(), sleeper()];
    steps = [
      { name: 'ManagedProcess', input: { action: 'start', command: `setsid -f ${escaped} > /dev/null 2>&1; ${managed}` } },
      { name: 'Bash', input: { command: bashSleep } },
    ];
    hang = false;
    const h = home();
    const srv = spawnCli(['serve', '--port', '0'], h, env());
    await until(() => /#token=/.test(srv.stdout()), 15_000, 'the start line');
    const m = /http:\/\/([^/]+)\/#token=(\S+)/.exec(srv.stdout())!;
    const ws = new WebSocket(`ws://${m[1]}/ws?token=${m[2]}`);
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    ws.send(JSON.stringify({ type: 'chat_queue', id: 'r1', item: { action: 'send', clientRequestId: 'c1', text: 'go', mode: 'tools', workdir: h } }));
    try {
      await until(() => [bashSleep, managed, escaped].every((c) => running(c).length === 1), 15_000, 'all three running');
      srv.child.kill('SIGTERM');
      const r = await srv.done;
      for (const c of [bashSleep, managed, escaped]) expect(running(c), c).toEqual([]);
      expect(r.code, r.stderr).toBe(143);
      expect(records(h)).toEqual([]);
    } finally {
      ws.terminate();
    }
  });
});

describe('after kill -9 of the host', () => {
  it('the next start stops the processes the dead host left (escaped ones included) and removes its record', async () => {
    const [managed, escaped] = [sleeper(), sleeper()];
    steps = [{ name: 'ManagedProcess', input: { action: 'start', command: `setsid ${escaped} > /dev/null 2>&1 & ${managed}` } }];
    hang = true;
    const h = home();
    const before = mock.requests.length;
    const cli = spawnCli(['chat', '--workdir', h, 'start a server'], h, env());
    await until(() => running(managed).length === 1 && running(escaped).length === 1, 15_000, 'both running');
    await until(() => mock.requests.length >= before + 2, 5000, 'the hanging request');
    const recorded = records(h);
    cli.child.kill('SIGKILL');
    await cli.done;
    await sleep(200);
    // The attack: the host is gone, its processes are not.
    expect(running(managed)).toHaveLength(1);
    expect(running(escaped)).toHaveLength(1);

    const next = await runCli(['chat', '--mode', 'text', 'hello'], { home: h, env: env() });
    expect(next.code, next.stderr).toBe(0);
    expect(running(managed)).toEqual([]);
    expect(running(escaped)).toEqual([]);
    expect(recorded).toEqual([`${cli.child.pid}.json`]);
    expect(records(h)).toEqual([]);
  });

  it('a record whose pids now belong to other processes kills nothing (pid + start time + tag must all match)', async () => {
    const h = home();
    const dir = path.join(h, 'run', 'processes');
    fs.mkdirSync(dir, { recursive: true });
    // An unrelated process (no tag) whose pid the record names: as host (with another start
    // time, so the "host" is dead) and as a tree leader (with its real start time, wrong tag).
    const other = sleeper();
    const [bin, ...argv] = other.split(' ');
    const victim = spawn(bin!, argv, { detached: true, stdio: 'ignore' });
    children.push(victim);
    await until(() => running(other).length === 1);
    const start = statOf(victim.pid!)!.start;
    const record = { version: 1, hostPid: victim.pid, hostStart: start + 1, trees: [{ pgid: victim.pid, start, tag: 'ab'.repeat(12) }, { pgid: victim.pid, start: start + 7, tag: 'cd'.repeat(12) }] };
    fs.writeFileSync(path.join(dir, `${victim.pid}.json`), JSON.stringify(record));

    const next = await runCli(['chat', '--mode', 'text', 'hello'], { home: h, env: env() });
    expect(next.code, next.stderr).toBe(0);
    expect(running(other)).toEqual([victim.pid]);
    // Nothing of it was alive: the record is gone.
    expect(records(h)).toEqual([]);
  });
});
