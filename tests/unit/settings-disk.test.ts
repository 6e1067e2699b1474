/**
 * The settings store and the file on disk, in one process: a save merges into the file as it
 * is now, an invalid file is never overwritten, edits made elsewhere are picked up, and the
 * lock file orders saves (a dead holder's lock is broken, a live one's is waited for).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Logger, Settings } from '../../plugin-api.js';
import { FileSettingsStore, type FileSettingsStoreOptions } from '../../core/settings.js';
import { applyPatch, diffSettings, withFileLock } from '../../core/settings-disk.js';

const homes: string[] = [];
const stores: FileSettingsStore[] = [];
afterEach(() => {
  for (const s of stores.splice(0)) s.close();
  for (const h of homes.splice(0)) fs.rmSync(h, { recursive: true, force: true });
});

const quiet: Logger = { debug() {}, info() {}, warn() {}, error() {} };

function setup(settings?: unknown, options: FileSettingsStoreOptions = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'la-settings-disk-'));
  homes.push(dir);
  const file = path.join(dir, 'settings.json');
  if (settings !== undefined) fs.writeFileSync(file, typeof settings === 'string' ? settings : JSON.stringify(settings, null, 2));
  const open = (o: FileSettingsStoreOptions = {}) => {
    const s = new FileSettingsStore(file, undefined, { logger: quiet, watchDebounceMs: 5, statIntervalMs: 0, ...options, ...o });
    stores.push(s);
    return s;
  };
  return { dir, file, open, disk: () => JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown> };
}

/** Replace the file the way an editor does (write aside, rename over). */
function editByHand(file: string, next: unknown) {
  const tmp = `${file}.edit`;
  fs.writeFileSync(tmp, typeof next === 'string' ? next : JSON.stringify(next, null, 2));
  fs.renameSync(tmp, file);
}

function nextChange(store: FileSettingsStore, timeoutMs = 3000): Promise<Settings> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error('no change reported')), timeoutMs);
    const sub = store.onChange((s) => {
      clearTimeout(t);
      sub.dispose();
      resolve(s);
    });
  });
}

describe('settings saves merge with the file on disk', () => {
  it('a key added by hand since the host read the file survives a save of another key', async () => {
    const { file, open, disk } = setup({ systemPrompt: 'old', runtime: { maxRounds: 5 } });
    const store = open({ watch: false });
    editByHand(file, { systemPrompt: 'old', runtime: { maxRounds: 5, persistIntervalMs: 99 }, defaultMode: 'text' });
    const saved = await store.update({ systemPrompt: 'new', runtime: { maxRounds: 7 } });
    expect(disk()).toEqual({ systemPrompt: 'new', runtime: { maxRounds: 7, persistIntervalMs: 99 }, defaultMode: 'text' });
    expect(saved).toEqual(disk());
    expect(store.get()).toEqual(disk());
    // The file keeps its own key order (not the schema's), and keys a schema strips (a model's extra field) stay.
    editByHand(file, JSON.stringify({ runtime: { maxRounds: 7 }, customProviders: [{ id: 'p', format: 'openai-chat', baseUrl: 'http://127.0.0.1:1/v1', models: [{ id: 'm', note: 'mine' }] }], systemPrompt: 'new' }));
    await store.update({ defaultMode: 'tools' });
    expect(Object.keys(disk())).toEqual(['runtime', 'customProviders', 'systemPrompt', 'defaultMode']);
    expect(JSON.stringify(disk().customProviders)).toContain('"note":"mine"');
    // A key the caller removed goes; one it never saw stays.
    editByHand(file, JSON.stringify({ runtime: { maxRounds: 7, persistIntervalMs: 99 }, systemPrompt: 'new', defaultMode: 'tools', byHand: 1 }));
    await store.set({ runtime: { maxRounds: 7 }, defaultMode: 'text' });
    expect(disk()).toEqual({ runtime: { maxRounds: 7, persistIntervalMs: 99 }, defaultMode: 'text', byHand: 1 });
  });

  it('an invalid file on disk is never overwritten: the save fails naming the file and the problem, and the last good settings stay', async () => {
    const { file, open } = setup({ systemPrompt: 'good' });
    const store = open({ watch: false });
    const broken = '{ "systemPrompt": "half written",';
    fs.writeFileSync(file, broken);
    await expect(store.update({ defaultMode: 'text' })).rejects.toThrow(new RegExp(`^cannot save settings: ${file.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} is not valid JSON: .*The file was left as it is`));
    expect(fs.readFileSync(file, 'utf8')).toBe(broken);
    expect(store.get()).toEqual({ systemPrompt: 'good' });

    const invalid = JSON.stringify({ runtime: { maxRounds: 0 } });
    fs.writeFileSync(file, invalid);
    await expect(store.update({ defaultMode: 'text' })).rejects.toThrow(/cannot save settings: .*settings\.json is invalid: settings\.json: runtime\.maxRounds: Too small/);
    expect(fs.readFileSync(file, 'utf8')).toBe(invalid);
    expect(fs.readdirSync(path.dirname(file)).sort()).toEqual(['settings.json']); // no temp or lock file left
  });

  it('many saves of different keys from two stores on one file at once all survive', async () => {
    const { open, disk } = setup({});
    const a = open({ watch: false });
    const b = open({ watch: false });
    await Promise.all(
      Array.from({ length: 20 }, (_, i) => [
        a.update({ pluginSettings: { ...a.get().pluginSettings, [`a${i}`]: i } }),
        b.update({ pluginSettings: { ...b.get().pluginSettings, [`b${i}`]: i } }),
      ]).flat(),
    );
    const keys = Object.keys(disk().pluginSettings as object).sort();
    expect(keys).toEqual(Array.from({ length: 20 }, (_, i) => [`a${i}`, `b${i}`]).flat().sort());
  });

  it('diff and patch: nested keys, removals, arrays replaced whole', () => {
    const from = { a: 1, nested: { x: 1, y: [1, 2] }, gone: true };
    const to = { a: 2, nested: { x: 1, y: [3] }, added: { z: 1 } };
    const ops = diffSettings(from, to);
    // An added section is added key by key, so a section someone else added meanwhile keeps its keys.
    expect(ops).toEqual([{ path: ['a'], value: 2 }, { path: ['nested', 'y'], value: [3] }, { path: ['added'], object: true }, { path: ['added', 'z'], value: 1 }, { path: ['gone'] }]);
    expect(applyPatch({ a: 1, nested: { x: 1, y: [1, 2], byHand: 1 }, gone: true, other: 'kept' }, ops)).toEqual({ a: 2, nested: { x: 1, y: [3], byHand: 1 }, other: 'kept', added: { z: 1 } });
    expect(applyPatch({ added: { mine: true } }, ops)).toEqual({ a: 2, nested: { y: [3] }, added: { mine: true, z: 1 } });
    // Removing below something already gone changes nothing (and never touches a same-named key higher up).
    expect(applyPatch({ x: 1 }, [{ path: ['gone', 'x'] }])).toEqual({ x: 1 });
  });
});

describe('edits made elsewhere', () => {
  it('are picked up and reach listeners; an invalid edit is ignored (and reported) until it is fixed', async () => {
    const { file, open } = setup({ systemPrompt: 'one' });
    const store = open();
    let change = nextChange(store);
    editByHand(file, { systemPrompt: 'two' });
    expect(await change).toEqual({ systemPrompt: 'two' });
    expect(store.get()).toEqual({ systemPrompt: 'two' });

    // An edit in place (truncate and write), as some editors do.
    change = nextChange(store);
    fs.writeFileSync(file, JSON.stringify({ systemPrompt: 'three', defaultMode: 'text' }));
    expect(await change).toEqual({ systemPrompt: 'three', defaultMode: 'text' });

    const heard: Settings[] = [];
    const sub = store.onChange((s) => heard.push(s));
    editByHand(file, '{ not json');
    await waitFor(() => store.warnings().some((w) => w.path === ''));
    expect(store.warnings()[0]!.message).toMatch(/settings\.json is not valid JSON: .*; the last good settings stay in force$/);
    expect(store.get()).toEqual({ systemPrompt: 'three', defaultMode: 'text' });
    expect(heard).toEqual([]);
    change = nextChange(store);
    editByHand(file, { systemPrompt: 'fixed' });
    expect(await change).toEqual({ systemPrompt: 'fixed' });
    expect(store.warnings()).toEqual([]);
    sub.dispose();
  });

  it('without a watch (nobody listening), get() notices the file changed and reloads it shortly after', async () => {
    const { file, open } = setup({ systemPrompt: 'one' });
    const store = open();
    editByHand(file, { systemPrompt: 'two' });
    store.get();
    await waitFor(() => store.get().systemPrompt === 'two');
  });

  it('a store given its settings (an embedder) does not follow the file, but its saves still merge into it', async () => {
    const { file, disk } = setup({ byHand: 1 });
    const store = new FileSettingsStore(file, { systemPrompt: 'given' }, { logger: quiet });
    stores.push(store);
    editByHand(file, { byHand: 2 });
    await new Promise((r) => setTimeout(r, 50));
    expect(store.get()).toEqual({ systemPrompt: 'given' });
    await store.update({ defaultMode: 'text' });
    expect(disk()).toEqual({ byHand: 2, defaultMode: 'text' });
  });
});

describe('the lock file', () => {
  it('breaks a lock left by a process that is gone, and waits for (then gives up on) a live holder', async () => {
    const { file, open, disk } = setup({});
    const lock = `${file}.lock`;
    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
    fs.writeFileSync(lock, `${dead.stdout}\n${os.hostname()}\n${Date.now()}\nx`);
    const store = open({ watch: false, lockTimeoutMs: 300 });
    await store.update({ systemPrompt: 'saved' });
    expect(disk()).toEqual({ systemPrompt: 'saved' });
    expect(fs.existsSync(lock)).toBe(false);

    // The parent (vitest's own process tree) is alive: its lock is waited for, then the save fails by name.
    fs.writeFileSync(lock, `${process.ppid}\n${os.hostname()}\n${Date.now()}\nx`);
    await expect(store.update({ systemPrompt: 'blocked' })).rejects.toThrow(`cannot save settings.json: ${lock} is held by another process (pid ${process.ppid}) for over 300 ms; try again`);
    expect(disk()).toEqual({ systemPrompt: 'saved' });
    fs.unlinkSync(lock);
  });

  it('two holders in one process take turns', async () => {
    const { dir } = setup();
    const lock = path.join(dir, 'x.lock');
    const order: string[] = [];
    const hold = (name: string) =>
      withFileLock(lock, { timeoutMs: 2000, staleMs: 10_000 }, 'x', async () => {
        order.push(`${name}+`);
        await new Promise((r) => setTimeout(r, 20));
        order.push(`${name}-`);
      });
    await Promise.all([hold('a'), hold('b')]);
    expect(order.join(' ')).toMatch(/^(a\+ a- b\+ b-|b\+ b- a\+ a-)$/);
  });
});

async function waitFor(cond: () => boolean, timeoutMs = 3000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}
