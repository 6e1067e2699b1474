import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Settings, ToolDefinition } from '../../plugin-api.js';
import { createKernel } from '../../core/kernel.js';
import toolManagedProcess, { createManagedProcessTool, ProcessManager } from '../../plugins/tool-managed-process/index.js';
import { groupAlive } from '../../lib/tool-shared/process-group.js';
import { makeSandbox, textOf, type Sandbox } from '../helpers/tool-context.js';

let sb: Sandbox;
let manager: ProcessManager;
let tool: ToolDefinition;
beforeEach(() => {
  sb = makeSandbox();
  manager = new ProcessManager();
  tool = createManagedProcessTool(manager);
});
afterEach(async () => {
  await manager.stopAll(100);
  sb.cleanup();
});

const settings: Settings = { tools: { managedProcess: { stopGraceMs: 300, startupWaitMs: 150 } } };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(check: () => boolean, ms = 3000) {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await sleep(20);
  }
}

describe('ManagedProcess', () => {
  it('start, list, tail and stop: the lifecycle of a long-running command', async () => {
    const started = await tool.execute({ action: 'start', command: 'echo ready; echo "$PWD"; while true; do echo tick; sleep 0.05; done', name: 'ticker' }, sb.ctx({ settings }));
    expect(started.isError).toBeFalsy();
    expect(textOf(started)).toMatch(/^Started p1 \(ticker\), pid \d+/);
    const pid = (started.details as { pid: number }).pid;
    expect(groupAlive(pid)).toBe(true);

    const list = await tool.execute({ action: 'list' }, sb.ctx({ settings }));
    expect(textOf(list)).toMatch(/^p1\trunning for \d+s\tpid \d+\tticker: echo ready/);

    await until(() => manager.tail('p1', 100).text.split('\n').length > 5);
    const tail = await tool.execute({ action: 'tail', name: 'ticker', lines: 3 }, sb.ctx({ settings }));
    const body = textOf(tail).split('\n');
    expect(body[0]).toMatch(/^p1 \(ticker\), running/);
    expect(body.slice(1)).toEqual(['tick', 'tick', 'tick']);
    const head = await tool.execute({ action: 'tail', id: 'p1', lines: 1000 }, sb.ctx({ settings }));
    expect(textOf(head)).toContain(`ready\n${sb.workdir}\ntick`);

    const stopped = await tool.execute({ action: 'stop', id: 'p1' }, sb.ctx({ settings }));
    expect(textOf(stopped)).toMatch(/^p1 \(ticker\) was stopped\./);
    expect(stopped.details).toMatchObject({ status: 'stopped', how: 'terminated' });
    expect(groupAlive(pid)).toBe(false);
    expect(textOf(await tool.execute({ action: 'list' }, sb.ctx({ settings })))).toMatch(/^p1\tstopped \(signal SIGTERM\)/);
  });

  it('kills a process group that ignores SIGTERM after the grace', async () => {
    const r = await tool.execute({ action: 'start', command: `trap "" TERM; sleep 982 & sleep 982` }, sb.ctx({ settings }));
    const pid = (r.details as { pid: number }).pid;
    const stopped = await tool.execute({ action: 'stop', id: 'p1' }, sb.ctx({ settings }));
    expect(stopped.details).toMatchObject({ how: 'killed' });
    expect(textOf(stopped)).toContain('did not stop on SIGTERM within 300 ms and was killed');
    expect(groupAlive(pid)).toBe(false);
  });

  it('reports a command that ends at once with its exit code and output', async () => {
    const r = await tool.execute({ action: 'start', command: 'echo oops >&2; exit 3', name: 'bad' }, sb.ctx({ settings }));
    expect(r.isError).toBe(true);
    expect(textOf(r)).toBe('Process p1 (bad) ended at once: exited (exit code 3).\noops');
  });

  it('fails clearly on unknown ids and on missing arguments', async () => {
    expect(textOf(await tool.execute({ action: 'tail', id: 'p9' }, sb.ctx({ settings })))).toBe('No managed process "p9". None has been started.');
    const noCommand = tool.parameters.safeParse({ action: 'start' });
    expect(noCommand.success).toBe(false);
    if (!noCommand.success) expect(noCommand.error.issues[0]).toMatchObject({ path: ['command'], message: 'is required when action is "start"' });
    expect(tool.parameters.safeParse({ action: 'stop' }).success).toBe(false);
    expect(tool.parameters.safeParse({ action: 'list' }).success).toBe(true);
  });

  it('refuses to start beyond tools.managedProcess.maxRunning', async () => {
    const s: Settings = { tools: { managedProcess: { maxRunning: 1, startupWaitMs: 0 } } };
    expect((await tool.execute({ action: 'start', command: 'sleep 981' }, sb.ctx({ settings: s }))).isError).toBeFalsy();
    const second = await tool.execute({ action: 'start', command: 'sleep 981' }, sb.ctx({ settings: s }));
    expect(textOf(second)).toContain('tools.managedProcess.maxRunning');
  });

  it('keeps only the newest log bytes (tools.managedProcess.logLimitBytes)', async () => {
    const s: Settings = { tools: { managedProcess: { logLimitBytes: 1024, startupWaitMs: 0 } } };
    await tool.execute({ action: 'start', command: 'seq 1 5000; sleep 980' }, sb.ctx({ settings: s }));
    await until(() => manager.tail('p1', 1).text === '5000');
    const t = await tool.execute({ action: 'tail', id: 'p1', lines: 10_000 }, sb.ctx({ settings: s }));
    expect(textOf(t)).toContain('of older output no longer kept');
    expect(textOf(t)).not.toContain('\n1\n2\n');
    expect(textOf(t).endsWith('4999\n5000')).toBe(true);
  });
});

describe('ManagedProcess shutdown', () => {
  it('the kernel shutdown hook stops every process the plugin started', async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'la-mp-'));
    try {
      const kernel = await createKernel({ home, plugins: [toolManagedProcess], settings, thirdParty: false });
      const mp = kernel.runtime.tools().find((t) => t.name === 'ManagedProcess')!;
      expect(mp.promptRules?.[0]).toContain('with ManagedProcess, not with Bash');
      const pids: number[] = [];
      for (const command of ['sleep 979', 'trap "" TERM; sleep 979 & sleep 979']) {
        const r = await mp.execute({ action: 'start', command }, sb.ctx({ settings }));
        pids.push((r.details as { pid: number }).pid);
      }
      expect(pids.every(groupAlive)).toBe(true);
      await kernel.shutdown();
      expect(pids.filter(groupAlive)).toEqual([]);
    } finally {
      fs.rmSync(home, { recursive: true, force: true });
    }
  });
});
