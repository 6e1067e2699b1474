/**
 * Scheduled tasks with real processes: `liveagent cron` writes the database, `liveagent serve`
 * runs the tasks (a prompt through the mock Anthropic server, bash commands), survives a kill -9
 * and a restart (the task is still there and fires again; the run the crash cut off is recorded
 * failed), catches up a one-shot missed while it was down (`--missed once`) or records it missed
 * (`skip`), and records an overlapping fire skipped. Bad input exits 2 with the reason.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { anthropicReply, startMockAnthropic, type MockAnthropicServer } from '../fixtures/mock-anthropic.js';
import { BIN, jsonLines, runCli, tempHome } from '../helpers/cli.js';
import type { CronRun } from '../../plugins/cron/service.js';
import { cronSettings } from '../../plugins/cron/settings.js';
import { CronTasks, openCronStore } from '../../plugins/cron/tasks.js';

const KEY = 'sk-ant-test';
let mock: MockAnthropicServer;
const env = () => ({ ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: mock.url });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const CRON = { pollIntervalMs: 200, leaseMs: 2000, leaseRenewMs: 400, lateToleranceMs: 1000, killGraceMs: 100 };

beforeAll(async () => {
  mock = await startMockAnthropic({ apiKey: KEY, script: () => anthropicReply({ text: 'scheduled hello' }) });
});
afterAll(() => mock.close());

const children: ChildProcess[] = [];
const homes: string[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const h of homes.splice(0)) fs.rmSync(h, { recursive: true, force: true });
});

function home(): string {
  const h = tempHome({ cron: CRON });
  homes.push(h);
  return h;
}

/** `liveagent serve --port 0`, resolved once it prints its URL. */
async function serve(h: string): Promise<{ child: ChildProcess; stderr: () => string; exited: Promise<number | null> }> {
  const child = spawn(process.execPath, [BIN, 'serve', '--port', '0'], { env: { ...process.env, ...env(), LIVEAGENT_HOME: h }, cwd: h, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let out = '';
  let err = '';
  child.stderr!.on('data', (d) => (err += d));
  const exited = new Promise<number | null>((r) => child.once('exit', (code, signal) => r(code ?? (signal ? -1 : null))));
  await new Promise<void>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`serve did not start\n${out}\n${err}`)), 20_000);
    child.stdout!.on('data', (d) => {
      out += d;
      if (out.includes('LiveAgent is running at')) (clearTimeout(t), resolve());
    });
    child.once('exit', () => (clearTimeout(t), reject(new Error(`serve exited\n${out}\n${err}`))));
  });
  return { child, stderr: () => err, exited };
}

async function add(h: string, args: string[]): Promise<string> {
  const r = await runCli(['cron', 'add', '--json', ...args], { home: h, env: env() });
  expect(r.code, r.stderr).toBe(0);
  return jsonLines(r.stdout)[0]!.id as string;
}

async function until<T>(what: string, fn: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 15_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

describe('liveagent cron + serve', () => {
  it('bad input exits 2 with the reason; a valid schedule shows its next 3 fire times', async () => {
    const h = home();
    const cases: Array<[string[], RegExp]> = [
      [['cron', 'add', '--schedule', '61 * * * *', '--prompt', 'x'], /invalid schedule "61 \* \* \* \*": CronPattern: Invalid value for minute: 61/],
      [['cron', 'add', '--schedule', '* * * * *', '--tz', 'Mars/Olympus', '--bash', 'true'], /unknown time zone "Mars\/Olympus"/],
      [['cron', 'add', '--schedule', '* * * * *'], /one of --prompt TEXT, --bash CMD or --http URL is required/],
      [['cron', 'add', '--schedule', '2001-01-01T00:00:00', '--http', 'http://127.0.0.1/'], /is in the past/],
      [['cron', 'add', '--schedule', '* * * * *', '--http', 'ftp://x'], /url must be an http/],
      [['cron', 'rm', 't_nope'], /unknown task "t_nope"/],
      [['cron', 'frobnicate'], /unknown cron subcommand "frobnicate"/],
    ];
    for (const [args, reason] of cases) {
      const r = await runCli(args, { home: h });
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toMatch(reason);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
    }
    const ok = await runCli(['cron', 'add', '--schedule', '0 9 * * 1-5', '--tz', 'Europe/Berlin', '--bash', 'true', '--name', 'weekday'], { home: h });
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/^added t_[0-9a-f]+ "weekday" \(bash, 0 9 \* \* 1-5, Europe\/Berlin\)\nnext fire times \(Europe\/Berlin\):\n( {2}\d{4}-\d\d-\d\d 09:00:00\n){3}$/);
    const list = await runCli(['cron', 'list'], { home: h });
    expect(list.stdout).toMatch(/weekday\s+bash\s+0 9 \* \* 1-5\s+Europe\/Berlin\s+on\s+\d{4}-\d\d-\d\d 09:00:00/);
  });

  it('serve runs what the CLI added, survives kill -9 and a restart, and catches up missed one-shots', { timeout: 90_000 }, async () => {
    const h = home();
    const before = mock.requests.length;
    // Due in a few seconds, while no server runs: found late (past lateToleranceMs) once serve starts.
    const due = Date.now() + 7000;
    const iso = new Date(due).toISOString();
    const lateOnce = await add(h, ['--schedule', iso, '--bash', 'echo caught up > once.txt', '--missed', 'once']);
    const lateSkip = await add(h, ['--schedule', iso, '--bash', 'echo never > skip.txt', '--missed', 'skip']);
    const prompt = await add(h, ['--schedule', '*/2 * * * * *', '--prompt', 'cron says hello', '--mode', 'text', '--max-runs', '1']);
    const writer = await add(h, ['--schedule', '*/2 * * * * *', '--bash', 'echo fired >> fired.txt', '--name', 'writer']);
    const slow = await add(h, ['--schedule', '* * * * * *', '--bash', 'sleep 1.5', '--name', 'slow']);
    await sleep(Math.max(0, due + CRON.lateToleranceMs + 300 - Date.now()));

    const settings = cronSettings(CRON);
    const db = new CronTasks(await openCronStore(h, settings), () => settings);
    const runs = async (id: string): Promise<CronRun[]> => (await db.store.runs(id, 1000)).reverse();
    try {
      const first = await serve(h);
      // The prompt reached the model and made a conversation.
      const promptRun = await until('the prompt run', async () => (await runs(prompt)).find((r) => r.status === 'done'));
      const sent = mock.requests.slice(before).map((r) => JSON.stringify(r.body.messages));
      expect(sent.some((m) => m.includes('cron says hello'))).toBe(true);
      expect(promptRun.output).toBe('scheduled hello');
      const { default: Database } = await import('better-sqlite3');
      const history = new Database(path.join(h, 'liveagent.db'), { readonly: true, fileMustExist: true });
      try {
        expect(history.prepare('SELECT id FROM conversations WHERE id = ?').get(promptRun.conversationId)).toBeTruthy();
      } finally {
        history.close();
      }
      const listed = await runCli(['cron', 'runs', prompt], { home: h });
      expect(listed.code, listed.stderr).toBe(0);
      expect(listed.stdout).toMatch(new RegExp(`done .*conversation ${promptRun.conversationId}; scheduled hello`));

      await until('the bash file', async () => fs.existsSync(path.join(h, 'fired.txt')));
      await until('an overlapping fire recorded skipped', async () => (await runs(slow)).find((r) => r.status === 'skipped'));
      expect((await runs(lateOnce)).map((r) => r.status)).toEqual(['done']);
      expect(fs.readFileSync(path.join(h, 'once.txt'), 'utf8')).toBe('caught up\n');
      expect((await runs(lateSkip)).map((r) => r.status)).toEqual(['missed']);
      expect(fs.existsSync(path.join(h, 'skip.txt'))).toBe(false);

      // kill -9 while `sleep 1.5` runs: that run stays `running` in the database.
      await until('a slow run in progress', async () => (await runs(slow)).some((r) => r.status === 'running'));
      first.child.kill('SIGKILL');
      await first.exited;
      const cut = (await runs(slow)).filter((r) => r.status === 'running').map((r) => r.id);
      expect(cut.length).toBeGreaterThan(0);
      const writes = fs.readFileSync(path.join(h, 'fired.txt'), 'utf8').split('\n').length;

      const restartedAt = Date.now();
      const second = await serve(h);
      const again = await until('the writer to fire after the restart', async () => (await runs(writer)).find((r) => r.status === 'done' && (r.startedAt ?? 0) > restartedAt));
      expect(again.holder).not.toBe((await runs(writer)).find((r) => r.status === 'done')!.holder);
      expect(fs.readFileSync(path.join(h, 'fired.txt'), 'utf8').split('\n').length).toBeGreaterThan(writes);
      for (const id of cut) expect(await db.store.getRun(id)).toMatchObject({ status: 'failed', error: expect.stringMatching(/interrupted/) });
      // The one-shots and the used-up prompt task stay off; every task is still there.
      const list = jsonLines((await runCli(['cron', 'list', '--json'], { home: h })).stdout);
      expect(list.map((t) => t.id).sort()).toEqual([prompt, writer, slow, lateOnce, lateSkip].sort());
      expect(list.filter((t) => t.enabled).map((t) => t.id).sort()).toEqual([writer, slow].sort());

      // A graceful stop leaves no run `running`.
      second.child.kill('SIGINT');
      expect(await second.exited).toBe(130);
      for (const id of [prompt, writer, slow]) expect((await runs(id)).filter((r) => r.status === 'running')).toEqual([]);
    } finally {
      await db.store.close();
    }
  });
});
