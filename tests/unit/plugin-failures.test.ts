/**
 * The host survives every plugin (issue 11, items 7-10), in-process: every public hook's failure
 * path does what the error contract in plugin-api.d.ts says, naming the plugin; `apply` and
 * `ready` are bounded; a third-party plugin with a taken name is skipped, naming both sources;
 * what plugin code throws from timers and forgotten promises is blamed on the plugin (the run
 * its tap served ends with an error event and agent_end); a tool that ignores the stop is
 * abandoned after the grace. The real CLI is covered by tests/integration/plugin-host-survival.test.ts.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { LifecycleEvent, Plugin, PluginError, RuntimeErrorInfo, Settings, ToolDefinition, ToolResultBlock } from '../../plugin-api.js';
import { createKernel, type Kernel, type KernelOptions } from '../../core/kernel.js';
import { createKernelHooks, createSessionHooks, hookInfo, type OnThrow } from '../../core/hooks.js';
import { fakeProvider, type FakeStep } from '../helpers/fake-provider.js';
import { collectAll } from '../helpers/streams.js';

const kernels: Kernel[] = [];
const homes: string[] = [];
afterEach(async () => {
  for (const k of kernels.splice(0)) await k.shutdown();
  for (const h of homes.splice(0)) fs.rmSync(h, { recursive: true, force: true });
});

function tmpHome(): string {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'la-failures-'));
  homes.push(home);
  return home;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Fails fast (instead of at the test timeout) when today's code hangs. */
function within<T>(p: Promise<T>, ms = 5000, what = 'boot'): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([p, new Promise<T>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms`)), ms)))]).finally(() => clearTimeout(timer!));
}

const echo: ToolDefinition = {
  name: 'Echo',
  description: 'Echo text back (slowly enough for a progress save)',
  parameters: z.object({ text: z.string() }),
  async execute(args: { text: string }) {
    await sleep(15);
    return { content: [{ type: 'text', text: `echo:${args.text}` }] };
  },
};

const TOOL_ROUND: FakeStep[] = [{ toolCalls: [{ id: 't1', name: 'Echo', input: { text: 'a' } }] }, { text: 'done' }];

export interface Booted {
  kernel: Kernel;
  provider: ReturnType<typeof fakeProvider>;
  reported: RuntimeErrorInfo[];
  logs: string[];
}

export async function boot(extra: Plugin[], o: { steps?: FakeStep[]; settings?: Settings; home?: string; kernel?: KernelOptions } = {}): Promise<Booted> {
  const provider = fakeProvider(o.steps ?? TOOL_ROUND);
  const reported: RuntimeErrorInfo[] = [];
  const logs: string[] = [];
  const base: Plugin = {
    name: 'test-base',
    apply(ctx) {
      ctx.registerProvider(provider);
      ctx.registerTool(echo);
      ctx.hooks.failed.tap((info) => void reported.push(info));
    },
  };
  const kernel = await within(
    createKernel({
      home: o.home ?? tmpHome(),
      plugins: [base, ...extra],
      settings: { ...o.settings, runtime: { persistIntervalMs: 0, ...o.settings?.runtime } },
      thirdParty: false,
      logSink: (_l, _s, m) => void logs.push(m),
      ...o.kernel,
    }),
  );
  kernels.push(kernel);
  return { kernel, provider, reported, logs };
}

// ── Every public hook's failure path ────────────────────────────────────────────────────────

type Outcome = 'fails the run' | 'error tool result' | 'compaction error' | 'reported' | 'plugin failed' | 'logged' | 'rejects the call';

const OUTCOME_OF: Record<OnThrow, Outcome> = {
  'fail-run': 'fails the run',
  'tool-result': 'error tool result',
  compaction: 'compaction error',
  report: 'reported',
  'plugin-failed': 'plugin failed',
  log: 'logged',
  reject: 'rejects the call',
};

/** The documented outcome of a throw in each hook (plugin-api.d.ts, KernelHookTaps and SessionHookTaps). */
const CONTRACT: Record<string, Outcome> = {
  ready: 'plugin failed',
  shutdown: 'reported',
  sessionCreated: 'reported',
  failed: 'logged',
  conversationDeleted: 'reported',
  loadHistory: 'fails the run',
  saveUserMessage: 'fails the run',
  saveProgress: 'reported',
  saveRound: 'fails the run',
  truncateHistory: 'fails the run',
  deleteConversation: 'rejects the call',
  renameConversation: 'rejects the call',
  saveCheckpoint: 'compaction error',
  systemPrompt: 'fails the run',
  messages: 'fails the run',
  tools: 'fails the run',
  providerRequest: 'fails the run',
  compaction: 'compaction error',
  providerEvent: 'reported',
  beforeToolCall: 'error tool result',
  executeTool: 'error tool result',
  afterToolCall: 'error tool result',
  event: 'reported',
  turnEnd: 'reported',
};

const KERNEL_HOOKS = new Set(Object.keys(createKernelHooks()));
const PLUGIN = 'thrower';

/** Answers every compaction with a checkpoint that keeps the whole window (so saveCheckpoint is called). */
const checkpointer: Plugin = {
  name: 'test-checkpointer',
  apply(ctx) {
    ctx.sessionHooks.compaction.tap((req) =>
      req.trigger === 'pre-send'
        ? { checkpoint: { kind: 'summary', summary: 'S', firstKeptMessageId: req.messages[0]!.id, coveredMessageCount: 0, prunedToolCallIds: [], ledger: { read: [], modified: [] }, tokensBefore: 2, tokensAfter: 1 } }
        : undefined,
    );
  },
};

/** Calls reportFailure once everything is up, so that `failed` taps run. */
const reporter: Plugin = { name: 'test-reporter', apply: (ctx) => void ctx.hooks.ready.tap(() => ctx.reportFailure('heads up')) };

function thrower(hook: string, mode: 'throws' | 'rejects'): Plugin {
  const boom = mode === 'throws'
    ? () => {
        throw new Error(`boom in ${hook}`);
      }
    : async () => {
        await null;
        throw new Error(`boom in ${hook}`);
      };
  return {
    name: PLUGIN,
    apply(ctx) {
      const hooks = (KERNEL_HOOKS.has(hook) ? ctx.hooks : ctx.sessionHooks) as unknown as Record<string, { tap(fn: () => unknown): void }>;
      hooks[hook]!.tap(boom);
    },
  };
}

const names = (info: RuntimeErrorInfo | undefined, hook: string) => {
  expect(info?.plugin).toBe(PLUGIN);
  expect(info?.message).toContain(`plugin "${PLUGIN}"`);
  expect(info?.message).toContain(hook);
};

const rows = Object.keys(CONTRACT).flatMap((hook) => (['throws', 'rejects'] as const).map((mode) => ({ hook, mode, outcome: CONTRACT[hook]! })));

describe('a failing tap in every public hook', () => {
  it('the contract table covers every hook, and each hook is declared with that outcome', () => {
    const all = { ...createKernelHooks(), ...createSessionHooks() };
    expect(Object.keys(CONTRACT).sort()).toEqual(Object.keys(all).sort());
    for (const [name, hook] of Object.entries(all)) expect(OUTCOME_OF[hookInfo(hook)!.onThrow], name).toBe(CONTRACT[name]);
  });

  it.each(rows)('$hook: a tap that $mode → $outcome, naming the plugin', async ({ hook, mode, outcome }) => {
    const extra = [thrower(hook, mode), ...(hook === 'saveCheckpoint' ? [checkpointer] : []), ...(hook === 'failed' ? [reporter] : [])];
    const { kernel, provider, reported, logs } = await boot(extra);
    if (outcome === 'plugin failed') {
      const failure = kernel.failures.find((f) => f.plugin === PLUGIN);
      names(failure, hook);
      expect(kernel.loaded.find((p) => p.name === PLUGIN)?.status).toBe('failed');
    }
    let run = kernel.runtime.startRun({ input: [{ type: 'text', text: 'go' }], mode: 'tools' });
    let events = await collectAll(run.events);
    let result = await run.result;
    if (hook === 'truncateHistory') {
      // Only a run that edits and resends truncates: the first run went through.
      expect(result.status).toBe('completed');
      const first = events.find((e) => e.type === 'agent_start')!;
      const fromMessageId = first.type === 'agent_start' ? first.userMessage!.id : '';
      run = kernel.runtime.startRun({ conversationId: run.conversationId, truncateFromMessageId: fromMessageId, input: [{ type: 'text', text: 'again' }] });
      events = await collectAll(run.events);
      result = await run.result;
    }
    if (outcome === 'fails the run') {
      expect(result.status).toBe('error');
      names(result.error, hook);
      expect(result.error?.hook).toBe(hook);
      if (events.length) {
        expect(events.filter((e) => e.type === 'agent_end')).toHaveLength(1);
        const end = events.at(-1)!;
        expect(end.type === 'agent_end' && end.status).toBe('error');
      }
      return;
    }
    expect(result.status).toBe('completed');
    if (outcome === 'error tool result') {
      const toolMessage = provider.requests[1]!.messages.at(-1)!;
      const block = toolMessage.content[0] as ToolResultBlock;
      expect(block.isError).toBe(true);
      const text = JSON.stringify(block.content);
      expect(text).toContain(`plugin \\"${PLUGIN}\\" failed in hook ${hook}`);
      expect(block.details).toMatchObject({ plugin: PLUGIN, hook });
    } else if (outcome === 'compaction error') {
      const failedCompaction = events.find((e) => e.type === 'compaction' && e.payload.phase === 'error') as { payload: { error?: unknown } } | undefined;
      expect(String(failedCompaction?.payload.error)).toContain(`plugin "${PLUGIN}"`);
    } else if (outcome === 'rejects the call') {
      // Asked by the runtime's lifecycle methods, never by a run.
      const call = hook === 'deleteConversation' ? kernel.runtime.deleteConversation(run.conversationId) : kernel.runtime.renameConversation(run.conversationId, 'a title');
      const err = await call.then(() => undefined, (e: unknown) => e as PluginError);
      expect(err?.plugin).toBe(PLUGIN);
      expect(err?.hook).toBe(hook);
      expect(err?.message).toContain(`plugin "${PLUGIN}" failed in hook ${hook}`);
    } else if (outcome === 'reported') {
      if (hook === 'shutdown') await kernel.shutdown();
      if (hook === 'conversationDeleted') {
        await kernel.runtime.deleteConversation(run.conversationId);
        await sleep(0); // an async tap's rejection is reported once it settles
      }
      if (hook === 'turnEnd') await sleep(0);
      names(reported.find((r) => r.plugin === PLUGIN), hook);
      expect(logs.some((l) => l.includes(`plugin "${PLUGIN}" failed in hook ${hook}`))).toBe(true);
    } else if (outcome === 'logged') {
      const lines = logs.filter((l) => l.includes(`plugin "${PLUGIN}" failed in hook failed`));
      expect(lines).toHaveLength(1); // not reported through `failed` again (no loop)
      expect(reported.some((r) => r.message.includes('heads up'))).toBe(true);
    }
  });
});

// ── apply and ready are bounded ────────────────────────────────────────────────────────────

const tool = (name: string): ToolDefinition => ({ name, description: name, parameters: z.object({}), execute: async () => ({ content: [{ type: 'text', text: name }] }) });

describe('a plugin that never finishes starting', () => {
  it('apply that never settles is reported by name after the timeout; its registrations so far are undone; the host boots', async () => {
    const hanger: Plugin = {
      name: 'hanger',
      apply(ctx) {
        ctx.registerTool(tool('HalfDone'));
        return new Promise(() => {});
      },
    };
    const needsHanger: Plugin = { name: 'needs-hanger', requires: ['hanger'], apply: () => {} };
    const { kernel, reported } = await boot([hanger, needsHanger], { kernel: { applyTimeoutMs: 100 } });
    expect(kernel.loaded.find((p) => p.name === 'hanger')).toMatchObject({ status: 'failed', error: { plugin: 'hanger', hook: 'apply' } });
    expect(reported.find((r) => r.plugin === 'hanger')?.message).toBe('plugin "hanger" did not finish apply within 100 ms and was skipped (runtime.pluginApplyTimeoutMs sets the limit)');
    expect(kernel.loaded.find((p) => p.name === 'needs-hanger')?.error?.message).toContain('"hanger", which it requires, failed');
    expect(kernel.runtime.tools().map((t) => t.name)).toEqual(['Echo']);
    expect((await kernel.runtime.startRun({ input: [{ type: 'text', text: 'go' }] }).result).status).toBe('completed');
  });

  it('the limit comes from settings runtime.pluginApplyTimeoutMs; a registration the late apply still makes is refused', async () => {
    let late: unknown;
    const slow: Plugin = {
      name: 'slowpoke',
      async apply(ctx) {
        await sleep(150);
        try {
          ctx.registerTool(tool('TooLate'));
        } catch (err) {
          late = err;
        }
      },
    };
    const { kernel } = await boot([slow], { settings: { runtime: { pluginApplyTimeoutMs: 50 } } });
    expect(kernel.failures.map((f) => f.message)).toContain('plugin "slowpoke" did not finish apply within 50 ms and was skipped (runtime.pluginApplyTimeoutMs sets the limit)');
    await sleep(200);
    expect(String(late)).toContain('plugin "slowpoke" failed to load, so it can no longer register or tap anything');
    expect(kernel.runtime.tools().map((t) => t.name)).not.toContain('TooLate');
  });

  it('a ready tap that throws fails its plugin alone: reported by name, its tool withdrawn, the host boots', async () => {
    const p: Plugin = {
      name: 'not-ready',
      apply(ctx) {
        ctx.registerTool(tool('NotReady'));
        ctx.hooks.ready.tap(() => {
          throw new Error('no database');
        });
      },
    };
    const { kernel } = await boot([p]);
    expect(kernel.loaded.find((x) => x.name === 'not-ready')).toMatchObject({ status: 'failed', error: { plugin: 'not-ready', hook: 'ready', message: 'plugin "not-ready" failed in hook ready: no database' } });
    expect(kernel.runtime.tools().map((t) => t.name)).toEqual(['Echo']);
  });

  it('a ready tap that never settles is bounded by the same timeout', async () => {
    const p: Plugin = { name: 'ready-hang', apply: (ctx) => void ctx.hooks.ready.tap(() => new Promise(() => {})) };
    const { kernel } = await boot([p], { kernel: { applyTimeoutMs: 80 } });
    expect(kernel.loaded.find((x) => x.name === 'ready-hang')?.error?.message).toBe('plugin "ready-hang" did not finish its ready tap within 80 ms');
  });
});

// ── Name clashes ───────────────────────────────────────────────────────────────────────────

function pluginFolder(home: string, folder: string, name: string, toolName: string): string {
  const dir = path.join(home, 'plugins', folder);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: folder, type: 'module', main: 'index.js' }));
  fs.writeFileSync(
    path.join(dir, 'index.js'),
    `export default { name: ${JSON.stringify(name)}, apply(ctx) { ctx.registerTool({ name: ${JSON.stringify(toolName)}, description: 'x', parameters: { safeParse: (v) => ({ success: true, data: v }) }, jsonSchema: { type: 'object' }, execute: async () => ({ content: [] }) }); } };`,
  );
  return dir;
}

describe('plugins with the same name', () => {
  it('a third-party plugin named like a builtin is skipped, naming both; the builtin is kept and the host boots', async () => {
    const home = tmpHome();
    const dir = pluginFolder(home, 'tool-x', 'tool-x', 'Impostor');
    const builtin: Plugin = { name: 'tool-x', apply: (ctx) => void ctx.registerTool(tool('Genuine')) };
    const kernel = await within(createKernel({ home, builtins: [builtin], logSink: () => {} }));
    kernels.push(kernel);
    expect(kernel.loaded.find((p) => p.name === 'tool-x')?.status).toBe('active');
    const failure = kernel.failures.find((f) => f.plugin === 'tool-x')!;
    expect(failure.message).toBe(`plugin "tool-x" from ${dir} was skipped: it has the name of a builtin plugin, which was kept (rename the plugin in ${dir})`);
    expect(kernel.runtime.tools().map((t) => t.name)).toEqual(['Genuine']);
  });

  it('of two third-party plugins with one name the first (sorted) is kept, and the skip names both folders', async () => {
    const home = tmpHome();
    const a = pluginFolder(home, 'a-first', 'dup', 'FromA');
    const b = pluginFolder(home, 'b-second', 'dup', 'FromB');
    const kernel = await within(createKernel({ home, logSink: () => {} }));
    kernels.push(kernel);
    expect(kernel.runtime.tools().map((t) => t.name)).toEqual(['FromA']);
    expect(kernel.failures.map((f) => f.message)).toEqual([`plugin "dup" from ${b} was skipped: the plugin from ${a} has the same name and was loaded instead (rename one of them)`]);
  });

  it('two of the host’s own plugins with one name stop boot, naming both', async () => {
    const p: Plugin = { name: 'twin', apply: () => {} };
    await expect(createKernel({ home: tmpHome(), builtins: [p], plugins: [{ ...p }], thirdParty: false, logSink: () => {} })).rejects.toThrow(
      'two plugins are named "twin": the builtin plugin and the embedded plugin',
    );
  });
});

// ── What plugins throw where no try reaches ────────────────────────────────────────────────

/**
 * vitest counts every uncaught error as a failed run; here the kernel's handlers are the ones
 * under test, so vitest's own are set aside meanwhile (without the kernel's, the worker dies).
 */
async function withoutVitestHandlers<T>(fn: () => Promise<T>): Promise<T> {
  const kinds = ['uncaughtException', 'unhandledRejection'] as const;
  const saved = kinds.map((k) => [k, process.rawListeners(k)] as const);
  for (const k of kinds) process.removeAllListeners(k);
  try {
    return await fn();
  } finally {
    for (const [k, listeners] of saved) for (const l of listeners) process.on(k, l as (...a: unknown[]) => void);
  }
}

describe('errors plugins throw asynchronously', () => {
  it('a tap that throws from a timer during a run: the run ends with an error event and agent_end naming the plugin', async () => {
    await withoutVitestHandlers(async () => {
      const timer: Plugin = {
        name: 'timer-thrower',
        apply(ctx) {
          ctx.sessionHooks.event.tap((e) => {
            if (e.type === 'agent_start') setTimeout(() => {
              throw new Error('tick went wrong');
            }, 20);
          });
        },
      };
      const { kernel, reported } = await boot([timer], { steps: [{ hang: true, afterText: 'partial' }] });
      const run = kernel.runtime.startRun({ input: [{ type: 'text', text: 'go' }] });
      const events = await within(collectAll(run.events), 5000, 'the run');
      const result = await run.result;
      expect(result.status).toBe('error');
      expect(result.error).toMatchObject({ code: 'plugin', plugin: 'timer-thrower', hook: 'event' });
      expect(result.error?.message).toContain('plugin "timer-thrower" failed in code its event tap started (uncaught exception): tick went wrong');
      const errors = events.filter((e) => e.type === 'error');
      expect(errors).toHaveLength(1);
      expect(events.at(-1)).toMatchObject({ type: 'agent_end', status: 'error', error: { plugin: 'timer-thrower' } });
      expect(reported.some((r) => r.plugin === 'timer-thrower')).toBe(true);
      // The host goes on: the next run works.
      expect((await kernel.runtime.startRun({ conversationId: run.conversationId, input: [{ type: 'text', text: 'again' }] }).result).status).toBe('completed');
    });
  });

  it('a promise apply rejects and forgets is reported naming the plugin; the plugin stays loaded', async () => {
    await withoutVitestHandlers(async () => {
      const forgetful: Plugin = {
        name: 'forgetful',
        apply(ctx) {
          ctx.registerTool(tool('Kept'));
          void Promise.reject(new Error('nobody awaited me'));
        },
      };
      const { kernel, reported } = await boot([forgetful]);
      await sleep(10);
      expect(reported.find((r) => r.plugin === 'forgetful')?.message).toMatch(/^plugin "forgetful" failed in code its apply started \(unhandled promise rejection\): nobody awaited me/);
      expect(kernel.loaded.find((p) => p.name === 'forgetful')?.status).toBe('active');
    });
  });

  it('a tool whose execute throws from a timer is blamed on the plugin that registered it, and its run fails', async () => {
    await withoutVitestHandlers(async () => {
      const owner: Plugin = {
        name: 'tool-owner',
        apply(ctx) {
          ctx.registerTool({
            ...tool('Ticking'),
            execute: (_args, tctx) =>
              new Promise((resolve) => {
                setTimeout(() => {
                  throw new Error('tool timer');
                }, 10);
                tctx.signal.addEventListener('abort', () => resolve({ content: [{ type: 'text', text: 'stopped' }] }));
              }),
          });
        },
      };
      const { kernel } = await boot([owner], { steps: [{ toolCalls: [{ id: 't1', name: 'Ticking', input: {} }] }] });
      const result = await within(kernel.runtime.startRun({ input: [{ type: 'text', text: 'go' }] }).result, 5000, 'the run');
      expect(result.status).toBe('error');
      expect(result.error).toMatchObject({ plugin: 'tool-owner', hook: 'tool Ticking' });
    });
  });

  it('an error no plugin can be blamed for is logged as such and the host keeps running', async () => {
    await withoutVitestHandlers(async () => {
      const { kernel, logs } = await boot([]);
      await new Promise<void>((resolve) =>
        setTimeout(() => {
          setImmediate(resolve);
          throw new Error('from nowhere');
        }, 0),
      );
      expect(logs.some((l) => l.startsWith('uncaught exception that no plugin can be blamed for: from nowhere'))).toBe(true);
      expect((await kernel.runtime.startRun({ input: [{ type: 'text', text: 'go' }] }).result).status).toBe('completed');
    });
  });
});

// ── A tool that ignores the stop ───────────────────────────────────────────────────────────

describe('a tool that never settles and ignores abort', () => {
  it('is abandoned after runtime.toolAbortGraceMs: its result says it did not stop, and the run ends aborted', async () => {
    const stuck: Plugin = { name: 'stuck-tool', apply: (ctx) => void ctx.registerTool({ ...tool('Stuck'), execute: () => new Promise(() => {}) }) };
    const { kernel } = await boot([stuck], { steps: [{ toolCalls: [{ id: 't1', name: 'Stuck', input: {} }] }], settings: { runtime: { toolAbortGraceMs: 100 } } });
    const run = kernel.runtime.startRun({ input: [{ type: 'text', text: 'go' }] });
    const events: LifecycleEvent[] = [];
    const all = (async () => {
      for await (const e of run.events) {
        events.push(e);
        if (e.type === 'tool_execution_start') run.abort();
      }
    })();
    await within(all, 5000, 'the stopped run');
    const result = await run.result;
    expect(result.status).toBe('aborted');
    const end = events.find((e) => e.type === 'tool_execution_end');
    expect(end?.type === 'tool_execution_end' && end.result).toMatchObject({
      isError: true,
      content: [{ type: 'text', text: 'Tool call abandoned: Stuck did not stop within 100 ms after the run was stopped; it may still be running.' }],
      details: { cancelled: true, abandoned: true, tool: 'Stuck' },
    });
    expect(events.at(-1)).toMatchObject({ type: 'agent_end', status: 'aborted' });
  });
});
