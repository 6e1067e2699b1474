/**
 * The memory and skills messages of the gateway protocol, through the server host and a real
 * socket: memory.list / read / write / delete / accept / dismiss and skills.list / setEnabled,
 * refusals with the reason, and the `memory.changed` / `skills.changed` broadcasts (including
 * the one after extraction proposes something).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ProviderRequest } from '../../plugin-api.js';
import memoryPlugin from '../../plugins/memory/index.js';
import { EXTRACTION_MARKER } from '../../plugins/memory/extract-prompt.js';
import type { MemoryFileInfo } from '../../plugins/memory/files.js';
import type { MemoryService } from '../../plugins/memory/service.js';
import type { MemoryProposal } from '../../plugins/memory/unreviewed.js';
import skillsPlugin from '../../plugins/skills/index.js';
import type { SkillInfo } from '../../plugins/skills/service.js';
import { boot, cleanup, TestClient } from './gateway-harness.js';

afterEach(cleanup);

type Ext = { type: 'extension'; name: string; data: Record<string, unknown> };
const isExt = (name: string, pred: (d: Record<string, unknown>) => boolean = () => true) => (m: { type: string }) =>
  m.type === 'extension' && (m as Ext).name === name && pred((m as Ext).data);
const extraction = (req: ProviderRequest) => req.system.some((p) => p.text.includes(EXTRACTION_MARKER));
type Listing = { workdir: string; files: MemoryFileInfo[]; unreviewed: MemoryProposal[] };

describe('gateway memory messages', () => {
  it('list, read, write, delete; accept and dismiss proposals; refusals; changes are broadcast', async () => {
    const b = await boot({ extra: [memoryPlugin], settings: { memory: { autoExtract: false } } });
    const workdir = path.join(b.home, 'proj');
    fs.mkdirSync(path.join(workdir, '.liveagent', 'memory'), { recursive: true });
    fs.writeFileSync(path.join(workdir, '.liveagent', 'memory', 'conventions.md'), '# Conventions\nTabs.\n');
    fs.mkdirSync(path.join(b.home, 'memory'), { recursive: true });
    fs.writeFileSync(path.join(b.home, 'memory', 'preferences.md'), '# Preferences\n- pnpm\n');
    const c = await TestClient.connect(b);
    const watcher = await TestClient.connect(b);

    const list = await c.ok<Listing>({ type: 'memory.list', workdir });
    expect(list.workdir).toBe(workdir);
    expect(list.files.map((f) => [f.scope, f.path, f.firstLine])).toEqual([
      ['user', '/memories/preferences.md', 'Preferences'],
      ['project', '/memories/project/conventions.md', 'Conventions'],
    ]);
    expect(list.unreviewed).toEqual([]);
    expect(await c.ok({ type: 'memory.read', path: '/memories/project/conventions.md', workdir })).toEqual({ path: '/memories/project/conventions.md', text: '# Conventions\nTabs.\n' });

    expect(await c.ok({ type: 'memory.write', path: '/memories/notes.md', text: '# Notes\nhello\n' })).toEqual({ path: '/memories/notes.md', written: true });
    expect(fs.readFileSync(path.join(b.home, 'memory', 'notes.md'), 'utf8')).toBe('# Notes\nhello\n');
    await watcher.waitFor(isExt('memory.changed', (d) => d.unreviewed === 0));
    expect(await c.ok({ type: 'memory.delete', path: '/memories/notes.md' })).toEqual({ path: '/memories/notes.md', deleted: true });
    expect(fs.existsSync(path.join(b.home, 'memory', 'notes.md'))).toBe(false);

    // Refusals: shape, sandbox, missing files and proposals.
    expect(await c.request({ type: 'memory.read' })).toMatchObject({ ok: false, error: { code: 'bad_request', message: expect.stringMatching(/^path: /) } });
    expect(await c.request({ type: 'memory.write', path: '/memories/x.md', text: 'x', extra: 1 })).toMatchObject({ ok: false, error: { code: 'bad_request' } });
    const escape = await c.request({ type: 'memory.read', path: '/memories/../../etc/passwd' });
    expect(escape).toMatchObject({ ok: false, error: { code: 'bad_request', message: expect.stringMatching(/uses "\.\."/) } });
    expect(await c.request({ type: 'memory.read', path: '/memories/nope.md' })).toMatchObject({ ok: false, error: { code: 'not_found', message: '/memories/nope.md does not exist' } });
    expect(await c.request({ type: 'memory.accept', proposalId: 'nope' })).toMatchObject({ ok: false, error: { code: 'not_found' } });
    expect(await c.request({ type: 'memory.dismiss', proposalId: 'nope' })).toMatchObject({ ok: false, error: { code: 'not_found' } });

    // Proposals (as extraction leaves them): accept one into its file, dismiss the other.
    const { UnreviewedList } = await import('../../plugins/memory/unreviewed.js');
    const [p1, p2] = await new UnreviewedList(path.join(b.home, 'memory')).add([
      { text: 'The user deploys on Fridays', scope: 'user', file: 'preferences.md', source: { conversationId: 'c1' } },
      { text: 'Uses tabs', scope: 'project', file: 'conventions.md', workdir, source: { conversationId: 'c2' } },
    ]);
    const pending = await c.ok<Listing>({ type: 'memory.list', workdir });
    expect(pending.unreviewed.map((p) => p.id)).toEqual([p1!.id, p2!.id]);
    expect(await c.ok({ type: 'memory.accept', proposalId: p1!.id })).toEqual({ proposalId: p1!.id, path: '/memories/preferences.md' });
    expect(fs.readFileSync(path.join(b.home, 'memory', 'preferences.md'), 'utf8')).toBe('# Preferences\n- pnpm\n- The user deploys on Fridays\n');
    await watcher.waitFor(isExt('memory.changed', (d) => d.unreviewed === 1));
    expect(await c.ok({ type: 'memory.dismiss', proposalId: p2!.id })).toEqual({ proposalId: p2!.id, dismissed: true });
    await watcher.waitFor(isExt('memory.changed', (d) => d.unreviewed === 0));
    expect((await c.ok<Listing>({ type: 'memory.list' })).unreviewed).toEqual([]);
    expect(c.invalid).toEqual([]);
    expect(watcher.invalid).toEqual([]);
  });

  it('a proposal from extraction is broadcast with how many were proposed', async () => {
    const b = await boot({
      extra: [memoryPlugin],
      settings: { memory: { idleMs: 0, spacingMs: 0, timeoutMs: 5000 } },
      steps: (req) => (extraction(req) ? { text: '{"memories": [{"text": "The user prefers pnpm", "scope": "user", "file": "preferences.md"}]}' } : { text: 'Noted, pnpm it is.' }),
    });
    const c = await TestClient.connect(b);
    const sent = await c.ok<{ conversationId: string }>({ type: 'chat_queue', item: { action: 'send', text: 'I always use pnpm, never npm, in every project.', mode: 'text', clientRequestId: 'm-1' } });
    const changed = await c.waitFor<Ext>(isExt('memory.changed', (d) => d.proposed === 1));
    expect(changed.data).toEqual({ unreviewed: 1, proposed: 1 });
    await b.server.kernel.services.get<MemoryService>('memory')!.whenIdle();
    const list = await c.ok<Listing>({ type: 'memory.list' });
    expect(list.unreviewed).toMatchObject([{ text: 'The user prefers pnpm', source: { conversationId: sent.conversationId } }]);
  });
});

describe('gateway skills messages', () => {
  it('lists skills and broken ones; switches a skill off and on, and broadcasts the change', async () => {
    const b = await boot({ extra: [skillsPlugin] });
    const dir = path.join(b.home, 'skills');
    fs.mkdirSync(path.join(dir, 'pdf-tools'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'pdf-tools', 'SKILL.md'), '---\nname: pdf-tools\ndescription: Fill and merge PDF files.\n---\nUse pdftk.\n');
    fs.mkdirSync(path.join(dir, 'broken'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'broken', 'SKILL.md'), 'no front matter here\n');
    const c = await TestClient.connect(b);
    const watcher = await TestClient.connect(b);

    type Skills = { skills: SkillInfo[]; problems: Array<{ file: string; problem: string }>; disabled: string[] };
    const list = await c.ok<Skills>({ type: 'skills.list' });
    expect(list.skills).toMatchObject([{ name: 'pdf-tools', description: 'Fill and merge PDF files.', scope: 'user', enabled: true }]);
    expect(list.problems).toMatchObject([{ file: expect.stringContaining(path.join('broken', 'SKILL.md')), problem: expect.any(String) }]);
    expect(list.disabled).toEqual([]);

    const off = await c.ok<Skills>({ type: 'skills.setEnabled', name: 'pdf-tools', enabled: false });
    expect(off.skills[0]).toMatchObject({ name: 'pdf-tools', enabled: false });
    expect(b.server.kernel.settings.get().skills).toEqual({ disabled: ['pdf-tools'] });
    await watcher.waitFor(isExt('skills.changed', (d) => JSON.stringify(d.disabled) === '["pdf-tools"]'));
    const on = await c.ok<Skills>({ type: 'skills.setEnabled', name: 'pdf-tools', enabled: true });
    expect(on.skills[0]!.enabled).toBe(true);
    await watcher.waitFor(isExt('skills.changed', (d) => JSON.stringify(d.disabled) === '[]'));

    expect(await c.request({ type: 'skills.setEnabled', name: 'ghost', enabled: false })).toMatchObject({ ok: false, error: { code: 'not_found', message: 'no skill named "ghost"' } });
    expect(await c.request({ type: 'skills.setEnabled', name: 'pdf-tools', enabled: 'yes' })).toMatchObject({ ok: false, error: { code: 'bad_request', message: expect.stringMatching(/^enabled: /) } });
    expect(c.invalid).toEqual([]);
  });
});
