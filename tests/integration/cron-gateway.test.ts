/**
 * The cron messages of the gateway protocol, through the server host and a real socket:
 * cron.list / add / update / remove / runs / preview, refusals with the reason, and the
 * `extension` broadcasts of task changes and runs. Also the gateway's extension point itself.
 */
import { afterEach, describe, expect, it } from 'vitest';
import cronPlugin from '../../plugins/cron/index.js';
import type { CronRun, CronTaskView } from '../../plugins/cron/service.js';
import { boot, cleanup, TestClient } from './gateway-harness.js';

afterEach(cleanup);

const FAST = { pollIntervalMs: 100, leaseMs: 1500, leaseRenewMs: 300, lateToleranceMs: 1000 };
type Ext = { type: 'extension'; name: string; data: { tasks?: CronTaskView[]; run?: CronRun } };
const isExt = (name: string, pred: (d: Ext['data']) => boolean = () => true) => (m: { type: string }) => m.type === 'extension' && (m as Ext).name === name && pred((m as Ext).data);

describe('gateway cron messages', () => {
  it('add, list, runs, update and remove tasks; changes and runs are broadcast', async () => {
    const b = await boot({ extra: [cronPlugin], settings: { cron: FAST } });
    const c = await TestClient.connect(b);
    const watcher = await TestClient.connect(b);

    const bad = await c.request({ type: 'cron.add', task: { schedule: '70 * * * *', action: { kind: 'bash', command: 'true' } } });
    expect(bad).toMatchObject({ ok: false, error: { code: 'bad_request' } });
    expect(!bad.ok && bad.error.message).toMatch(/invalid schedule "70 \* \* \* \*": .*minute: 70/);
    const badTz = await c.request({ type: 'cron.add', task: { schedule: '* * * * *', timezone: 'Moon/Base', action: { kind: 'bash', command: 'true' } } });
    expect(!badTz.ok && badTz.error.message).toMatch(/unknown time zone "Moon\/Base"/);
    const badShape = await c.request({ type: 'cron.update', patch: {} });
    expect(badShape).toMatchObject({ ok: false, error: { code: 'bad_request', message: expect.stringMatching(/^taskId: /) } });

    const preview = await c.ok<{ next: number[] }>({ type: 'cron.preview', schedule: '*/5 * * * * *', timezone: 'UTC' });
    expect(preview.next).toHaveLength(3);

    const { task } = await c.ok<{ task: CronTaskView }>({ type: 'cron.add', task: { name: 'tick', schedule: '* * * * * *', action: { kind: 'bash', command: 'echo gw', workdir: b.home } } });
    expect(task).toMatchObject({ name: 'tick', createdBy: 'gateway', enabled: true });
    expect(task.nextFireTimes).toHaveLength(3);
    await watcher.waitFor(isExt('cron.tasks', (d) => !!d.tasks?.some((t) => t.id === task.id)));

    const running = await watcher.waitFor<Ext>(isExt('cron.run', (d) => d.run?.taskId === task.id && d.run.status === 'running'));
    const done = await watcher.waitFor<Ext>(isExt('cron.run', (d) => d.run?.id === running.data.run!.id && d.run.status === 'done'));
    expect(done.data.run!.output).toBe('gw\n');

    const runs = await c.ok<{ runs: CronRun[] }>({ type: 'cron.runs', taskId: task.id });
    expect(runs.runs.some((r) => r.status === 'done' && r.output === 'gw\n')).toBe(true);
    const list = await c.ok<{ tasks: CronTaskView[] }>({ type: 'cron.list' });
    expect(list.tasks.map((t) => t.id)).toEqual([task.id]);

    const off = await c.ok<{ task: CronTaskView }>({ type: 'cron.update', taskId: task.id, patch: { enabled: false, name: 'paused tick' } });
    expect(off.task).toMatchObject({ enabled: false, name: 'paused tick', nextFireAt: null });
    const removed = await c.ok({ type: 'cron.remove', taskId: task.id });
    expect(removed).toEqual({ taskId: task.id, removed: true });
    const gone = await c.request({ type: 'cron.runs', taskId: task.id });
    expect(gone).toMatchObject({ ok: false, error: { code: 'not_found' } });
    expect(c.invalid).toEqual([]);
    expect(watcher.invalid).toEqual([]);
  });

  it('a type nobody registered is refused as before; plugins cannot take built-in or bare types', async () => {
    const b = await boot();
    const c = await TestClient.connect(b);
    const r = await c.request({ type: 'cron.list' });
    expect(r).toMatchObject({ ok: false, error: { code: 'bad_request' } });
    expect(() => b.gateway.registerHandler('settings.get', () => 1)).toThrow(/not built in/);
    expect(() => b.gateway.registerHandler('plain', () => 1)).toThrow(/namespaced/);
    const sub = b.gateway.registerHandler('acme.ping', (m) => ({ pong: m.n }));
    expect(() => b.gateway.registerHandler('acme.ping', () => 1)).toThrow(/already registered/);
    expect(await c.ok({ type: 'acme.ping', n: 7 })).toEqual({ pong: 7 });
    c.send({ type: 'acme.ping', id: 5 });
    const badId = await c.waitFor((m) => m.type === 'reply' && !m.ok && m.id === '');
    expect(badId).toMatchObject({ ok: false, error: { code: 'bad_request', message: 'id: must be a string of 1-200 characters' } });
    sub.dispose();
    expect(await c.request({ type: 'acme.ping' })).toMatchObject({ ok: false, error: { code: 'bad_request' } });
  });
});
