/**
 * The scheduler in a kernel (fake provider, temp home, fast timings): prompt runs, bash and http
 * tasks, overlap, the missed-run policies, runs a crash left running, the lease between two
 * hosts, and failures that never stop the scheduler.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { CronRun } from '../../plugins/cron/service.js';
import type { SqliteCronStore } from '../../plugins/cron/store-sqlite.js';
import { bootCron, cleanupCron, directTasks, tempHome, waitFor } from './cron-harness.js';

afterEach(cleanupCron);

const runsOf = async (t: { store: { runs(id: string, n?: number): Promise<CronRun[]> } }, id: string) => (await t.store.runs(id, 1000)).reverse();
const HOUR = 3_600_000;

describe('cron scheduler', () => {
  it('a prompt task starts a run with its prompt in a new conversation and records it done', async () => {
    const { cron, provider, home } = await bootCron();
    const task = await cron.addTask({ schedule: '* * * * * *', action: { kind: 'prompt', prompt: 'daily digest please', mode: 'text' }, maxExecutions: 1 }, 'api');
    expect(task.nextFireTimes).toHaveLength(3);
    const db = await directTasks(home);
    const run = await waitFor('the run to finish', async () => (await runsOf(db, task.id)).find((r) => r.status === 'done'));
    expect(JSON.stringify(provider.requests[0]!.messages)).toContain('daily digest please');
    expect(run.conversationId).toMatch(/^c_/);
    expect(run.output).toBe('scheduled reply');
    // Its one execution is used up: the task is off and fires no more.
    const after = await db.find(task.id);
    expect(after).toMatchObject({ enabled: false, executions: 1 });
  });

  it('a prompt task with a conversation appends every run to it', async () => {
    const { kernel, cron, provider, home } = await bootCron();
    const first = kernel.runtime.startRun({ input: [{ type: 'text', text: 'hello there' }], mode: 'text' });
    await first.result;
    const task = await cron.addTask({ schedule: '* * * * * *', action: { kind: 'prompt', prompt: 'and again', mode: 'text', conversationId: first.conversationId }, maxExecutions: 1 }, 'api');
    const db = await directTasks(home);
    const run = await waitFor('the run', async () => (await runsOf(db, task.id)).find((r) => r.status === 'done'));
    expect(run.conversationId).toBe(first.conversationId);
    const roles = provider.requests.at(-1)!.messages.map((m) => m.role);
    expect(roles).toEqual(['user', 'assistant', 'user']);
  });

  it('a fire while the previous run still goes is recorded skipped', async () => {
    const { cron, home } = await bootCron();
    const task = await cron.addTask({ schedule: '* * * * * *', action: { kind: 'bash', command: 'sleep 1.6', workdir: home } }, 'api');
    const db = await directTasks(home);
    const skipped = await waitFor('a skipped fire', async () => (await runsOf(db, task.id)).find((r) => r.status === 'skipped'), 10_000);
    expect(skipped.output).toMatch(/previous run is still in progress/);
    await waitFor('a finished run', async () => (await runsOf(db, task.id)).find((r) => r.status === 'done'), 10_000);
    // Skipped fires are not executions.
    const executed = (await runsOf(db, task.id)).filter((r) => r.status === 'running' || r.status === 'done').length;
    expect((await db.find(task.id)).executions).toBe(executed);
  });

  it('a bash task writes its file; a failing one (and an unreachable URL) never stops the others', async () => {
    const home = tempHome();
    const db = await directTasks(home);
    const bad = await db.add({ schedule: '* * * * * *', action: { kind: 'bash', command: 'echo oops >&2; exit 3', workdir: home } }, 'cli');
    const nowhere = await db.add({ schedule: '* * * * * *', action: { kind: 'http', url: 'http://127.0.0.1:9/nothing', timeoutMs: 500 } }, 'cli');
    const good = await db.add({ schedule: '* * * * * *', action: { kind: 'bash', command: 'echo tick >> ticks.txt', workdir: home } }, 'cli');
    await bootCron({ home });
    await waitFor('two good runs', async () => (await runsOf(db, good.id)).filter((r) => r.status === 'done').length >= 2, 10_000);
    expect(fs.readFileSync(path.join(home, 'ticks.txt'), 'utf8')).toMatch(/^tick\ntick\n/);
    const failed = (await runsOf(db, bad.id)).find((r) => r.status === 'failed')!;
    expect(failed).toMatchObject({ error: 'exit code 3' });
    expect(failed.output).toContain('oops');
    expect((await runsOf(db, nowhere.id)).find((r) => r.status === 'failed')!.error).toMatch(/GET http:\/\/127\.0\.0\.1:9\/nothing failed/);
  });

  it('an http task records the status and body; a slow server is cut off at its timeout', async () => {
    const srv = http.createServer((req, res) => {
      if (req.url === '/slow') return; // never answers
      let body = '';
      req.on('data', (d) => (body += d));
      req.on('end', () => res.writeHead(201, { 'content-type': 'text/plain' }).end(`${req.method} ${req.headers['x-token']} ${body}`));
    });
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    const base = `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
    try {
      const { cron, home } = await bootCron();
      const post = await cron.addTask({ schedule: '* * * * * *', maxExecutions: 1, action: { kind: 'http', url: `${base}/hook`, method: 'POST', headers: { 'x-token': 'abc' }, body: 'payload' } }, 'api');
      const slow = await cron.addTask({ schedule: '* * * * * *', maxExecutions: 1, action: { kind: 'http', url: `${base}/slow`, timeoutMs: 300 } }, 'api');
      const db = await directTasks(home);
      const ok = await waitFor('the POST', async () => (await runsOf(db, post.id)).find((r) => r.status !== 'running'));
      expect(ok).toMatchObject({ status: 'done', output: 'HTTP 201 Created\nPOST abc payload' });
      const cut = await waitFor('the slow one', async () => (await runsOf(db, slow.id)).find((r) => r.status !== 'running'));
      expect(cut).toMatchObject({ status: 'failed', error: 'timed out after 300 ms' });
    } finally {
      srv.closeAllConnections();
      srv.close();
    }
  });

  it('missed: "once" runs once at start and records the rest missed; "skip" records them all', async () => {
    const home = tempHome();
    const db = await directTasks(home);
    // Hourly at a minute two minutes ago, created three hours ago: three fire times passed with no scheduler.
    const minute = (new Date().getUTCMinutes() + 58) % 60;
    const schedule = `${minute} * * * *`;
    const since = Date.now() - 3 * HOUR;
    const once = await db.add({ schedule, timezone: 'UTC', missed: 'once', action: { kind: 'bash', command: 'echo caught up', workdir: home } }, 'cli', since);
    const skip = await db.add({ schedule, timezone: 'UTC', missed: 'skip', action: { kind: 'bash', command: 'echo never', workdir: home } }, 'cli', since);
    await bootCron({ home });
    const ran = await waitFor('the catch-up run', async () => (await runsOf(db, once.id)).find((r) => r.status === 'done'));
    expect(ran.output).toBe('caught up\n');
    const onceRuns = await runsOf(db, once.id);
    expect(onceRuns.map((r) => r.status)).toEqual(['missed', 'missed', 'done']);
    expect(onceRuns[0]!.output).toMatch(/no scheduler was running/);
    await waitFor('the skip task handled', async () => (await runsOf(db, skip.id)).length === 3);
    const skipRuns = await runsOf(db, skip.id);
    expect(skipRuns.map((r) => r.status)).toEqual(['missed', 'missed', 'missed']);
    // The newest missed fire time is the latest passed one.
    expect(skipRuns.at(-1)!.scheduledAt).toBe(onceRuns.at(-1)!.scheduledAt);
    expect((await db.find(skip.id)).executions).toBe(0);
    expect((await db.find(skip.id)).enabled).toBe(true);
  });

  it('a one-shot task due while no scheduler ran: missed with skip, run once with once', async () => {
    const home = tempHome();
    const db = await directTasks(home);
    const when = new Date(Date.now() - 5000).toISOString();
    const skip = await db.add({ schedule: when, action: { kind: 'bash', command: 'true', workdir: home } }, 'cli', Date.now() - 10_000);
    const once = await db.add({ schedule: when, missed: 'once', action: { kind: 'bash', command: 'true', workdir: home } }, 'cli', Date.now() - 10_000);
    await bootCron({ home });
    await waitFor('both handled', async () => (await runsOf(db, skip.id)).length === 1 && (await runsOf(db, once.id)).some((r) => r.status === 'done'));
    expect((await runsOf(db, skip.id)).map((r) => r.status)).toEqual(['missed']);
    expect((await runsOf(db, once.id)).map((r) => r.status)).toEqual(['done']);
    // A one-shot that has fired (or was missed) is off.
    expect((await db.find(skip.id)).enabled).toBe(false);
    expect((await db.find(once.id)).enabled).toBe(false);
  });

  it('a run left running by a crashed host is recorded failed as interrupted, never lost', async () => {
    const home = tempHome();
    const db = await directTasks(home);
    const task = await db.add({ schedule: '0 0 1 1 *', action: { kind: 'bash', command: 'true', workdir: home } }, 'cli');
    (db.store as SqliteCronStore).db.prepare("INSERT INTO runs (task_id, status, scheduled_at, started_at, holder) VALUES (?, 'running', ?, ?, 'dead-host:1:x')").run(task.id, Date.now() - 1000, Date.now() - 1000);
    await bootCron({ home });
    const run = await waitFor('the interrupted run', async () => (await runsOf(db, task.id)).find((r) => r.status === 'failed'));
    expect(run.error).toMatch(/interrupted/);
    expect(run.finishedAt).toBeGreaterThan(0);
  });

  it('two hosts on one home: only the lease holder runs tasks; the other takes over when it stops', async () => {
    const home = tempHome();
    const a = await bootCron({ home });
    await waitFor('host A to hold the lease', async () => a.cron.isScheduling());
    const b = await bootCron({ home });
    const task = await a.cron.addTask({ schedule: '* * * * * *', action: { kind: 'bash', command: 'true', workdir: home } }, 'api');
    const db = await directTasks(home);
    await waitFor('two runs', async () => (await runsOf(db, task.id)).filter((r) => r.status === 'done').length >= 2, 10_000);
    expect(b.cron.isScheduling()).toBe(false);
    expect(new Set((await runsOf(db, task.id)).map((r) => r.holder)).size).toBe(1);
    const holderA = (await runsOf(db, task.id))[0]!.holder;
    await a.kernel.shutdown(); // releases the lease
    await waitFor('host B to take over', async () => b.cron.isScheduling(), 5000);
    await waitFor('a run by host B', async () => (await runsOf(db, task.id)).some((r) => r.holder !== holderA && r.status === 'done'), 10_000);
    // No fire ran twice.
    const times = (await runsOf(db, task.id)).map((r) => r.scheduledAt);
    expect(new Set(times).size).toBe(times.length);
  });

  it('a task added by another process (the CLI) is picked up by a running scheduler', async () => {
    const { home, cron } = await bootCron();
    const changes: string[] = [];
    cron.onChange((c) => changes.push(c.kind));
    const db = await directTasks(home);
    const task = await db.add({ schedule: '* * * * * *', maxExecutions: 1, action: { kind: 'bash', command: 'true', workdir: home } }, 'cli');
    await waitFor('its run', async () => (await runsOf(db, task.id)).some((r) => r.status === 'done'));
    expect(changes).toContain('tasks');
    expect(changes).toContain('run');
  });
});
