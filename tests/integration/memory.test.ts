/**
 * The memory plugin in a kernel: the Memory tool writes files that the next conversation's
 * system prompt indexes (through the real Anthropic provider against the wire mock), the
 * sandbox of /memories paths, and silent extraction (a scripted provider answers the
 * extraction request): proposals land in the unreviewed list with their source, redacted,
 * after completed turns only, within the gates.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { LifecycleEvent, Plugin, ProviderRequest, Settings, ToolResultBlock } from '../../plugin-api.js';
import { createKernel, type Kernel } from '../../core/kernel.js';
import anthropicPlugin from '../../plugins/provider-anthropic/index.js';
import memoryPlugin from '../../plugins/memory/index.js';
import { EXTRACTION_MARKER } from '../../plugins/memory/extract-prompt.js';
import type { MemoryService } from '../../plugins/memory/service.js';
import { anthropicReply, startMockAnthropic, type MockAnthropicServer } from '../fixtures/mock-anthropic.js';
import { fakeProvider, type FakeStep } from '../helpers/fake-provider.js';
import { collectAll } from '../helpers/streams.js';
import { trackResources } from '../helpers/cleanup.js';

const KEY = 'sk-ant-memory-test';
const { kernels, closers, tmp } = trackResources();

type Log = Array<{ level: string; message: string }>;

async function boot(settings: Settings, plugins: Plugin[], home = tmp('la-memory-home-')) {
  const log: Log = [];
  const kernel = await createKernel({ home, plugins: [...plugins, memoryPlugin], settings, thirdParty: false, logSink: (level, _s, message) => void log.push({ level, message }) });
  kernels.push(kernel);
  expect(kernel.failures).toEqual([]);
  return { kernel, home, log, memory: kernel.services.get<MemoryService>('memory')! };
}

async function send(kernel: Kernel, text: string, opts: { workdir?: string; conversationId?: string; mode?: 'text' | 'tools'; provider?: string } = {}) {
  const run = kernel.runtime.startRun({ input: [{ type: 'text', text }], mode: opts.mode ?? 'tools', ...opts });
  const events = await collectAll<LifecycleEvent>(run.events);
  return { result: await run.result, events, conversationId: run.conversationId };
}

const systemText = (body: { system?: Array<{ text: string }> }) => (body.system ?? []).map((b) => b.text).join('\n');
const toolResults = (events: LifecycleEvent[]) => events.flatMap((e) => (e.type === 'tool_execution_end' ? [e.result as ToolResultBlock] : []));
const resultText = (r: ToolResultBlock) => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('');

describe('the Memory tool through the kernel and the wire', () => {
  it('a Memory create in one conversation appears in the next conversation\'s system prompt', async () => {
    const workdir = tmp('la-memory-wd-');
    const mock = await startMockAnthropic({
      apiKey: KEY,
      script: (req) => {
        const last = req.body.messages.at(-1);
        const sawResult = Array.isArray(last.content) && last.content.some((b: { type: string }) => b.type === 'tool_result');
        const user = JSON.stringify(req.body.messages[0].content);
        if (user.includes('remember') && !sawResult) {
          return anthropicReply({
            toolUses: [
              { id: 'toolu_m1', name: 'Memory', input: { command: 'create', path: '/memories/preferences.md', file_text: '# Prefers pnpm over npm\n- for every project\n' } },
              { id: 'toolu_m2', name: 'Memory', input: { command: 'create', path: '/memories/project/conventions.md', file_text: 'Tests live in tests/unit\n' } },
            ],
          });
        }
        return anthropicReply({ text: 'Noted.' });
      },
    });
    closers.push(mock);
    const { kernel, home } = await boot({ providers: { claude_code: { baseUrl: mock.url, apiKey: KEY } }, memory: { autoExtract: false } }, [anthropicPlugin]);

    const first = await send(kernel, 'Please remember that I prefer pnpm over npm.', { workdir });
    expect(first.result.status).toBe('completed');
    expect(toolResults(first.events).map(resultText)).toEqual(['File created successfully at: /memories/preferences.md', 'File created successfully at: /memories/project/conventions.md']);
    expect(fs.readFileSync(path.join(home, 'memory', 'preferences.md'), 'utf8')).toContain('pnpm');
    expect(fs.readFileSync(path.join(workdir, '.liveagent', 'memory', 'conventions.md'), 'utf8')).toBe('Tests live in tests/unit\n');
    // The tool is offered with a flat object schema, as the API insists.
    expect(mock.requests[0]!.body.tools.find((t: { name: string }) => t.name === 'Memory').input_schema.type).toBe('object');
    expect(systemText(mock.requests[0]!.body)).not.toContain('<memory>');

    const before = mock.requests.length;
    const second = await send(kernel, 'Which package manager do I use?', { workdir });
    expect(second.conversationId).not.toBe(first.conversationId);
    const system = systemText(mock.requests[before]!.body);
    expect(system).toContain('<memory>');
    expect(system).toMatch(/- \/memories\/preferences\.md \([\d.]+B\): Prefers pnpm over npm/);
    expect(system).toContain('- /memories/project/conventions.md');
    expect(system).toContain('Tests live in tests/unit');
    // The overview sits after the base prompt and before the tool rules (stage MEMORY).
    expect(system.indexOf('<memory>')).toBeGreaterThan(system.indexOf('LiveAgent'));
    expect(system.indexOf('<memory>')).toBeLessThan(system.indexOf('Tool rules:'));

    // Another workdir sees the user's memory, not this project's.
    const elsewhere = tmp('la-memory-wd2-');
    const n = mock.requests.length;
    await send(kernel, 'And here?', { workdir: elsewhere });
    const other = systemText(mock.requests[n]!.body);
    expect(other).toContain('/memories/preferences.md');
    expect(other).not.toContain('conventions.md');
  });
});

/** A fake provider whose extraction requests (recognized by the marker) get `extraction`. */
function scripted(chat: (req: ProviderRequest, i: number) => FakeStep, extraction: (req: ProviderRequest) => FakeStep) {
  const provider = fakeProvider((req, i) => (req.system.some((p) => p.text.includes(EXTRACTION_MARKER)) ? extraction(req) : chat(req, i)));
  const plugin: Plugin = { name: 'test-fake', apply: (ctx) => void ctx.registerProvider(provider) };
  const extractions = () => provider.requests.filter((r) => r.system.some((p) => p.text.includes(EXTRACTION_MARKER)));
  return { provider, plugin, extractions };
}

const readUnreviewed = (home: string) => {
  const f = path.join(home, 'memory', '.unreviewed.json');
  return fs.existsSync(f) ? (JSON.parse(fs.readFileSync(f, 'utf8')).items as Array<Record<string, any>>) : [];
};

const FAST = { idleMs: 0, spacingMs: 0, timeoutMs: 5000 };

describe('the Memory tool refuses paths that leave the memory folders', () => {
  it('".." escapes, absolute paths elsewhere, a symlink in the memory folder and a linked .liveagent are refused', async () => {
    const workdir = tmp('la-memory-wd-');
    const outside = tmp('la-memory-outside-');
    fs.writeFileSync(path.join(outside, 'secret.txt'), 'top secret');
    const home = tmp('la-memory-home-');
    fs.mkdirSync(path.join(home, 'memory'), { recursive: true });
    fs.symlinkSync(outside, path.join(home, 'memory', 'linked'));
    fs.symlinkSync(path.join(outside, 'secret.txt'), path.join(home, 'memory', 'leak.md'));
    const wd2 = tmp('la-memory-wd-linked-');
    fs.symlinkSync(outside, path.join(wd2, '.liveagent'));
    const calls = [
      { command: 'view', path: '/memories/../../etc/passwd' },
      { command: 'view', path: '/etc/passwd' },
      { command: 'view', path: '/memories/linked/secret.txt' },
      { command: 'create', path: '/memories/linked/new.md', file_text: 'x' },
      { command: 'view', path: '/memories/leak.md' },
      { command: 'str_replace', path: '/memories/leak.md', old_str: 'top', new_str: 'no' },
      { command: 'rename', old_path: '/memories/leak.md', new_path: '/memories/ok.md' },
      { command: 'create', path: '/memories/.unreviewed.json', file_text: '{}' },
      { command: 'create', path: '/memories/notes.md' },
    ];
    let round = 0;
    const { plugin } = scripted(
      () => (round++ === 0 ? { toolCalls: calls.map((input, i) => ({ id: `c${i}`, name: 'Memory', input })) } : { text: 'done' }),
      () => ({ text: '{"memories": []}' }),
    );
    const { kernel } = await boot({ memory: { autoExtract: false } }, [plugin], home);
    const { events } = await send(kernel, 'poke at the memory folder', { workdir });
    const results = toolResults(events);
    expect(results.every((r) => r.isError)).toBe(true);
    const texts = results.map(resultText);
    expect(texts[0]).toMatch(/Refused: .*uses "\.\."/);
    expect(texts[1]).toMatch(/Refused: .*outside \/memories/);
    expect(texts[2]).toMatch(/Refused: \/memories\/linked is a symbolic link/);
    expect(texts[3]).toMatch(/Refused: \/memories\/linked is a symbolic link/);
    expect(texts[4]).toMatch(/Refused: \/memories\/leak\.md is a symbolic link/);
    expect(texts[5]).toMatch(/Refused: \/memories\/leak\.md is a symbolic link/);
    expect(texts[6]).toMatch(/Refused: \/memories\/leak\.md is a symbolic link/);
    expect(texts[7]).toMatch(/reserved/);
    expect(texts[8]).toMatch(/file_text: create needs file_text/);
    expect(fs.readFileSync(path.join(outside, 'secret.txt'), 'utf8')).toBe('top secret');
    expect(fs.readdirSync(outside)).toEqual(['secret.txt']);

    round = 0;
    calls.splice(0, calls.length, { command: 'create', path: '/memories/project/x.md', file_text: 'x' });
    const linked = await send(kernel, 'write project memory', { workdir: wd2 });
    expect(resultText(toolResults(linked.events)[0]!)).toMatch(/Refused: the project memory folder .*\.liveagent is a symbolic link/);
    expect(fs.readdirSync(outside)).toEqual(['secret.txt']);
  });
});

describe('silent memory extraction', () => {
  it('proposes an unreviewed memory after a completed turn, with its source, secrets redacted, never in a memory file', async () => {
    const { plugin, extractions } = scripted(
      () => ({ text: 'Got it, I will use pnpm from now on.' }),
      () => ({ text: '```json\n{"memories": [{"text": "The user prefers pnpm; their deploy key is sk-ant-api03-AAAABBBBCCCCDDDDEEEE", "scope": "user", "file": "Preferences"}]}\n```' }),
    );
    const { kernel, home, memory } = await boot({ memory: FAST }, [plugin]);
    const { events, conversationId, result } = await send(kernel, 'I always use pnpm, never npm. My key is sk-proj-1234567890abcdefghijkl, keep it safe.');
    expect(result.status).toBe('completed');
    await memory.whenIdle();
    expect(extractions()).toHaveLength(1);
    const prompt = JSON.stringify(extractions()[0]!.messages);
    expect(prompt).toContain('I always use pnpm');
    expect(prompt).toContain('Got it, I will use pnpm');
    expect(prompt).not.toContain('sk-proj-1234567890abcdefghijkl');
    expect(prompt).toContain('[REDACTED_SECRET]');

    const items = readUnreviewed(home);
    const userMessage = (events.find((e) => e.type === 'agent_start') as any).userMessage;
    expect(items).toHaveLength(1);
    expect(items[0]).toMatchObject({ scope: 'user', file: 'preferences.md', source: { conversationId, messageId: userMessage.id, runId: result.runId }, provider: 'fake' });
    expect(items[0]!.text).toBe('The user prefers pnpm; their deploy key is [REDACTED_SECRET]');
    expect(await memory.list()).toEqual([]);

    // Accepting writes it to the memory file; the next conversation's prompt indexes it.
    const written = await memory.accept(items[0]!.id);
    expect(written).toBe('/memories/preferences.md');
    expect(fs.readFileSync(path.join(home, 'memory', 'preferences.md'), 'utf8')).toBe('- The user prefers pnpm; their deploy key is [REDACTED_SECRET]\n');
    expect(await memory.unreviewed()).toEqual([]);
  });

  it('never after an aborted or a failed turn, and not for greetings or short texts', async () => {
    let mode: 'hang' | 'error' | 'ok' = 'hang';
    const { plugin, extractions } = scripted(
      () => (mode === 'hang' ? { hang: true, afterText: 'Working on' } : mode === 'error' ? { error: { message: 'server down', status: 500 } } : { text: 'Hello!' }),
      () => ({ text: '{"memories": [{"text": "should never be proposed"}]}' }),
    );
    const { kernel, home, memory } = await boot({ memory: FAST, runtime: { retryMaxAttempts: 1 } }, [plugin]);
    const run = kernel.runtime.startRun({ input: [{ type: 'text', text: 'Write a long essay about my favourite editor, which is Helix.' }], mode: 'tools' });
    for await (const e of run.events) if (e.type === 'message_update') run.abort('user stop');
    expect((await run.result).status).toBe('aborted');
    mode = 'error';
    expect((await send(kernel, 'Remember that my favourite editor is Helix, please.')).result.status).toBe('error');
    mode = 'ok';
    await send(kernel, 'hi');
    await send(kernel, 'Thanks!');
    await send(kernel, 'ok so');
    await memory.whenIdle();
    expect(extractions()).toHaveLength(0);
    expect(readUnreviewed(home)).toEqual([]);
  });

  it('one extraction in flight per conversation, spacing between them, and a timeout that gives up quietly', async () => {
    const { plugin, extractions } = scripted(
      () => ({ text: 'Sure.' }),
      () => ({ text: '{"memories": [{"text": "The user deploys on Fridays."}]}' }),
    );
    const { kernel, home, memory, log } = await boot({ memory: { ...FAST, spacingMs: 60_000 } }, [plugin]);
    const a = await send(kernel, 'We always deploy the service on Fridays after lunch.');
    await memory.whenIdle();
    expect(extractions()).toHaveLength(1);
    // A second substantive turn within spacingMs waits for its turn instead of extracting now.
    await send(kernel, 'Also, the staging cluster is called blue-harbor.', { conversationId: a.conversationId });
    await new Promise((r) => setTimeout(r, 100));
    expect(extractions()).toHaveLength(1);
    // Another conversation is not held back by the first one's spacing.
    await send(kernel, 'My team uses trunk-based development with short-lived branches.');
    await new Promise((r) => setTimeout(r, 100));
    expect(extractions()).toHaveLength(2);
    // The same fact proposed twice is listed once.
    expect(readUnreviewed(home).map((i) => i.text)).toEqual(['The user deploys on Fridays.']);

    // A model that never answers is given up after timeoutMs, with a warning and no proposal.
    const slow = await boot({ memory: { ...FAST, timeoutMs: 50 } }, [scripted(() => ({ text: 'Sure.' }), () => ({ hang: true })).plugin]);
    await send(slow.kernel, 'Our production database is PostgreSQL 16 on a managed host.');
    await slow.memory.whenIdle();
    expect(slow.log.some((l) => l.level === 'warn' && /did not answer within 50 ms \(memory\.timeoutMs\)/.test(l.message))).toBe(true);
    expect(readUnreviewed(slow.home)).toEqual([]);
  });

  it('autoExtract false and enabled false switch it off; enabled false also withdraws the tool and the overview', async () => {
    const { plugin, extractions, provider } = scripted(
      () => ({ text: 'Sure.' }),
      () => ({ text: '{"memories": [{"text": "x"}]}' }),
    );
    const home = tmp('la-memory-home-');
    fs.mkdirSync(path.join(home, 'memory'));
    fs.writeFileSync(path.join(home, 'memory', 'a.md'), 'A remembered fact\n');
    const { kernel, memory } = await boot({ memory: { ...FAST, autoExtract: false } }, [plugin], home);
    await send(kernel, 'We always deploy the service on Fridays after lunch.');
    await memory.whenIdle();
    expect(extractions()).toHaveLength(0);
    expect(provider.requests[0]!.tools.map((t) => t.name)).toContain('Memory');
    expect(provider.requests[0]!.system.map((p) => p.id)).toContain('memory');
    await kernel.settings.update({ memory: { ...FAST, enabled: false } });
    await send(kernel, 'We always deploy the service on Fridays after lunch.');
    await memory.whenIdle();
    expect(extractions()).toHaveLength(0);
    const last = provider.requests.at(-1)!;
    expect(last.tools.map((t) => t.name)).not.toContain('Memory');
    expect(last.system.map((p) => p.id)).not.toContain('memory');
  });
});
