import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { LifecycleEvent, Message, Plugin, ProviderRequest, ToolResultBlock } from '../../plugin-api.js';
import { createKernel, type Kernel } from '../../core/kernel.js';
import { builtinToolPlugins } from '../../hosts/builtins.js';
import { fakeProvider, type FakeStep } from '../helpers/fake-provider.js';
import { collectAll } from '../helpers/streams.js';

const kernels: Kernel[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const k of kernels.splice(0)) await k.shutdown();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function tmp(prefix: string) {
  const d = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), prefix)));
  dirs.push(d);
  return d;
}

async function boot(steps: FakeStep[] | ((req: ProviderRequest, i: number) => FakeStep), extra: Plugin[] = []) {
  const provider = fakeProvider(steps);
  const providerPlugin: Plugin = { name: 'test-fake', apply: (ctx) => void ctx.registerProvider(provider) };
  const kernel = await createKernel({ home: tmp('la-home-'), plugins: [providerPlugin, ...builtinToolPlugins, ...extra], settings: {}, thirdParty: false });
  kernels.push(kernel);
  expect(kernel.failures).toEqual([]);
  return { kernel, provider };
}

const collect = collectAll<LifecycleEvent>;

const DELETE_RULE = 'Delete files and folders only with the Delete tool, never with Bash, ManagedProcess, scripts or deleting CLIs.';
const STAGE_RULE = 'To stage a tracked deletion, call Delete first, then run `git add -u -- <exact workspace-relative path>`.';
const count = (hay: string, needle: string) => hay.split(needle).length - 1;
const systemText = (req: ProviderRequest) => req.system.map((p) => p.text).join('\n');
const lastResult = (req: ProviderRequest): ToolResultBlock => {
  const msg = req.messages.at(-1)!;
  expect(msg.role).toBe('tool');
  return msg.content[0] as ToolResultBlock;
};
const resultText = (b: ToolResultBlock) => b.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');

describe('builtin tools in a kernel run', () => {
  it('Write, Edit, Read, Bash and Delete in turn: disk changes, each result reaches the next request, the ledger lists exactly Write/Edit/Delete', async () => {
    const work = tmp('la-work-');
    fs.mkdirSync(path.join(work, 'src'));
    fs.writeFileSync(path.join(work, 'src/main.txt'), 'name = demo\nversion = 1\n');
    fs.writeFileSync(path.join(work, 'junk.txt'), 'junk');
    fs.writeFileSync(path.join(work, 'old.txt'), 'old');
    const disk: string[] = [];
    const calls: FakeStep[] = [
      { toolCalls: [{ id: 't1', name: 'Write', input: { file_path: 'notes/new.txt', content: 'hello world\n' } }] },
      { toolCalls: [{ id: 't2', name: 'Edit', input: { file_path: 'src/main.txt', old_string: 'version = 1', new_string: 'version = 2' } }] },
      { toolCalls: [{ id: 't3', name: 'Read', input: { file_path: 'notes/new.txt' } }] },
      { toolCalls: [{ id: 't4', name: 'Bash', input: { command: 'rm junk.txt && echo removed', description: 'remove junk' } }] },
      { toolCalls: [{ id: 't5', name: 'Delete', input: { path: 'old.txt' } }] },
      { text: 'All done.' },
    ];
    const { kernel, provider } = await boot((_req, i) => {
      // What the disk looks like when the model is asked again, after the previous tool ran.
      const f = (rel: string) => (fs.existsSync(path.join(work, rel)) ? fs.readFileSync(path.join(work, rel), 'utf8') : '<none>');
      disk.push(JSON.stringify({ new: f('notes/new.txt'), main: f('src/main.txt'), junk: f('junk.txt'), old: f('old.txt') }));
      return calls[i]!;
    });
    const run = kernel.runtime.startRun({ input: [{ type: 'text', text: 'do the file dance' }], mode: 'tools', workdir: work });
    const events = await collect(run.events);
    const result = await run.result;
    expect(result.status).toBe('completed');

    const req = provider.requests;
    expect(req).toHaveLength(6);
    expect(req[0]!.tools.map((t) => t.name).sort()).toEqual(['Bash', 'Delete', 'Edit', 'Image', 'ManagedProcess', 'Read', 'Write']);
    expect(Object.keys((req[0]!.tools.find((t) => t.name === 'Edit')!.inputSchema as { properties: object }).properties)).toEqual(['file_path', 'old_string', 'new_string', 'replace_all']);

    expect(JSON.parse(disk[1]!)).toMatchObject({ new: 'hello world\n', main: 'name = demo\nversion = 1\n' });
    expect(resultText(lastResult(req[1]!))).toBe('Created notes/new.txt (1 line, 12 B).');
    expect(JSON.parse(disk[2]!)).toMatchObject({ main: 'name = demo\nversion = 2\n' });
    expect(resultText(lastResult(req[2]!))).toContain('Edited src/main.txt: replaced 1 occurrence.');
    expect(lastResult(req[3]!)).toMatchObject({ toolCallId: 't3', toolName: 'Read', isError: false });
    expect(resultText(lastResult(req[3]!))).toBe('     1\thello world');
    expect(JSON.parse(disk[4]!)).toMatchObject({ junk: '<none>', old: 'old' });
    expect(resultText(lastResult(req[4]!))).toBe('removed\n\nExit code: 0');
    expect(JSON.parse(disk[5]!)).toMatchObject({ old: '<none>', new: 'hello world\n' });
    expect(resultText(lastResult(req[5]!))).toBe('Deleted file old.txt (3 B).');

    const ledger = [
      { path: 'notes/new.txt', action: 'write' },
      { path: 'src/main.txt', action: 'edit' },
      { path: 'old.txt', action: 'delete' },
    ];
    expect(result.editedFiles).toEqual(ledger);
    const end = events.find((e) => e.type === 'agent_end')!;
    expect(end.type === 'agent_end' && end.editedFiles).toEqual(ledger);
    const assistants = result.messages.filter((m) => m.role === 'assistant');
    expect(assistants.map((m) => m.editedFiles ?? [])).toEqual([[ledger[0]], [ledger[1]], [], [], [ledger[2]], []]);
    expect(JSON.stringify(result.editedFiles)).not.toContain('junk.txt');
  });

  it('text mode offers no tools and no tool rules', async () => {
    const { kernel, provider } = await boot([{ text: 'just text' }]);
    const result = await kernel.runtime.startRun({ input: [{ type: 'text', text: 'hi' }], mode: 'text', workdir: tmp('la-work-') }).result;
    expect(result.status).toBe('completed');
    expect(provider.requests[0]!.tools).toEqual([]);
    expect(systemText(provider.requests[0]!)).not.toContain(DELETE_RULE);
  });

  it('a resumed conversation carries the tool rules exactly once per request, and history never stores them', async () => {
    const work = tmp('la-work-');
    fs.writeFileSync(path.join(work, 'gone.txt'), 'x');
    const stored: string[] = [];
    const recorder: Plugin = {
      name: 'test-recorder',
      apply(ctx) {
        ctx.sessionHooks.saveUserMessage.tap((m: Message) => void stored.push(JSON.stringify(m)));
        ctx.sessionHooks.saveRound.tap((r) => void stored.push(JSON.stringify(r)));
      },
    };
    const { kernel, provider } = await boot(
      [{ toolCalls: [{ id: 'd1', name: 'Delete', input: { path: 'gone.txt' } }] }, { text: 'deleted' }, { text: 'second answer' }],
      [recorder],
    );
    const first = kernel.runtime.startRun({ input: [{ type: 'text', text: 'delete gone.txt' }], mode: 'tools', workdir: work });
    const r1 = await first.result;
    expect(r1.status).toBe('completed');
    const second = kernel.runtime.startRun({ conversationId: first.conversationId, input: [{ type: 'text', text: 'and now?' }], mode: 'tools', workdir: work });
    const r2 = await second.result;
    expect(r2.status).toBe('completed');

    const req = provider.requests;
    expect(req).toHaveLength(3);
    // The third request resumes the conversation: the first run's messages come along.
    expect(JSON.stringify(req[2]!.messages)).toContain('delete gone.txt');
    expect(req[2]!.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant', 'user']);
    for (const r of req) {
      expect(count(systemText(r), DELETE_RULE)).toBe(1);
      expect(count(systemText(r), STAGE_RULE)).toBe(1);
      expect(JSON.stringify(r.messages)).not.toContain(DELETE_RULE);
    }
    expect(stored.length).toBeGreaterThan(0);
    for (const s of stored) expect(s).not.toContain('git add -u');
    expect(JSON.stringify([...r1.messages, ...r2.messages])).not.toContain(DELETE_RULE);
  });
});
