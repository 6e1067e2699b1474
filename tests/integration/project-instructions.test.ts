/**
 * Project instruction files in the system prompt: AGENTS.md / CLAUDE.md from the repository
 * root down to the workdir, root-first, capped, pinned as a cached system part after the user's
 * system prompt and before skills and memory, re-read when a file changes, never read through
 * a link out of the repository, and still there after a compaction.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { LifecycleEvent, Settings } from '../../plugin-api.js';
import { createKernel, type Kernel } from '../../core/kernel.js';
import anthropicPlugin from '../../plugins/provider-anthropic/index.js';
import projectInstructions from '../../plugins/project-instructions/index.js';
import { folderChain, InstructionReader, MAX_INSTRUCTION_BYTES } from '../../plugins/project-instructions/discover.js';
import { anthropicReply, startMockAnthropic, type MockAnthropicServer } from '../fixtures/mock-anthropic.js';
import { collectAll } from '../helpers/streams.js';
import { trackResources } from '../helpers/cleanup.js';
import { compactions, startHarness, systemOf, turn, type Harness } from './compaction-harness.js';

const KEY = 'sk-ant-instructions';
const { kernels, closers, tmp } = trackResources();

/** A repository with AGENTS.md at the root and in packages/app, plus a CLAUDE.md in packages/app. */
function repo() {
  const root = tmp('la-instr-repo-');
  fs.mkdirSync(path.join(root, '.git'));
  const app = path.join(root, 'packages', 'app');
  fs.mkdirSync(app, { recursive: true });
  fs.writeFileSync(path.join(root, 'AGENTS.md'), '# Root rules\nUse pnpm. Run tests with `pnpm test`.\n');
  fs.writeFileSync(path.join(app, 'AGENTS.md'), '# App rules\nThis package is a Vue app.\n');
  fs.writeFileSync(path.join(app, 'CLAUDE.md'), 'Claude-specific: prefer small commits.\n');
  return { root, app };
}

async function boot(settings: Settings = {}) {
  const mock = await startMockAnthropic({ apiKey: KEY, script: () => anthropicReply({ text: 'ok' }) });
  closers.push(mock);
  const home = tmp('la-instr-home-');
  const kernel = await createKernel({ home, plugins: [anthropicPlugin, projectInstructions], settings: { providers: { claude_code: { baseUrl: mock.url, apiKey: KEY } }, ...settings }, thirdParty: false });
  kernels.push(kernel);
  const send = async (workdir: string, mode: 'text' | 'tools' = 'text') => {
    const run = kernel.runtime.startRun({ input: [{ type: 'text', text: 'hello there' }], mode, workdir });
    await collectAll<LifecycleEvent>(run.events);
    expect((await run.result).status).toBe('completed');
    return mock.requests.at(-1)!.body as { system: Array<{ text: string; cache_control?: unknown }> };
  };
  return { kernel, mock, send };
}

describe('project instruction files', () => {
  it('AGENTS.md of the workdir and of the repository root reach the system prompt, root first, after the user\'s prompt, as a cached part', async () => {
    const { root, app } = repo();
    const { send } = await boot({ systemPrompt: 'Answer in English.' });
    const body = await send(app);
    const text = body.system.map((b) => b.text).join('\n');
    const at = (s: string) => text.indexOf(s);
    expect(at('Root rules')).toBeGreaterThan(-1);
    expect(at('Root rules')).toBeLessThan(at('App rules'));
    expect(at('App rules')).toBeLessThan(at('prefer small commits'));
    expect(at('Answer in English.')).toBeLessThan(at('Root rules'));
    expect(text).toContain(`<instructions path="${path.join(root, 'AGENTS.md')}">`);
    const part = body.system.find((b) => b.text.includes('Root rules'))!;
    expect(part.cache_control).toEqual({ type: 'ephemeral' });
  });

  it('without a repository only the workdir\'s own files count; an edit is seen by the next run', async () => {
    const parent = tmp('la-instr-norepo-');
    fs.writeFileSync(path.join(parent, 'AGENTS.md'), 'PARENT RULES must not be read\n');
    const wd = path.join(parent, 'work');
    fs.mkdirSync(wd);
    fs.writeFileSync(path.join(wd, 'AGENTS.md'), 'Version one of the rules.\n');
    const { send } = await boot();
    const first = (await send(wd)).system.map((b) => b.text).join('\n');
    expect(first).toContain('Version one');
    expect(first).not.toContain('PARENT RULES');
    expect(await folderChain(wd)).toEqual([wd]);
    // Same size, new content: the mtime (and inode) tell the reader to read it again.
    fs.writeFileSync(path.join(wd, 'AGENTS.md'), 'Version two of the rules.\n');
    const later = new Date(Date.now() + 5000);
    fs.utimesSync(path.join(wd, 'AGENTS.md'), later, later);
    const second = (await send(wd)).system.map((b) => b.text).join('\n');
    expect(second).toContain('Version two');
    expect(second).not.toContain('Version one');
  });

  it('a link out of the repository is never read, a link inside it is read once, and none of it means no part', async () => {
    const { root, app } = repo();
    const outside = tmp('la-instr-outside-');
    fs.writeFileSync(path.join(outside, 'credentials'), 'aws_secret_access_key = SHOULD-NOT-LEAK\n');
    fs.rmSync(path.join(app, 'CLAUDE.md'));
    fs.symlinkSync(path.join(outside, 'credentials'), path.join(app, 'CLAUDE.md'));
    fs.symlinkSync(path.join(root, 'AGENTS.md'), path.join(root, 'CLAUDE.md'));
    const found = await new InstructionReader().read(app);
    expect(found.files.map((f) => path.relative(root, f.path))).toEqual(['AGENTS.md', path.join('packages', 'app', 'AGENTS.md')]);
    expect(found.text).not.toContain('SHOULD-NOT-LEAK');

    const empty = tmp('la-instr-empty-');
    const { send } = await boot();
    const body = await send(empty);
    expect(body.system.map((b) => b.text).join('\n')).not.toContain('Project instructions');
  });

  it('the joined files are capped with a marker', async () => {
    const wd = tmp('la-instr-big-');
    fs.writeFileSync(path.join(wd, 'AGENTS.md'), `${'x'.repeat(MAX_INSTRUCTION_BYTES)}\nTHE END\n`);
    const found = await new InstructionReader().read(wd);
    expect(found.truncated).toBe(true);
    expect(Buffer.byteLength(found.text)).toBeLessThanOrEqual(MAX_INSTRUCTION_BYTES);
    expect(found.text).toMatch(/\[\.\.\. project instructions cut here: they exceed 32 KiB \.\.\.\]$/);
    expect(found.text).not.toContain('THE END');
  });

  it('survives compaction: the request after a checkpoint still carries the instructions', async () => {
    const wd = tmp('la-instr-compact-');
    fs.mkdirSync(path.join(wd, '.git'));
    fs.writeFileSync(path.join(wd, 'AGENTS.md'), 'PINNED: always answer with the word banana.\n');
    const h = await startHarness({}, { memory: { autoExtract: false } }, wd);
    closers.push(h);
    let id: string | undefined;
    let compacted = false;
    for (let n = 1; n <= 14 && !compacted; n++) {
      const r = await h.send(turn(n), id);
      expect(r.status).toBe('completed');
      id = r.conversationId;
      compacted = compactions(r.events).some((p) => p.phase === 'end');
    }
    expect(compacted).toBe(true);
    const after = systemOf(h.chatRequests().at(-1)!.body);
    expect(after).toContain('<context-checkpoint>');
    expect(after).toContain('PINNED: always answer with the word banana.');
    expect(after.indexOf('PINNED')).toBeLessThan(after.indexOf('<context-checkpoint>'));
  });
});
