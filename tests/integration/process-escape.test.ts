/**
 * Processes that leave the process group (setsid, setsid -f, a double fork + setsid in a script)
 * are still stopped: when a Bash command returns, on its timeout and abort, when a
 * ManagedProcess is stopped or the host shuts down or exits, and after the `liveagent` CLI
 * exited. Real processes; each is named by a unique `sleep` duration and killed in afterEach.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Settings, ToolDefinition } from '../../plugin-api.js';
import { createBashTool } from '../../plugins/tool-bash/index.js';
import { createManagedProcessTool, ProcessManager } from '../../plugins/tool-managed-process/index.js';
import { anthropicReply, startMockAnthropic, type MockAnthropicServer } from '../fixtures/mock-anthropic.js';
import { jsonLines, runCli, tempHome } from '../helpers/cli.js';
import { makeSandbox, textOf, type Sandbox } from '../helpers/tool-context.js';
import { killSleepers, running, sleeper, until } from '../helpers/processes.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));


let sb: Sandbox;
let manager: ProcessManager;
let mp: ToolDefinition;
beforeEach(() => {
  sb = makeSandbox();
  manager = new ProcessManager();
  mp = createManagedProcessTool(manager);
});
afterEach(async () => {
  manager.killAllNow();
  // Whatever a failing test left running: killed by pid, never by name.
  killSleepers();
  sb.cleanup();
});

const bash = createBashTool();
const fast: Settings = { tools: { bash: { killGraceMs: 300, exitDrainMs: 100 }, managedProcess: { stopGraceMs: 300, startupWaitMs: 150 } } };

describe('Bash: processes that leave the process group', () => {
  it('`setsid sleep &`: nothing is left running when the command returns, and the result says so', async () => {
    const s = sleeper();
    const r = await bash.execute({ command: `setsid ${s} & echo started` }, sb.ctx({ settings: fast }));
    expect(running(s)).toEqual([]);
    expect(textOf(r)).toContain('started');
    expect(textOf(r)).toContain('left running in the background were stopped (1 of them had left its process group)');
    expect(r.details).toMatchObject({ backgroundStopped: true, escaped: 1, survivors: [] });
  });

  it('`setsid -f` and a script that double-forks into setsid are stopped too', async () => {
    const a = sleeper();
    const b = sleeper();
    sb.write('daemon.sh', `#!/bin/bash\n( setsid bash -c '${b}' > /dev/null 2>&1 < /dev/null & )\necho launched\n`);
    const r = await bash.execute({ command: `setsid -f ${a} > /dev/null 2>&1; bash daemon.sh` }, sb.ctx({ settings: fast }));
    expect(textOf(r)).toContain('launched');
    expect(running(a)).toEqual([]);
    expect(running(b)).toEqual([]);
    expect(r.details).toMatchObject({ backgroundStopped: true, survivors: [] });
  });

  it('on timeout the escaped processes are stopped with the group', async () => {
    const a = sleeper();
    const b = sleeper();
    const r = await bash.execute({ command: `setsid ${a} & ${b}`, timeout: 300 }, sb.ctx({ settings: fast }));
    expect(running(a)).toEqual([]);
    expect(running(b)).toEqual([]);
    expect(r.details).toMatchObject({ timedOut: true, survivors: [] });
    expect(textOf(r)).toContain('Timed out after 300 ms: the command and every process it started were stopped');
  });

  /** Abort `command` once `ready` holds; resolves with when `gone` held (ms after the abort, 0 = never) and the result. */
  async function abortAndWatch(command: string, ready: () => boolean, gone: () => boolean, deadline: number) {
    const ac = new AbortController();
    const pending = bash.execute({ command }, sb.ctx({ signal: ac.signal }));
    await until(ready);
    const t0 = Date.now();
    ac.abort();
    let goneAt = 0;
    while (Date.now() - t0 < deadline + 2000) {
      if (gone()) {
        goneAt = Date.now() - t0;
        break;
      }
      await sleep(10);
    }
    const r = await pending;
    return { goneAt, returnedAt: Date.now() - t0, r };
  }
  // A functional deadline, not a benchmark: LIVEAGENT_TEST_KILL_DEADLINE_MS raises it on a slow machine.
  const deadline = Number(process.env.LIVEAGENT_TEST_KILL_DEADLINE_MS ?? 1000);

  it('abort (default settings) removes a process group that ignores SIGTERM within the deadline', async () => {
    const s = sleeper();
    const { goneAt, returnedAt, r } = await abortAndWatch(`trap "" TERM; ${s} & ${s}`, () => running(s).length === 2, () => running(s).length === 0, deadline);
    expect(goneAt, 'the tree was still running').toBeGreaterThan(0);
    expect(goneAt).toBeLessThan(deadline);
    expect(returnedAt).toBeLessThan(deadline);
    expect(r.details).toMatchObject({ aborted: true, survivors: [] });
    expect(textOf(r)).toContain('Stopped because the run was stopped: the command and every process it started were stopped');
  });

  it('abort (default settings) removes a SIGTERM-ignoring process that left the group within the deadline', async () => {
    const inGroup = sleeper();
    const escaped = sleeper();
    const { goneAt, returnedAt, r } = await abortAndWatch(
      `trap "" TERM; setsid bash -c 'trap "" TERM; ${escaped}' & ${inGroup}`,
      () => running(inGroup).length === 1 && running(escaped).length === 1,
      () => running(inGroup).length === 0 && running(escaped).length === 0,
      deadline,
    );
    expect(goneAt, 'the tree was still running').toBeGreaterThan(0);
    expect(goneAt).toBeLessThan(deadline);
    expect(returnedAt).toBeLessThan(deadline);
    expect(r.details).toMatchObject({ aborted: true, escaped: 1, survivors: [] });
  });
});

describe('ManagedProcess: processes that leave the process group', () => {
  it('stop reaches a setsid child, and says it had left the group', async () => {
    const a = sleeper();
    const b = sleeper();
    await mp.execute({ action: 'start', command: `setsid ${a} > /dev/null 2>&1 & ${b}` }, sb.ctx({ settings: fast }));
    await until(() => running(a).length === 1 && running(b).length === 1);
    const r = await mp.execute({ action: 'stop', id: 'p1' }, sb.ctx({ settings: fast }));
    expect(running(a)).toEqual([]);
    expect(running(b)).toEqual([]);
    expect(textOf(r)).toMatch(/^p1 \(.*\) was stopped\.\n\[1 process\(es\) it started had left its process group; they were stopped too\.\]/);
    expect(r.details).toMatchObject({ status: 'stopped', escaped: 1, survivors: [] });
  });

  it('a `setsid -f` daemon outlives its shell but not stop, stopAll (shutdown) or killAllNow (exit)', async () => {
    const [a, b, c] = [sleeper(), sleeper(), sleeper()];
    for (const s of [a, b, c]) await mp.execute({ action: 'start', command: `setsid -f ${s} > /dev/null 2>&1` }, sb.ctx({ settings: fast }));
    await until(() => [a, b, c].every((s) => running(s).length === 1));
    expect(manager.list().map((p) => p.status)).toEqual(['exited', 'exited', 'exited']);
    const r = await mp.execute({ action: 'stop', id: 'p1' }, sb.ctx({ settings: fast }));
    expect(running(a)).toEqual([]);
    expect(r.details).toMatchObject({ how: 'already-exited', escaped: 1, survivors: [] });
    manager.killAllNow();
    expect(running(b)).toEqual([]);
    expect(running(c)).toEqual([]);
    const d = sleeper();
    await mp.execute({ action: 'start', command: `setsid -f ${d} > /dev/null 2>&1` }, sb.ctx({ settings: fast }));
    await until(() => running(d).length === 1);
    await manager.stopAll(300);
    expect(running(d)).toEqual([]);
  });
});

describe('liveagent chat: nothing is left running after the CLI exited', () => {
  let mock: MockAnthropicServer;
  const steps: Array<{ name: string; input: Record<string, unknown> }> = [];
  beforeAll(async () => {
    mock = await startMockAnthropic({
      script: (req) => {
        const round = req.body.messages.filter((m: { role: string; content: unknown }) => m.role === 'user' && JSON.stringify(m.content).includes('tool_result')).length;
        const step = steps[round];
        return step ? anthropicReply({ toolUses: [{ id: `toolu_${round}`, name: step.name, input: step.input }], stopReason: 'tool_use' }) : anthropicReply({ text: 'Done.' });
      },
    });
  });
  afterAll(() => mock.close());

  it('a Bash setsid escape and a never-stopped ManagedProcess daemon are gone when the CLI exits', async () => {
    const a = sleeper();
    const b = sleeper();
    steps.splice(0, steps.length, { name: 'Bash', input: { command: `setsid ${a} > /dev/null 2>&1 & echo bg` } }, { name: 'ManagedProcess', input: { action: 'start', command: `setsid -f ${b} > /dev/null 2>&1; sleep 0.2`, name: 'daemon' } });
    const home = tempHome({ tools: { bash: { killGraceMs: 300 }, managedProcess: { stopGraceMs: 300 } } });
    try {
      const work = fs.mkdtempSync(path.join(home, 'work-'));
      const r = await runCli(['chat', '--json', '--workdir', work, 'start things'], { home, env: { ANTHROPIC_API_KEY: 'k', ANTHROPIC_BASE_URL: mock.url }, timeoutMs: 30_000 });
      expect(r.code, r.stderr).toBe(0);
      expect(running(a)).toEqual([]);
      expect(running(b)).toEqual([]);
      const bashEnd = jsonLines(r.stdout).find((e) => e.type === 'tool_execution_end' && e.toolName === 'Bash')!;
      expect(JSON.stringify(bashEnd.result)).toContain('left running in the background were stopped (1 of them had left its process group)');
      // A clean exit leaves no process record behind.
      const records = path.join(home, 'run', 'processes');
      expect(fs.existsSync(records) ? fs.readdirSync(records) : []).toEqual([]);
    } finally {
      fs.rmSync(home, { recursive: true, force: true });
    }
  });
});
