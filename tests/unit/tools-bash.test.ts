import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Settings } from '../../plugin-api.js';
import { createBashTool } from '../../plugins/tool-bash/index.js';
import { makeSandbox, textOf, type Sandbox } from '../helpers/tool-context.js';

let sb: Sandbox;
beforeEach(() => {
  sb = makeSandbox();
});
afterEach(() => sb.cleanup());

const bash = createBashTool();
const fast: Settings = { tools: { bash: { killGraceMs: 300, exitDrainMs: 100, progressIntervalMs: 50 } } };

/** Processes from `ps`: pid, process group and state. Zombies (Z) are dead: only reaping is left. */
function processes(): Array<{ pid: number; pgid: number; stat: string; args: string }> {
  return execFileSync('ps', ['-eo', 'pid=,pgid=,stat=,args='], { encoding: 'utf8' })
    .split('\n')
    .filter(Boolean)
    .map((l) => {
      const m = l.trim().match(/^(\d+)\s+(\d+)\s+(\S+)\s+(.*)$/)!;
      return { pid: Number(m[1]), pgid: Number(m[2]), stat: m[3]!, args: m[4]! };
    });
}
const live = () => processes().filter((p) => !p.stat.startsWith('Z'));
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  return live().some((p) => p.pid === pid);
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('Bash', () => {
  it('runs in the workdir and returns output and exit code', async () => {
    const r = await bash.execute({ command: 'pwd; echo out; echo err >&2' }, sb.ctx());
    expect(r.isError).toBe(false);
    expect(textOf(r)).toBe(`${sb.workdir}\nout\nerr\n\nExit code: 0`);
    expect(r.details).toMatchObject({ exitCode: 0, timedOut: false, aborted: false });
  });

  it('reports a non-zero exit code as an error result', async () => {
    const r = await bash.execute({ command: 'echo failing; exit 3' }, sb.ctx());
    expect(r.isError).toBe(true);
    expect(textOf(r)).toBe('failing\n\nExit code: 3');
    expect(r.details).toMatchObject({ exitCode: 3 });
  });

  it('never feeds the edited-files ledger, even for rm', async () => {
    sb.write('junk.txt', 'x');
    const r = await bash.execute({ command: 'rm junk.txt' }, sb.ctx());
    expect(r.isError).toBe(false);
    expect(sb.exists('junk.txt')).toBe(false);
    expect(r.editedFiles).toBeUndefined();
  });

  it('Must-show (default settings): a TERM-ignoring command with a 2 s timeout returns within 5 s and leaves no process behind', async () => {
    const started = Date.now();
    const pending = bash.execute({ command: `bash -c 'trap "" TERM; sleep 987 & sleep 987'`, timeout: 2000 }, sb.ctx());
    await sleep(700);
    const sleepers = live().filter((p) => p.args === 'sleep 987');
    expect(sleepers).toHaveLength(2);
    const r = await pending;
    expect(Date.now() - started).toBeLessThan(5000);
    expect(r.isError).toBe(true);
    expect(textOf(r)).toContain('Timed out after 2000 ms');
    const pgid = (r.details as { pid: number }).pid;
    expect(sleepers.every((p) => p.pgid === pgid)).toBe(true);
    for (const p of sleepers) expect(isAlive(p.pid)).toBe(false);
    expect(live().filter((p) => p.pgid === pgid)).toEqual([]);
  });

  it('abort stops the whole process group and returns the output so far', async () => {
    const ac = new AbortController();
    const pending = bash.execute({ command: 'echo started; sleep 986 & sleep 986' }, sb.ctx({ settings: fast, signal: ac.signal }));
    await sleep(400);
    ac.abort();
    const r = await pending;
    expect(r.isError).toBe(true);
    expect(textOf(r)).toContain('started');
    expect(r.details).toMatchObject({ aborted: true, timedOut: false });
    const pgid = (r.details as { pid: number }).pid;
    expect(live().filter((p) => p.pgid === pgid || p.args === 'sleep 986')).toEqual([]);
  });

  it('stops what a finished command left running in the background', async () => {
    const r = await bash.execute({ command: '(sleep 985 > /dev/null 2>&1 &); echo done' }, sb.ctx({ settings: fast }));
    expect(textOf(r)).toContain('done');
    expect(live().filter((p) => p.args === 'sleep 985')).toEqual([]);
    const r2 = await bash.execute({ command: 'sleep 984 & echo bg' }, sb.ctx({ settings: fast }));
    expect(r2.isError).toBe(false);
    expect(textOf(r2)).toContain('left running in the background were stopped');
    expect(live().filter((p) => p.args === 'sleep 984')).toEqual([]);
  });

  it('caps the output, keeping head and tail with a marker between them', async () => {
    const r = await bash.execute({ command: 'seq 1 20000' }, sb.ctx({ settings: { tools: { bash: { outputLimitBytes: 1000 } } } }));
    const text = textOf(r);
    expect(text.startsWith('1\n2\n3\n')).toBe(true);
    expect(text).toMatch(/\n\[\.\.\. \d+ bytes of output omitted \.\.\.\]\n/);
    expect(text).toContain('19999\n20000\n\nExit code: 0');
    const d = r.details as { outputBytes: number; omittedBytes: number };
    expect(d.outputBytes).toBe(Array.from({ length: 20000 }, (_, i) => `${i + 1}\n`).join('').length);
    expect(d.omittedBytes).toBe(d.outputBytes - 1000);
    expect(text.length).toBeLessThan(1200);
  });

  it('streams throttled progress through ctx.update', async () => {
    const ctx = sb.ctx({ settings: fast });
    const r = await bash.execute({ command: 'for i in 1 2 3 4; do echo tick$i; sleep 0.1; done' }, ctx);
    expect(r.isError).toBe(false);
    expect(ctx.updates.length).toBeGreaterThan(0);
    expect(ctx.updates.length).toBeLessThan(40);
    const last = ctx.updates.at(-1)!;
    expect(last.content?.[0]).toMatchObject({ type: 'text' });
    expect(JSON.stringify(last)).toContain('tick');
  });

  it('uses tools.bash.defaultTimeoutMs and caps timeout at tools.bash.maxTimeoutMs', async () => {
    const s: Settings = { tools: { bash: { defaultTimeoutMs: 300, maxTimeoutMs: 400, killGraceMs: 100 } } };
    const byDefault = await bash.execute({ command: 'sleep 983' }, sb.ctx({ settings: s }));
    expect(byDefault.details).toMatchObject({ timedOut: true, timeoutMs: 300 });
    const capped = await bash.execute({ command: 'sleep 983', timeout: 600_000 }, sb.ctx({ settings: s }));
    expect(capped.details).toMatchObject({ timedOut: true, timeoutMs: 400 });
    expect(textOf(capped)).toContain('The timeout was capped at 400 ms');
  });

  it('does not start when the run is already stopped, and reports a missing workdir', async () => {
    const ac = new AbortController();
    ac.abort();
    const r = await bash.execute({ command: 'touch made.txt' }, sb.ctx({ signal: ac.signal }));
    expect(r.isError).toBe(true);
    expect(sb.exists('made.txt')).toBe(false);
    const ctx = { ...sb.ctx(), workdir: path.join(sb.workdir, 'missing') };
    const bad = await bash.execute({ command: 'echo hi' }, ctx);
    expect(bad.isError).toBe(true);
    expect(textOf(bad)).toContain('could not be started');
  });

  it('answers invalid tools.bash settings with the field named', async () => {
    const r = await bash.execute({ command: 'echo hi' }, sb.ctx({ settings: { tools: { bash: { maxTimeoutMs: 'long' } } } }));
    expect(textOf(r)).toMatch(/^invalid settings: tools\.bash\.maxTimeoutMs: /);
  });
});
