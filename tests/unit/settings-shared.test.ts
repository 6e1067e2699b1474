/**
 * Shared settings (core/settings-shared.ts): FileSettingsStore.share with an in-memory backend
 * standing in for the team database. Seeding, which keys go where, validation before anything
 * is stored, changes from other processes, a backend that is down, and the end of sharing.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { afterEach, describe, expect, it } from 'vitest';
import type { Disposable, Plugin, Settings, SettingsPatchOp, SharedSettingsBackend } from '../../plugin-api.js';
import { definePlugin } from '../../core/define-plugin.js';
import { createKernel, type Kernel } from '../../core/kernel.js';
import { FileSettingsStore } from '../../core/settings.js';
import { applyPatch } from '../../core/settings-disk.js';

type Doc = Record<string, unknown>;

/** One document, patched atomically, with listeners: what plugins/team-settings keeps in PostgreSQL. */
class MemoryBackend implements SharedSettingsBackend {
  readonly name = 'memory';
  doc: Doc | undefined;
  down = false;
  saves = 0;
  private listeners = new Set<(doc: Doc) => void>();
  constructor(doc?: Doc) {
    this.doc = doc;
  }
  async load(): Promise<Doc | undefined> {
    if (this.down) throw new Error('connection refused');
    return this.doc && structuredClone(this.doc);
  }
  async save(ops: SettingsPatchOp[], check: (doc: Doc) => void): Promise<Doc> {
    if (this.down) throw new Error('connection refused');
    const next = applyPatch(this.doc ?? {}, ops);
    check(next);
    this.doc = next;
    this.saves++;
    this.emit();
    return structuredClone(next);
  }
  watch(listener: (doc: Doc) => void): Disposable {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }
  /** Another process saved. */
  remote(ops: SettingsPatchOp[]): void {
    this.doc = applyPatch(this.doc ?? {}, ops);
    this.emit();
  }
  get watchers(): number {
    return this.listeners.size;
  }
  private emit(): void {
    for (const l of this.listeners) l(structuredClone(this.doc!));
  }
}

const dirs: string[] = [];
const stores: FileSettingsStore[] = [];
const kernels: Kernel[] = [];
afterEach(async () => {
  for (const k of kernels.splice(0)) await k.shutdown();
  for (const s of stores.splice(0)) s.close();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function home(settings?: Doc): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'settings-shared-'));
  dirs.push(dir);
  if (settings) fs.writeFileSync(path.join(dir, 'settings.json'), JSON.stringify(settings, null, 2));
  return dir;
}

const quiet = { info() {}, warn() {}, error() {}, debug() {} };

function store(dir: string): FileSettingsStore {
  const s = new FileSettingsStore(path.join(dir, 'settings.json'), undefined, { logger: quiet as never, watchDebounceMs: 10 });
  stores.push(s);
  return s;
}

/** Warnings about the settings as a whole (the unknown-key ones depend on which plugins are loaded). */
const problems = (s: FileSettingsStore) => s.warnings().filter((w) => w.path === '');
const readFile = (dir: string) => JSON.parse(fs.readFileSync(path.join(dir, 'settings.json'), 'utf8')) as Doc;
const URL_SECTION = { url: 'postgres://db/team' };

describe('shared settings', () => {
  it('seeds an empty shared document with the non-local keys of the file, and lays the local keys over it', async () => {
    const dir = home({ history: URL_SECTION, providers: { openai: { apiKey: 'sk-a' } }, defaultModel: 'm1', pluginSettings: { x: { y: 1 } } });
    const s = store(dir);
    const backend = new MemoryBackend();
    await s.share(backend).ready;
    expect(backend.doc).toEqual({ providers: { openai: { apiKey: 'sk-a' } }, defaultModel: 'm1' });
    expect(s.get()).toEqual({ history: URL_SECTION, providers: { openai: { apiKey: 'sk-a' } }, defaultModel: 'm1', pluginSettings: { x: { y: 1 } } });
  });

  it('a team that has a document is not seeded: its keys win over the file, except the local ones', async () => {
    const dir = home({ history: URL_SECTION, defaultModel: 'local-model', team: { leaseMs: 500 } });
    const s = store(dir);
    const backend = new MemoryBackend({ defaultModel: 'team-model', history: { url: 'postgres://elsewhere/x' }, team: { leaseMs: 9 } });
    const changes: Settings[] = [];
    s.onChange((x) => changes.push(x));
    await s.share(backend).ready;
    expect(backend.saves).toBe(0);
    expect(s.get()).toEqual({ defaultModel: 'team-model', history: URL_SECTION, team: { leaseMs: 500 } });
    expect(changes.at(-1)?.defaultModel).toBe('team-model');
  });

  it('a save sends local keys to the file and the others to the backend', async () => {
    const dir = home({ history: URL_SECTION, defaultModel: 'm1' });
    const s = store(dir);
    const backend = new MemoryBackend({ defaultModel: 'm1' });
    await s.share(backend).ready;
    const saved = await s.update({ defaultModel: 'm2', providers: { anthropic: { apiKey: 'sk-b' } }, history: { url: 'postgres://db/team', poolMax: 3 } });
    expect(saved).toMatchObject({ defaultModel: 'm2', providers: { anthropic: { apiKey: 'sk-b' } }, history: { poolMax: 3 } });
    expect(backend.doc).toEqual({ defaultModel: 'm2', providers: { anthropic: { apiKey: 'sk-b' } } });
    // The file got the local change only; its own copy of a shared key is left as it was.
    expect(readFile(dir)).toEqual({ history: { url: 'postgres://db/team', poolMax: 3 }, defaultModel: 'm1' });
    // A save of shared keys only does not touch the file.
    const before = fs.statSync(path.join(dir, 'settings.json')).mtimeMs;
    await s.update({ systemPrompt: 'be brief' });
    expect(fs.statSync(path.join(dir, 'settings.json')).mtimeMs).toBe(before);
    expect(backend.doc?.systemPrompt).toBe('be brief');
    expect(s.get().systemPrompt).toBe('be brief');
  });

  it('validates the merged result (kernel schema, plugin sections, write schemas) before anything is stored', async () => {
    const dir = home({ history: URL_SECTION });
    const s = store(dir);
    const section = z.object({ low: z.number(), high: z.number() }).refine((v) => v.low < v.high, 'low must be below high');
    s.addSection('ranges', 'ranges', (x) => x.ranges, section, z.object({ low: z.number().max(100), high: z.number() }));
    const backend = new MemoryBackend({ ranges: { low: 1, high: 10 } });
    await s.share(backend).ready;
    const fileBefore = fs.readFileSync(path.join(dir, 'settings.json'), 'utf8');

    await expect(s.update({ customProviders: [{ id: 'bad id', format: 'openai-chat', baseUrl: 'https://x.example' }] as never })).rejects.toThrow(/customProviders\[0\]/);
    await expect(s.update({ ranges: { low: 20, high: 10 } })).rejects.toThrow(/ranges: low must be below high/);
    await expect(s.update({ ranges: { low: 150, high: 200 } })).rejects.toThrow(/ranges\.low/);
    // Valid against what this process saw, invalid against the document as it is now (another
    // process lowered `high` and this one has not heard yet): the backend's check refuses it.
    backend.doc = { ranges: { low: 1, high: 3 } };
    await expect(s.update({ ranges: { low: 5, high: 10 }, history: { url: 'postgres://db/other' } })).rejects.toThrow(/ranges: low must be below high/);
    expect(backend.doc).toEqual({ ranges: { low: 1, high: 3 } });
    expect(backend.saves).toBe(0);
    // Nothing of a refused save is written, not even its local part.
    expect(fs.readFileSync(path.join(dir, 'settings.json'), 'utf8')).toBe(fileBefore);
  });

  it('a change another process saved reaches onChange; an invalid one is a warning and the last good settings stay', async () => {
    const dir = home({ history: URL_SECTION });
    const s = store(dir);
    s.addSection('mcp', 'mcpServers', (x) => x.mcpServers, z.record(z.string(), z.object({ command: z.string() })));
    const backend = new MemoryBackend({ defaultModel: 'm1' });
    await s.share(backend).ready;
    const changes: Settings[] = [];
    s.onChange((x) => changes.push(x));
    backend.remote([{ path: ['providers'], object: true }, { path: ['providers', 'openai'], value: { apiKey: 'sk-new' } }]);
    expect(changes).toHaveLength(1);
    expect(s.get().providers).toEqual({ openai: { apiKey: 'sk-new' } });
    expect(s.get().history).toEqual(URL_SECTION);

    backend.remote([{ path: ['mcpServers'], value: { bad: { command: 42 } } }]);
    expect(changes).toHaveLength(1);
    expect(s.get().mcpServers).toBeUndefined();
    expect(problems(s).map((w) => w.message).join('\n')).toMatch(/shared settings \(memory\) are invalid: .*mcpServers\.bad\.command/);
    backend.remote([{ path: ['mcpServers'], value: { good: { command: 'x' } } }]);
    expect(changes).toHaveLength(2);
    expect(problems(s)).toEqual([]);
  });

  it('while the backend is down get() keeps the last good settings and a save of shared keys rejects; local keys still save', async () => {
    const dir = home({ history: URL_SECTION });
    const s = store(dir);
    const backend = new MemoryBackend({ defaultModel: 'm1', providers: { openai: { apiKey: 'sk-a' } } });
    await s.share(backend).ready;
    backend.down = true;
    await expect(s.update({ defaultModel: 'm2' })).rejects.toThrow(/cannot save settings: the shared settings \(memory\) are unreachable: connection refused\. Nothing was saved/);
    expect(s.get()).toMatchObject({ defaultModel: 'm1', providers: { openai: { apiKey: 'sk-a' } } });
    expect(problems(s)[0]?.message).toMatch(/shared settings \(memory\) cannot be saved: connection refused/);
    await s.update({ history: { url: 'postgres://db/team', poolMax: 2 } });
    expect(readFile(dir).history).toEqual({ url: 'postgres://db/team', poolMax: 2 });
    expect(backend.doc).toEqual({ defaultModel: 'm1', providers: { openai: { apiKey: 'sk-a' } } });
    backend.down = false;
    await s.update({ defaultModel: 'm2' });
    expect(backend.doc?.defaultModel).toBe('m2');
    expect(problems(s)).toEqual([]);
  });

  it('a backend unreachable at start: the file stays in force, shared saves reject, and the first document it delivers takes over', async () => {
    const dir = home({ history: URL_SECTION, defaultModel: 'local' });
    const s = store(dir);
    const backend = new MemoryBackend({ defaultModel: 'team' });
    backend.down = true;
    await s.share(backend).ready;
    expect(s.get().defaultModel).toBe('local');
    expect(problems(s)[0]?.message).toMatch(/shared settings \(memory\) cannot be loaded: connection refused; running on the local settings\.json/);
    await expect(s.update({ defaultModel: 'x' })).rejects.toThrow(/the shared settings \(memory\) are not available \(.*cannot be loaded/);
    backend.down = false;
    backend.remote([]); // reconnected: the backend's poll delivers the document
    expect(s.get().defaultModel).toBe('team');
    expect(problems(s)).toEqual([]);
  });

  it('a backend that was down at start and comes back empty is seeded then', async () => {
    const dir = home({ history: URL_SECTION, defaultModel: 'local' });
    const s = store(dir);
    const backend = new MemoryBackend();
    backend.down = true;
    await s.share(backend).ready;
    backend.down = false;
    backend.remote([]);
    await expect.poll(() => backend.doc).toEqual({ defaultModel: 'local' });
    await expect.poll(() => problems(s)).toEqual([]);
    await s.update({ defaultModel: 'shared-now' });
    expect(backend.doc).toEqual({ defaultModel: 'shared-now' });
  });

  it('disposing the share goes back to the file alone, and later shared changes are not seen', async () => {
    const dir = home({ history: URL_SECTION, defaultModel: 'local' });
    const s = store(dir);
    const backend = new MemoryBackend({ defaultModel: 'team' });
    const share = s.share(backend);
    await share.ready;
    expect(() => s.share(new MemoryBackend())).toThrow(/already shared through "memory"/);
    const changes: Settings[] = [];
    s.onChange((x) => changes.push(x));
    share.dispose();
    expect(backend.watchers).toBe(0);
    expect(s.get().defaultModel).toBe('local');
    expect(changes.at(-1)?.defaultModel).toBe('local');
    backend.remote([{ path: ['defaultModel'], value: 'later' }]);
    expect(s.get().defaultModel).toBe('local');
    await s.update({ defaultModel: 'file-again' });
    expect(readFile(dir).defaultModel).toBe('file-again');
    expect(backend.doc?.defaultModel).toBe('later');
  });

  it('an edit of the local file still applies its local keys while shared', async () => {
    const dir = home({ history: URL_SECTION, defaultModel: 'local' });
    const s = store(dir);
    await s.share(new MemoryBackend({ defaultModel: 'team' })).ready;
    const changed = new Promise<Settings>((resolve) => s.onChange(resolve));
    fs.writeFileSync(path.join(dir, 'settings.json'), JSON.stringify({ history: URL_SECTION, defaultModel: 'edited', team: { leaseMs: 700 } }));
    const next = await changed;
    expect(next).toEqual({ history: URL_SECTION, defaultModel: 'team', team: { leaseMs: 700 } });
  });
});

describe('ctx.settings.share in a kernel', () => {
  const sharing = (name: string, backend: MemoryBackend, experimental?: ['shared_settings']): Plugin => ({
    name,
    ...(experimental ? { experimental } : {}),
    async apply(ctx) {
      await ctx.settings.share(backend).ready;
    },
  });

  it('needs the shared_settings opt-in, applies before later plugins read their config, and ends when the plugin unloads', async () => {
    const dir = home({ history: URL_SECTION, defaultModel: 'local' });
    const plain = await createKernel({ home: dir, plugins: [sharing('plain', new MemoryBackend())], thirdParty: false, logSink: () => {} });
    kernels.push(plain);
    expect(plain.failures[0]?.message).toMatch(/plugin "plain": settings\.share is experimental: list 'shared_settings'/);

    const backend = new MemoryBackend({ defaultModel: 'team', later: { n: 2 } });
    let laterConfig: unknown;
    const later = definePlugin({ name: 'later', settingsKey: 'later', settingsSchema: z.object({ n: z.number() }), apply: (ctx) => void (laterConfig = ctx.config) });
    const kernel = await createKernel({ home: dir, plugins: [definePlugin(sharing('sharer', backend, ['shared_settings'])), later], thirdParty: false, logSink: () => {} });
    kernels.push(kernel);
    expect(kernel.failures).toEqual([]);
    expect(laterConfig).toEqual({ n: 2 });
    expect(kernel.settings.get().defaultModel).toBe('team');
    // The section of `later` is checked on shared saves too.
    await expect(kernel.settings.update({ later: { n: 'two' } })).rejects.toThrow(/later\.n/);
    kernel.unload('sharer');
    expect(kernel.settings.get().defaultModel).toBe('local');
    expect(backend.watchers).toBe(0);
  });
});
