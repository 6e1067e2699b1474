/**
 * The permissions plugin inside a real kernel run with the real Bash tool and a scripted
 * provider: a deny rule refuses Bash before any process starts (the result names the rule), an
 * "ask" waits for a decision through the `permissions` service (approve runs it, deny and the
 * deadline refuse it), approve_session skips the next ask, a stop settles it as denied, an MCP-
 * named tool is covered too, and a broken settings section refuses everything (fail closed).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { LifecycleEvent, Plugin, ProviderRequest, Settings, ToolResultBlock } from '../../plugin-api.js';
import { createKernel, type Kernel } from '../../core/kernel.js';
import permissions from '../../plugins/permissions/index.js';
import { approvalEventOf, type ApprovalRequest } from '../../plugins/permissions/events.js';
import type { PermissionsService } from '../../plugins/permissions/service.js';
import toolBash from '../../plugins/tool-bash/index.js';
import { fakeProvider, type FakeStep } from '../helpers/fake-provider.js';

const kernels: Kernel[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const k of kernels.splice(0)) await k.shutdown();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function tmp(prefix: string): string {
  const d = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), prefix)));
  dirs.push(d);
  return d;
}

/** A tool named as the MCP plugin names its tools, to show that every registered tool is covered. */
const mcpLike: Plugin = {
  name: 'test-mcp-like',
  apply: (ctx) =>
    void ctx.registerTool({
      name: 'mcp__files__remove',
      description: 'remove',
      parameters: { safeParse: (v: unknown) => ({ success: true, data: v }) },
      jsonSchema: { type: 'object' },
      execute: async () => ({ content: [{ type: 'text', text: 'removed over mcp' }] }),
    }),
};

async function boot(steps: FakeStep[] | ((req: ProviderRequest, i: number) => FakeStep), settings: Settings) {
  const provider = fakeProvider(steps);
  const reported: string[] = [];
  const providerPlugin: Plugin = {
    name: 'test-fake',
    apply(ctx) {
      ctx.registerProvider(provider);
      ctx.hooks.failed.tap((f) => void reported.push(f.message));
    },
  };
  const kernel = await createKernel({ home: tmp('la-perm-home-'), plugins: [providerPlugin, permissions, toolBash, mcpLike], settings, thirdParty: false });
  kernels.push(kernel);
  expect(kernel.failures).toEqual([]);
  return { kernel, provider, reported, service: kernel.services.get<PermissionsService>('permissions')! };
}

const bashCall = (id: string, command: string): FakeStep => ({ toolCalls: [{ id, name: 'Bash', input: { command } }] });

function resultOf(req: ProviderRequest, id: string): ToolResultBlock {
  for (const m of req.messages) for (const b of m.content) if (b.type === 'tool_result' && b.toolCallId === id) return b;
  throw new Error(`no result for ${id}`);
}
const textOf = (r: ToolResultBlock) => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('');

/** Run to the end; `onAsk` answers each approval as it is announced. */
async function runAll(kernel: Kernel, workdir: string, onAsk?: (a: ApprovalRequest) => void) {
  const run = kernel.runtime.startRun({ input: [{ type: 'text', text: 'go' }], mode: 'tools', workdir });
  const events: LifecycleEvent[] = [];
  for await (const e of run.events) {
    events.push(e);
    const a = approvalEventOf(e);
    if (a?.kind === 'asked') onAsk?.(a.payload);
  }
  return { run, events, result: await run.result };
}

describe('permissions in a run', () => {
  it('a deny rule refuses Bash before any process starts; the result names the rule', async () => {
    const work = tmp('la-perm-work-');
    const { kernel, provider } = await boot([bashCall('b1', 'rm -rf build && touch ran.txt'), { text: 'ok' }], {
      permissions: { rules: [{ tool: 'Bash', pattern: 'git *', action: 'allow' }, { tool: 'Bash', pattern: 'rm *', action: 'deny' }] },
    });
    const { result } = await runAll(kernel, work);
    expect(result.status).toBe('completed');
    expect(kernels.at(-1)!.services.get<PermissionsService>('permissions')!.check({ name: 'Bash', input: { command: 'git status; rm x' }, workdir: work })).toEqual({
      action: 'deny',
      rule: 'permissions rule #2 { tool: "Bash", pattern: "rm *", action: "deny" }',
    });
    const r = resultOf(provider.requests[1]!, 'b1');
    expect(r.isError).toBe(true);
    expect(textOf(r)).toContain('Tool call blocked: permissions rule #2 { tool: "Bash", pattern: "rm *", action: "deny" } deny Bash');
    expect(r.details).toMatchObject({ blocked: true });
    expect(fs.existsSync(path.join(work, 'ran.txt'))).toBe(false);
  });

  it('"ask" announces one deadline, waits, and approve runs the tool', async () => {
    const work = tmp('la-perm-work-');
    const { kernel, provider, service } = await boot([bashCall('b1', 'echo hi > ran.txt'), { text: 'ok' }], {
      permissions: { rules: [{ tool: 'Bash', action: 'ask' }], approvalTimeoutMs: 60_000 },
    });
    let seen: ApprovalRequest | undefined;
    const before = Date.now();
    const { events } = await runAll(kernel, work, (a) => {
      seen = a;
      expect(service.pending(a.conversationId)).toEqual([a]);
      expect(fs.existsSync(path.join(work, 'ran.txt'))).toBe(false);
      service.decide({ toolCallId: a.toolCallId, conversationId: a.conversationId, decision: 'approve' });
    });
    expect(seen).toMatchObject({ toolCallId: 'b1', toolName: 'Bash', summary: 'echo hi > ran.txt', subject: 'command', rule: { index: 0, tool: 'Bash', action: 'ask' }, args: { command: 'echo hi > ran.txt' } });
    expect(seen!.deadlineAt).toBeGreaterThanOrEqual(before + 60_000);
    // Travels as a named event of the contract, between the call's start and end.
    const types = events.map((e) => (e.type === 'custom' ? `custom:${e.name}` : e.type));
    expect(types.indexOf('tool_approval')).toBeGreaterThan(types.indexOf('tool_execution_start'));
    expect(types.indexOf('tool_approval_settled')).toBeLessThan(types.indexOf('tool_execution_end'));
    expect(types.indexOf('tool_approval_settled')).toBeGreaterThan(types.indexOf('tool_approval'));
    const settled = events.map(approvalEventOf).find((a) => a?.kind === 'settled')!;
    expect(settled.payload).toMatchObject({ toolCallId: 'b1', outcome: 'approved', approved: true, decision: 'approve' });
    expect(fs.readFileSync(path.join(work, 'ran.txt'), 'utf8')).toBe('hi\n');
    expect(resultOf(provider.requests[1]!, 'b1').isError).toBe(false);
    expect(service.pending()).toEqual([]);
  });

  it('"ask" answered deny refuses the call, and a late decision hears it is settled', async () => {
    const work = tmp('la-perm-work-');
    const { kernel, provider, service } = await boot([bashCall('b1', 'touch ran.txt'), { text: 'ok' }], { permissions: { default: 'ask' } });
    let conversationId = '';
    await runAll(kernel, work, (a) => {
      conversationId = a.conversationId;
      expect(a.rule).toBeNull();
      service.decide({ toolCallId: a.toolCallId, conversationId: a.conversationId, decision: 'deny' });
    });
    const r = resultOf(provider.requests[1]!, 'b1');
    expect(r.isError).toBe(true);
    expect(textOf(r)).toContain('Tool call denied: the user did not approve Bash "touch ran.txt"');
    expect(r.details).toMatchObject({ blocked: true, permission: { outcome: 'denied' } });
    expect(fs.existsSync(path.join(work, 'ran.txt'))).toBe(false);
    expect(() => service.decide({ toolCallId: 'b1', conversationId, decision: 'approve' })).toThrow(/already settled \(denied\)/);
    expect(() => service.decide({ toolCallId: 'nope', conversationId, decision: 'approve' })).toThrow(/no pending approval with id "nope"/);
  });

  it('no answer before the deadline is a denial', async () => {
    const work = tmp('la-perm-work-');
    const { kernel, provider } = await boot([bashCall('b1', 'touch ran.txt'), { text: 'ok' }], { permissions: { rules: [{ tool: 'Bash', action: 'ask' }], approvalTimeoutMs: 300 } });
    const { events } = await runAll(kernel, work);
    const settled = events.map(approvalEventOf).find((a) => a?.kind === 'settled')!;
    expect(settled.payload).toMatchObject({ outcome: 'timedOut', approved: false });
    const r = resultOf(provider.requests[1]!, 'b1');
    expect(textOf(r)).toContain('nobody approved Bash "touch ran.txt" within 300 ms (permissions.approvalTimeoutMs)');
    expect(fs.existsSync(path.join(work, 'ran.txt'))).toBe(false);
  });

  it('approve_session skips the second ask of the same rule in the conversation; another rule still asks', async () => {
    const work = tmp('la-perm-work-');
    const steps: FakeStep[] = [bashCall('b1', 'git --version > one.txt'), bashCall('b2', 'git --version > two.txt'), bashCall('b3', 'echo other > three.txt'), { text: 'ok' }];
    const { kernel, service } = await boot(steps, {
      permissions: { rules: [{ tool: 'Bash', pattern: 'git *', action: 'ask' }, { tool: 'Bash', pattern: 'echo *', action: 'ask' }] },
    });
    const asked: string[] = [];
    await runAll(kernel, work, (a) => {
      asked.push(a.toolCallId);
      service.decide({ toolCallId: a.toolCallId, conversationId: a.conversationId, decision: a.toolCallId === 'b1' ? 'approve_session' : 'approve' });
    });
    expect(asked).toEqual(['b1', 'b3']);
    for (const f of ['one.txt', 'two.txt', 'three.txt']) expect(fs.existsSync(path.join(work, f)), f).toBe(true);
  });

  it('stopping the run settles a pending approval as denied, and the tool never runs', async () => {
    const work = tmp('la-perm-work-');
    const { kernel, service } = await boot([bashCall('b1', 'touch ran.txt'), { text: 'never' }], { permissions: { default: 'ask', approvalTimeoutMs: 60_000 } });
    const { events, result } = await runAll(kernel, work, (a) => {
      expect(service.pending()).toHaveLength(1);
      kernel.runtime.activeRun(a.conversationId)!.abort('stopped by the test');
    });
    expect(result.status).toBe('aborted');
    const settled = events.map(approvalEventOf).find((a) => a?.kind === 'settled')!;
    expect(settled.payload).toMatchObject({ outcome: 'cancelled', approved: false, reason: 'the run was stopped' });
    const end = events.find((e) => e.type === 'tool_execution_end');
    if (end?.type !== 'tool_execution_end') throw new Error('no tool_execution_end');
    expect(end.result.content[0]).toMatchObject({ text: expect.stringContaining('Tool call denied: the run was stopped while Bash "touch ran.txt" waited for approval') });
    expect(service.pending()).toEqual([]);
    expect(fs.existsSync(path.join(work, 'ran.txt'))).toBe(false);
  });

  it('MCP tools are covered: a glob over mcp__* denies one', async () => {
    const { kernel, provider } = await boot([{ toolCalls: [{ id: 'm1', name: 'mcp__files__remove', input: { path: 'x' } }] }, { text: 'ok' }], {
      permissions: { rules: [{ tool: 'mcp__files__*', action: 'deny' }] },
    });
    await runAll(kernel, tmp('la-perm-work-'));
    const r = resultOf(provider.requests[1]!, 'm1');
    expect(textOf(r)).toContain('permissions rule #1 { tool: "mcp__files__*", action: "deny" }');
  });

  it('default allow with no rules changes nothing; a rule saved later applies to the next call', async () => {
    const work = tmp('la-perm-work-');
    const { kernel, provider } = await boot([bashCall('b1', 'touch one.txt'), { text: 'ok' }, bashCall('b2', 'touch two.txt'), { text: 'ok' }], {});
    const first = await runAll(kernel, work);
    expect(first.events.some((e) => approvalEventOf(e))).toBe(false);
    expect(fs.existsSync(path.join(work, 'one.txt'))).toBe(true);
    await kernel.settings.update({ permissions: { rules: [{ tool: 'Bash', pattern: 'touch two.txt', action: 'deny' }] } });
    const second = kernel.runtime.startRun({ conversationId: first.run.conversationId, input: [{ type: 'text', text: 'again' }], mode: 'tools', workdir: work });
    expect((await second.result).status).toBe('completed');
    expect(fs.existsSync(path.join(work, 'two.txt'))).toBe(false);
    expect(textOf(resultOf(provider.requests[3]!, 'b2'))).toContain('permissions rule #1');
  });

  it('an invalid section is refused on save with the field named, and at start-up it refuses every call (fail closed)', async () => {
    const { kernel } = await boot([{ text: 'x' }], {});
    await expect(kernel.settings.update({ permissions: { rules: [{ tool: 'Bash', action: 'never' }] } })).rejects.toThrow(/permissions\.rules\.0\.action: action must be "allow", "ask" or "deny"/);
    await expect(kernel.settings.update({ permissions: { defualt: 'ask' } })).rejects.toThrow(/Unrecognized key.*defualt/);

    const work = tmp('la-perm-work-');
    const broken = await boot([bashCall('b1', 'touch ran.txt'), { text: 'ok' }], { permissions: { rules: [{ tool: 'Bash', patern: 'rm *', action: 'deny' }] } });
    expect(broken.reported.join('\n')).toMatch(/permissions.*invalid settings \(permissions\.rules\[0\]: Unrecognized key: "patern"\)/);
    await runAll(broken.kernel, work);
    expect(textOf(resultOf(broken.provider.requests[1]!, 'b1'))).toContain('the permissions settings are invalid (permissions.rules[0]: Unrecognized key: "patern")');
    expect(fs.existsSync(path.join(work, 'ran.txt'))).toBe(false);
  });
});
