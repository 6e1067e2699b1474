/**
 * Cron on PostgreSQL (issue 19 part 3): the store contract, run on both backends (the embedded
 * SQLite file and a throwaway PostgreSQL cluster, tests/helpers/postgres.ts) so they behave the
 * same: tasks, runs, the lease, claims, interrupted runs, "another process changed something";
 * races decided by the database (two claims of one fire, two hosts taking a fresh lease, adds
 * against cron.maxTasks). Then two real processes (tests/fixtures/cron-postgres-child.ts,
 * different homes, one database) with a task due every second: a task added through one is
 * seen by the other, every fire runs exactly once in total, and when the lease holder is
 * killed the other takes over. `liveagent cron` in two homes with the URL (from settings, from
 * the environment) works on the same tasks. Without a PostgreSQL the PostgreSQL half is skipped
 * with one line.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { afterEach, describe, expect, it } from 'vitest';
import { createKernel, type Kernel } from '../../core/kernel.js';
import cronPlugin from '../../plugins/cron/index.js';
import { CRON_SERVICE, type CronService } from '../../plugins/cron/service.js';
import type { CronStore, NewTask } from '../../plugins/cron/store.js';
import { cronSettings } from '../../plugins/cron/settings.js';
import { openCronStore } from '../../plugins/cron/tasks.js';
import type { CronRun, CronTaskView } from '../../plugins/cron/service.js';
import { bundledChild } from '../helpers/child-bundle.js';
import { jsonLines, runCli } from '../helpers/cli.js';
import { postgresSkip, usePostgres } from '../helpers/postgres.js';

const pg = usePostgres();
const child = bundledChild('tests/fixtures/cron-postgres-child.ts', 'cron-pg');

const FAST = { pollIntervalMs: 100, leaseMs: 1500, leaseRenewMs: 300, lateToleranceMs: 1000, killGraceMs: 100 };
const settings = cronSettings(FAST);

const dirs: string[] = [];
const stores: CronStore[] = [];
const children: ChildProcess[] = [];
const kernels: Kernel[] = [];
afterEach(async () => {
  for (const k of kernels.splice(0)) await k.shutdown();
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const s of stores.splice(0)) await s.close().catch(() => {});
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const d = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'la-cron-pg-')));
  dirs.push(d);
  return d;
}

interface Backend {
  name: 'sqlite' | 'postgres';
  skip: boolean;
  /** Two connections (as two processes have) to one fresh database. */
  pair(): Promise<[CronStore, CronStore]>;
}

async function opened(home: string, url?: string): Promise<CronStore> {
  const s = await openCronStore(home, settings, url);
  stores.push(s);
  return s;
}

const backends: Backend[] = [
  {
    name: 'sqlite',
    skip: false,
    pair: async () => {
      const home = tempDir();
      return [await opened(home), await opened(home)];
    },
  },
  {
    name: 'postgres',
    skip: !!postgresSkip,
    pair: async () => {
      const url = await pg.cluster().createDatabase();
      // Different homes: on PostgreSQL the home plays no part.
      return [await opened(tempDir(), url), await opened(tempDir(), url)];
    },
  },
];

const task = (over: Partial<NewTask> = {}): NewTask => ({
  name: 'tick',
  schedule: '* * * * * *',
  timezone: 'UTC',
  action: { kind: 'bash', command: 'true', workdir: '/tmp' },
  enabled: true,
  maxExecutions: null,
  overlap: 'skip',
  missed: 'skip',
  createdBy: 'cli',
  ...over,
});

const T0 = 1_800_000_000_000;

for (const b of backends) {
  describe.skipIf(b.skip)(`cron store contract (${b.name})`, () => {
    it('adds, finds, lists, updates and removes tasks; refuses past cron.maxTasks', async () => {
      const [s] = await b.pair();
      const a = await s.addTask(task({ name: 'alpha', action: { kind: 'http', url: 'https://example.com/x', method: 'POST', headers: { a: 'b' } } }), T0, 3);
      expect(a).toMatchObject({ id: expect.stringMatching(/^t_[0-9a-f]{12}$/), name: 'alpha', enabled: true, executions: 0, maxExecutions: null, createdAt: T0, updatedAt: T0, lastCheckAt: T0 });
      expect(a.action).toEqual({ kind: 'http', url: 'https://example.com/x', method: 'POST', headers: { a: 'b' } });
      const c = await s.addTask(task({ name: 'twin', maxExecutions: 2, overlap: 'allow', missed: 'once', enabled: false }), T0 + 1, 3);
      await s.addTask(task({ name: 'twin' }), T0 + 2, 3);
      await expect(s.addTask(task(), T0 + 3, 3)).rejects.toThrow('there are already 3 tasks (cron.maxTasks); remove one first');
      expect((await s.listTasks()).map((t) => t.createdAt)).toEqual([T0, T0 + 1, T0 + 2]);
      expect(await s.getTask(c.id)).toMatchObject({ enabled: false, maxExecutions: 2, overlap: 'allow', missed: 'once' });
      expect((await s.findTask('alpha'))?.id).toBe(a.id);
      expect(await s.findTask('twin')).toBeUndefined(); // two tasks have that name
      expect((await s.findTask(c.id))?.name).toBe('twin');

      // A rename keeps the fire-time bookkeeping; a new schedule restarts it from now.
      expect(await s.updateTask(a.id, { name: 'renamed' }, T0 + 10)).toMatchObject({ name: 'renamed', updatedAt: T0 + 10, lastCheckAt: T0 });
      expect(await s.updateTask(a.id, { schedule: '*/5 * * * * *' }, T0 + 20)).toMatchObject({ schedule: '*/5 * * * * *', lastCheckAt: T0 + 20 });
      expect(await s.updateTask('t_nope', { name: 'x' }, T0)).toBeUndefined();

      expect(await s.removeTask(a.id)).toBe(true);
      expect(await s.removeTask(a.id)).toBe(false);
      expect(await s.getTask(a.id)).toBeUndefined();
    });

    it('the lease: acquired when free or lapsed, renewed by its holder, busy for others, released only by its holder', async () => {
      const [s] = await b.pair();
      expect(await s.lease()).toBeUndefined();
      expect(await s.takeLease('A', T0, 1000)).toBe('acquired');
      expect(await s.takeLease('A', T0 + 500, 1000)).toBe('renewed');
      expect(await s.lease()).toEqual({ holder: 'A', expiresAt: T0 + 1500 });
      expect(await s.takeLease('B', T0 + 1499, 1000)).toBe('busy');
      await s.releaseLease('B'); // not B's: nothing happens
      expect((await s.lease())?.holder).toBe('A');
      expect(await s.takeLease('B', T0 + 1500, 1000)).toBe('acquired'); // A's lapsed
      expect(await s.takeLease('A', T0 + 1600, 1000)).toBe('busy');
      await s.releaseLease('B');
      expect(await s.lease()).toBeUndefined();
      // A holder whose own lease lapsed takes it again as a new acquisition.
      expect(await s.takeLease('A', T0 + 5000, 1000)).toBe('acquired');
      expect(await s.takeLease('A', T0 + 7000, 1000)).toBe('acquired');
    });

    it('claim: records missed fires and the run in one go, only while the lease is ours and the task unchanged', async () => {
      const [s] = await b.pair();
      const t = await s.addTask(task({ maxExecutions: 2 }), T0, 10);
      const claim = { taskId: t.id, holder: 'A', now: T0 + 5000, expectLastCheckAt: T0, missed: [{ scheduledAt: T0 + 1000, output: 'missed: one' }], run: { scheduledAt: T0 + 5000, status: 'running' as const }, disable: false, runsKept: 100 };
      expect(await s.claim(claim)).toBeUndefined(); // no lease
      await s.takeLease('B', T0, 10_000);
      expect(await s.claim(claim)).toBeUndefined(); // someone else's lease
      await s.releaseLease('B');
      await s.takeLease('A', T0, 10_000);
      expect(await s.claim({ ...claim, expectLastCheckAt: T0 - 1 })).toBeUndefined(); // the task changed meanwhile
      const got = await s.claim(claim);
      expect(got?.runId).toEqual(expect.any(Number));
      expect(got?.task).toMatchObject({ executions: 1, lastCheckAt: T0 + 5000, enabled: true });
      expect(await s.claim(claim)).toBeUndefined(); // the same fire again: already handled
      const runs = (await s.runs(t.id)).reverse();
      expect(runs.map((r) => [r.status, r.scheduledAt, r.holder])).toEqual([
        ['missed', T0 + 1000, 'A'],
        ['running', T0 + 5000, 'A'],
      ]);
      expect(runs[0]).toMatchObject({ output: 'missed: one', startedAt: null, finishedAt: T0 + 5000 });
      expect(runs[1]).toMatchObject({ startedAt: T0 + 5000, finishedAt: null });

      // A skipped fire is no execution; the last execution turns the task off.
      const skip = await s.claim({ ...claim, now: T0 + 6000, expectLastCheckAt: T0 + 5000, missed: [], run: { scheduledAt: T0 + 6000, status: 'skipped', output: 'skipped: busy' } });
      expect(skip).toMatchObject({ task: { executions: 1 } });
      expect(skip?.runId).toBeUndefined();
      const last = await s.claim({ ...claim, now: T0 + 7000, expectLastCheckAt: T0 + 6000, missed: [], run: { scheduledAt: T0 + 7000, status: 'running' }, disable: true });
      expect(last?.task).toMatchObject({ executions: 2, enabled: false });
      expect(await s.claim({ ...claim, now: T0 + 8000, expectLastCheckAt: T0 + 7000, missed: [] })).toBeUndefined(); // off

      // Runs finish; lastRuns is the newest running, done or failed one of each task.
      const conv = await s.finishRun(got!.runId!, { status: 'done', finishedAt: T0 + 5500, output: 'ok' });
      expect(conv).toMatchObject({ status: 'done', output: 'ok', finishedAt: T0 + 5500, error: null });
      await s.setRunConversation(last!.runId!, 'c_123');
      expect(await s.getRun(last!.runId!)).toMatchObject({ status: 'running', conversationId: 'c_123' });
      expect(await s.finishRun(last!.runId!, { status: 'failed', finishedAt: T0 + 7100, error: 'exit code 1' })).toMatchObject({ status: 'failed', conversationId: 'c_123', error: 'exit code 1' });
      expect((await s.lastRuns()).get(t.id)?.id).toBe(last!.runId);
      expect(await s.getRun(999_999)).toBeUndefined();
    });

    it('prunes old runs past runsKept, keeps running ones, and a removed task takes its runs along', async () => {
      const [s] = await b.pair();
      const t = await s.addTask(task(), T0, 10);
      await s.takeLease('A', T0, 1_000_000);
      let at = T0;
      const first = await s.claim({ taskId: t.id, holder: 'A', now: ++at, expectLastCheckAt: T0, missed: [], run: { scheduledAt: at, status: 'running' }, disable: false, runsKept: 3 });
      for (let i = 0; i < 5; i++) await s.claim({ taskId: t.id, holder: 'A', now: at + 1, expectLastCheckAt: at++, missed: [], run: { scheduledAt: at, status: 'skipped' }, disable: false, runsKept: 3 });
      const kept = await s.runs(t.id, 100);
      expect(kept.filter((r) => r.status === 'skipped')).toHaveLength(3);
      expect(kept.some((r) => r.id === first!.runId)).toBe(true); // still running: never pruned
      expect(await s.runs(t.id, 2)).toHaveLength(2);
      await s.removeTask(t.id);
      expect(await s.runs(t.id, 100)).toEqual([]);
      expect(await s.getRun(first!.runId!)).toBeUndefined();
    });

    it("a new holder fails the runs another holder left running or pending, not its own", async () => {
      const [s] = await b.pair();
      const t = await s.addTask(task(), T0, 10);
      await s.takeLease('dead', T0, 1000);
      const theirs = await s.claim({ taskId: t.id, holder: 'dead', now: T0 + 1, expectLastCheckAt: T0, missed: [], run: { scheduledAt: T0 + 1, status: 'running' }, disable: false, runsKept: 100 });
      expect(await s.takeLease('alive', T0 + 2000, 1000)).toBe('acquired');
      const mine = await s.claim({ taskId: t.id, holder: 'alive', now: T0 + 2001, expectLastCheckAt: T0 + 1, missed: [], run: { scheduledAt: T0 + 2001, status: 'running' }, disable: false, runsKept: 100 });
      expect(await s.failInterrupted('alive', T0 + 2002)).toBe(1);
      expect(await s.getRun(theirs!.runId!)).toMatchObject({ status: 'failed', finishedAt: T0 + 2002, error: 'interrupted: the host running it stopped before it finished' });
      expect(await s.getRun(mine!.runId!)).toMatchObject({ status: 'running' });
      expect(await s.failInterrupted('alive', T0 + 3000)).toBe(0);
    });

    it("othersChanged: true after another connection's commit, never for this connection's own", async () => {
      const [a, other] = await b.pair();
      expect(await a.othersChanged()).toBe(false); // the first look only sets the baseline
      const t = await a.addTask(task(), T0, 10);
      await a.updateTask(t.id, { name: 'mine' }, T0 + 1);
      expect(await a.othersChanged()).toBe(false);
      await other.updateTask(t.id, { name: 'theirs' }, T0 + 2);
      expect(await a.othersChanged()).toBe(true);
      expect(await a.othersChanged()).toBe(false);
      await a.removeTask(t.id);
      await other.addTask(task(), T0 + 3, 10);
      await a.addTask(task(), T0 + 4, 10);
      expect(await a.othersChanged()).toBe(true); // theirs came between two of mine
      expect(await other.othersChanged()).toBe(false);
      await a.addTask(task(), T0 + 5, 10);
      expect(await other.othersChanged()).toBe(true);
    });

    it('races the database decides: one of two claims of a fire, one of two hosts on a fresh lease, adds against maxTasks', async () => {
      const [x, y] = await b.pair();
      const leases = await Promise.all([x.takeLease('X', T0, 10_000), y.takeLease('Y', T0, 10_000)]);
      expect(leases.sort()).toEqual(['acquired', 'busy']);
      const holder = (await x.lease())!.holder;
      const t = await x.addTask(task(), T0, 10);
      const claim = { taskId: t.id, holder, now: T0 + 1000, expectLastCheckAt: T0, missed: [], run: { scheduledAt: T0 + 1000, status: 'running' as const }, disable: false, runsKept: 100 };
      const claims = await Promise.all([x.claim(claim), y.claim(claim), x.claim(claim), y.claim(claim)]);
      expect(claims.filter(Boolean)).toHaveLength(1);
      expect(await x.runs(t.id)).toHaveLength(1);
      const adds = await Promise.allSettled(Array.from({ length: 6 }, (_, i) => (i % 2 ? x : y).addTask(task(), T0 + i, 4)));
      expect(adds.filter((r) => r.status === 'fulfilled')).toHaveLength(3);
      expect(await x.listTasks()).toHaveLength(4);
    });
  });
}

/** A serve-like child on the database at `url`, in a home of its own. */
async function startHost(url: string) {
  const home = tempDir();
  const proc = spawn(process.execPath, [child.entry(), home, JSON.stringify(FAST)], { cwd: home, env: { ...process.env, LIVEAGENT_DATABASE_URL: url }, stdio: ['pipe', 'pipe', 'pipe'] });
  children.push(proc);
  let stderr = '';
  proc.stderr!.on('data', (d) => (stderr += d));
  const waiting = new Map<number, (v: Record<string, unknown>) => void>();
  let ready!: () => void;
  const started = new Promise<void>((resolve, reject) => {
    ready = resolve;
    proc.once('exit', (code) => reject(new Error(`the cron child exited (${code}) before it was ready\n${stderr}`)));
  });
  readline.createInterface({ input: proc.stdout! }).on('line', (line) => {
    if (!line.startsWith('{')) return; // a log line
    const msg = JSON.parse(line) as Record<string, unknown>;
    if (msg.ready) ready();
    else waiting.get(msg.id as number)?.(msg);
  });
  await started;
  let n = 0;
  const ask = <T>(op: string, extra: Record<string, unknown> = {}) =>
    new Promise<T>((resolve) => {
      const id = ++n;
      waiting.set(id, (v) => (waiting.delete(id), resolve(v as T)));
      proc.stdin!.write(`${JSON.stringify({ id, op, ...extra })}\n`);
    });
  const exited = new Promise<void>((r) => (proc.exitCode !== null ? r() : proc.once('exit', () => r())));
  return {
    proc,
    holderPrefix: `${os.hostname()}:${proc.pid}:`,
    stderr: () => stderr,
    exited,
    scheduling: async () => (await ask<{ scheduling: boolean }>('status')).scheduling,
    add: (t: unknown) => ask<{ task?: CronTaskView; error?: string }>('add', { task: t }),
    list: async () => (await ask<{ tasks: CronTaskView[] }>('list')).tasks,
  };
}

async function until<T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs = 20_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe.skipIf(!!postgresSkip)('cron across processes on one PostgreSQL', () => {
  it('a task added through one host is seen by the other; every fire runs once; the other host takes over from a killed holder', { timeout: 90_000 }, async () => {
    const url = await pg.cluster().createDatabase();
    const [one, two] = await Promise.all([startHost(url), startHost(url)]);
    const hosts = [one, two];
    const holder = await until('one host to hold the lease', async () => {
      const on = await Promise.all(hosts.map((h) => h.scheduling()));
      return on.filter(Boolean).length === 1 ? hosts[on.indexOf(true)]! : undefined;
    });
    const standby = holder === one ? two : one;
    expect(await standby.scheduling()).toBe(false);

    // Added through the standby: the holder's scheduler picks it up from the database.
    const work = tempDir();
    const added = await standby.add({ name: 'every second', schedule: '* * * * * *', timezone: 'UTC', action: { kind: 'bash', command: 'echo fired >> fires.txt', workdir: work } });
    expect(added.error).toBeUndefined();
    const id = added.task!.id;
    expect((await holder.list()).map((t) => t.id)).toEqual([id]);

    const store = await opened(tempDir(), url);
    const runs = async (): Promise<CronRun[]> => (await store.runs(id, 1000)).reverse();
    await until('three runs by the holder', async () => (await runs()).filter((r) => r.status === 'done').length >= 3);
    expect(new Set((await runs()).map((r) => r.holder!.slice(0, r.holder!.lastIndexOf(':') + 1)))).toEqual(new Set([holder.holderPrefix]));
    // The standby's list shows the runs too (one database).
    expect((await standby.list())[0]!.lastRun).not.toBeNull();

    holder.proc.kill('SIGKILL');
    await holder.exited;
    await until('the standby to take the lease over', () => standby.scheduling(), 20_000);
    await until('two runs by the new holder', async () => (await runs()).filter((r) => r.status === 'done' && r.holder!.startsWith(standby.holderPrefix)).length >= 2);

    standby.proc.kill('SIGTERM');
    await standby.exited;
    const all = await runs();
    // Every fire time was handled once, by one host: run, recorded missed (the takeover gap) or skipped.
    const times = all.map((r) => r.scheduledAt);
    expect(new Set(times).size).toBe(times.length);
    expect(all.every((r) => r.holder!.startsWith(holder.holderPrefix) || r.holder!.startsWith(standby.holderPrefix))).toBe(true);
    const done = all.filter((r) => r.status === 'done').length;
    const failed = all.filter((r) => r.status === 'failed').length; // cut off by the kill, recorded interrupted
    const lines = fs.readFileSync(path.join(work, 'fires.txt'), 'utf8').split('\n').filter(Boolean).length;
    expect(lines).toBeGreaterThanOrEqual(done);
    expect(lines).toBeLessThanOrEqual(done + failed);
    expect(all.filter((r) => r.status === 'running')).toEqual([]);
    // The graceful stop gave the lease up at once.
    expect(await store.lease()).toBeUndefined();
  });

  it('liveagent cron works on the PostgreSQL tasks: two homes, the URL from history.url or LIVEAGENT_DATABASE_URL, no cron.db', async () => {
    const url = await pg.cluster().createDatabase();
    const fromSettings = tempDir();
    fs.writeFileSync(path.join(fromSettings, 'settings.json'), JSON.stringify({ cron: FAST, history: { url } }));
    const fromEnv = tempDir();
    const added = await runCli(['cron', 'add', '--json', '--schedule', '0 9 * * *', '--tz', 'UTC', '--bash', 'echo hi', '--name', 'morning'], { home: fromSettings });
    expect(added.code, added.stderr).toBe(0);
    const id = jsonLines(added.stdout)[0]!.id as string;
    const listed = await runCli(['cron', 'list', '--json'], { home: fromEnv, env: { LIVEAGENT_DATABASE_URL: url } });
    expect(listed.code, listed.stderr).toBe(0);
    expect(jsonLines(listed.stdout).map((t) => [t.id, t.name])).toEqual([[id, 'morning']]);
    const off = await runCli(['cron', 'disable', id], { home: fromEnv, env: { LIVEAGENT_DATABASE_URL: url } });
    expect(off.code, off.stderr).toBe(0);
    const store = await opened(tempDir(), url);
    expect(await store.getTask(id)).toMatchObject({ enabled: false, createdBy: 'cli' });
    expect(fs.existsSync(path.join(fromSettings, 'cron.db')) || fs.existsSync(path.join(fromEnv, 'cron.db'))).toBe(false);
  });

  it('two kernels with history.url in their settings: the holder stops gracefully and the other takes over at once, no fire twice', async () => {
    const url = await pg.cluster().createDatabase();
    const boot = async () => {
      const kernel = await createKernel({ home: tempDir(), plugins: [cronPlugin], settings: { history: { url }, cron: { ...FAST, leaseMs: 60_000, leaseRenewMs: 300 } }, thirdParty: false });
      kernels.push(kernel);
      const cron = kernel.services.get<CronService>(CRON_SERVICE)!;
      await cron.start();
      return { kernel, cron };
    };
    const a = await boot();
    await until('A to hold the lease', async () => a.cron.isScheduling());
    const b = await boot();
    const t = await b.cron.addTask({ schedule: '* * * * * *', action: { kind: 'bash', command: 'true', workdir: tempDir() } }, 'api');
    const runs = async () => (await a.cron.runs(t.id, 1000)).runs.reverse();
    await until('two runs by A', async () => (await runs()).filter((r) => r.status === 'done').length >= 2);
    expect(b.cron.isScheduling()).toBe(false);
    const holderA = (await runs())[0]!.holder;
    // A lease of a minute: B can only take over this soon because A gave it up.
    await a.kernel.shutdown();
    await until('B to take over', async () => b.cron.isScheduling());
    const byB = await until('a run by B', async () => (await b.cron.runs(t.id, 1000)).runs.find((r) => r.status === 'done' && r.holder !== holderA));
    expect(byB.holder).not.toBe(holderA);
    const times = (await b.cron.runs(t.id, 1000)).runs.map((r) => r.scheduledAt);
    expect(new Set(times).size).toBe(times.length);
  });
});
