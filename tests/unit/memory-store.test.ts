/**
 * The memory commands on disk (plugins/memory/store.ts, paths.ts): Anthropic memory-tool
 * semantics for view, create, str_replace, insert, delete and rename, the two scopes behind
 * /memories, the size cap, and the path checks (lexical and on disk).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { locate, parseVirtual } from '../../plugins/memory/paths.js';
import { MemoryStore } from '../../plugins/memory/store.js';
import { listAll, readText } from '../../plugins/memory/files.js';
import { MemoryArgsSchema } from '../../plugins/memory/tool.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function setup(maxFileBytes = 64 * 1024) {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'la-memstore-')));
  dirs.push(root);
  const home = path.join(root, 'home');
  const workdir = path.join(root, 'work');
  fs.mkdirSync(home);
  fs.mkdirSync(workdir);
  return { root, home, workdir, store: new MemoryStore(home, () => maxFileBytes) };
}

describe('memory paths', () => {
  it('parses /memories paths into scopes and refuses escapes, hidden names and other roots', () => {
    expect(parseVirtual('/memories')).toEqual({ virtual: '/memories', scope: 'user', rel: [] });
    expect(parseVirtual('/memories/a/b.md')).toEqual({ virtual: '/memories/a/b.md', scope: 'user', rel: ['a', 'b.md'] });
    expect(parseVirtual('memories//project/x.md/')).toEqual({ virtual: '/memories/project/x.md', scope: 'project', rel: ['x.md'] });
    expect(parseVirtual('/memories/project')).toEqual({ virtual: '/memories/project', scope: 'project', rel: [] });
    for (const [bad, why] of [
      ['/memories/../../etc/passwd', /uses "\.\."/],
      ['/memories/./x', /uses "\."/],
      ['/memories/project/../x', /uses "\.\."/],
      ['/etc/passwd', /outside \/memories/],
      ['../memories/x', /outside \/memories/],
      ['/memories/.unreviewed.json', /reserved/],
      ['/memories/a\\..\\b', /backslash/],
      ['/memories/a\u0000b', /NUL/],
      ['/memories/a\nb', /control character/],
      ['', /empty/],
    ] as const) {
      expect(() => parseVirtual(bad), bad).toThrow(why);
    }
  });

  it('refuses a symbolic link anywhere under a scope, and a linked project memory folder', async () => {
    const { root, home, workdir } = setup();
    const outside = path.join(root, 'outside');
    fs.mkdirSync(outside);
    fs.mkdirSync(path.join(home, 'memory', 'sub'), { recursive: true });
    fs.symlinkSync(outside, path.join(home, 'memory', 'sub', 'out'));
    await expect(locate('/memories/sub/out/x.md', { home })).rejects.toThrow(/\/memories\/sub\/out is a symbolic link/);
    await expect(locate('/memories/sub/out/x.md', { home }, { create: true })).rejects.toThrow(/symbolic link/);
    fs.mkdirSync(path.join(workdir, '.liveagent'));
    fs.symlinkSync(outside, path.join(workdir, '.liveagent', 'memory'));
    await expect(locate('/memories/project/x.md', { home, workdir }, { create: true })).rejects.toThrow(/project memory folder .* is a symbolic link/);
    await expect(locate('/memories/project/x.md', { home })).rejects.toThrow(/needs a working folder/);
    expect(fs.readdirSync(outside)).toEqual([]);
  });

  it('a user memory folder that is itself a link the user made is used', async () => {
    const { root, home, store } = setup();
    const synced = path.join(root, 'synced');
    fs.mkdirSync(synced);
    fs.symlinkSync(synced, path.join(home, 'memory'));
    await store.create('/memories/a.md', 'hello\n');
    expect(fs.readFileSync(path.join(synced, 'a.md'), 'utf8')).toBe('hello\n');
  });
});

describe('memory commands', () => {
  it('create, view (with line numbers and a range), and the listing of both scopes', async () => {
    const { home, workdir, store } = setup();
    expect(await store.view('/memories', undefined, workdir)).toContain('(this project\'s memory');
    expect(await store.create('/memories/prefs.md', 'one\ntwo\nthree\n')).toBe('File created successfully at: /memories/prefs.md');
    await store.create('/memories/project/notes/a.md', 'project fact\n', workdir);
    await expect(store.create('/memories/prefs.md', 'again')).rejects.toThrow(/already exists/);
    await expect(store.create('/memories', 'x')).rejects.toThrow(/is a memory folder/);
    expect(await store.view('/memories/prefs.md', undefined)).toBe("Here's the content of /memories/prefs.md with line numbers:\n     1\tone\n     2\ttwo\n     3\tthree");
    expect(await store.view('/memories/prefs.md', [2, -1])).toContain('     2\ttwo\n     3\tthree');
    expect(await store.view('/memories/prefs.md', [2, 2])).not.toContain('three');
    await expect(store.view('/memories/prefs.md', [5, -1])).rejects.toThrow(/Invalid view_range/);
    await expect(store.view('/memories/nope.md', undefined)).rejects.toThrow(/does not exist/);
    const listing = await store.view('/memories', undefined, workdir);
    expect(listing).toContain('/memories/prefs.md');
    expect(listing).toContain('/memories/project/notes/');
    expect(fs.readFileSync(path.join(workdir, '.liveagent', 'memory', 'notes', 'a.md'), 'utf8')).toBe('project fact\n');
    // Temp files of atomic writes never linger, and hidden names are never listed.
    expect(fs.readdirSync(path.join(home, 'memory')).filter((n) => n.startsWith('.'))).toEqual([]);
    expect((await listAll({ home, workdir })).map((f) => [f.path, f.firstLine])).toEqual([
      ['/memories/prefs.md', 'one'],
      ['/memories/project/notes/a.md', 'project fact'],
    ]);
  });

  it('str_replace needs exactly one occurrence; insert checks the line; the size cap holds', async () => {
    const { store } = setup(300);
    await store.create('/memories/a.md', 'alpha\nbeta\nalpha\n');
    await expect(store.strReplace('/memories/a.md', 'gamma', 'x')).rejects.toThrow(/did not appear verbatim/);
    await expect(store.strReplace('/memories/a.md', 'alpha', 'x')).rejects.toThrow(/Multiple occurrences of old_str `alpha` in lines: 1, 3/);
    expect(await store.strReplace('/memories/a.md', 'beta', 'BETA')).toMatch(/^The memory file has been edited\.\n/);
    expect(await store.read('/memories/a.md')).toBe('alpha\nBETA\nalpha\n');
    await store.insert('/memories/a.md', 0, 'top');
    await store.insert('/memories/a.md', 4, 'bottom\n');
    expect(await store.read('/memories/a.md')).toBe('top\nalpha\nBETA\nalpha\nbottom\n');
    await expect(store.insert('/memories/a.md', 9, 'x')).rejects.toThrow(/Invalid `insert_line` parameter: 9\. It should be within the range of lines of the file: \[0, 5\]/);
    await expect(store.create('/memories/big.md', 'x'.repeat(400))).rejects.toThrow(/over the 300-byte limit/);
    await expect(store.insert('/memories/a.md', 0, 'y'.repeat(400))).rejects.toThrow(/memory\.maxFileBytes/);
    expect(await store.read('/memories/a.md')).toBe('top\nalpha\nBETA\nalpha\nbottom\n');
  });

  it('delete and rename, across scopes too, never on the scope folders themselves', async () => {
    const { home, workdir, store } = setup();
    await store.create('/memories/a.md', 'a\n');
    await store.create('/memories/dir/b.md', 'b\n');
    expect(await store.rename('/memories/a.md', '/memories/project/moved/a.md', workdir)).toBe('Successfully renamed /memories/a.md to /memories/project/moved/a.md');
    expect(fs.existsSync(path.join(home, 'memory', 'a.md'))).toBe(false);
    expect(fs.readFileSync(path.join(workdir, '.liveagent', 'memory', 'moved', 'a.md'), 'utf8')).toBe('a\n');
    await store.create('/memories/c.md', 'c\n');
    await expect(store.rename('/memories/c.md', '/memories/dir/b.md')).rejects.toThrow(/destination \/memories\/dir\/b\.md already exists/);
    await expect(store.rename('/memories/dir', '/memories/dir/inner')).rejects.toThrow(/cannot move into itself/);
    await expect(store.rename('/memories', '/memories/x')).rejects.toThrow(/memory folder itself/);
    await expect(store.delete('/memories/project', workdir)).rejects.toThrow(/memory folder itself/);
    expect(await store.delete('/memories/dir')).toBe('Successfully deleted /memories/dir');
    expect(fs.existsSync(path.join(home, 'memory', 'dir'))).toBe(false);
    await expect(store.delete('/memories/dir')).rejects.toThrow(/does not exist/);
  });

  it('refuses to read a file that was swapped for a link after the check (O_NOFOLLOW)', async () => {
    const { root, home, store } = setup();
    await store.create('/memories/a.md', 'a\n');
    const loc = await locate('/memories/a.md', { home });
    fs.writeFileSync(path.join(root, 'secret'), 'secret\n');
    fs.rmSync(loc.abs);
    fs.symlinkSync(path.join(root, 'secret'), loc.abs);
    // The open after the check does not follow the new link...
    await expect(readText(loc.abs, loc.virtual)).rejects.toThrow(/replaced by a symbolic link/);
    // ... and a fresh check refuses it outright.
    await expect(store.read('/memories/a.md')).rejects.toThrow(/is a symbolic link/);
  });
});

describe('Memory tool arguments', () => {
  it('accept each command with its fields and name every missing one', () => {
    expect(MemoryArgsSchema.safeParse({ command: 'view', path: '/memories', view_range: [1, -1] }).success).toBe(true);
    expect(MemoryArgsSchema.safeParse({ command: 'rename', old_path: '/memories/a', new_path: '/memories/b' }).success).toBe(true);
    const bad = MemoryArgsSchema.safeParse({ command: 'insert', path: '/memories/a.md' });
    expect(bad.success).toBe(false);
    expect(bad.error!.issues.map((i) => `${i.path.join('.')}: ${i.message}`)).toEqual(['insert_line: insert needs insert_line', 'insert_text: insert needs insert_text']);
    expect(MemoryArgsSchema.safeParse({ command: 'view', path: '/memories', view_range: [1] }).error!.issues[0]!.message).toMatch(/\[first line, last line\]/);
    expect(MemoryArgsSchema.safeParse({ command: 'erase', path: '/memories' }).success).toBe(false);
  });
});
