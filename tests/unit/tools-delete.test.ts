import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createDeleteTool } from '../../plugins/tool-delete/index.js';
import { makeSandbox, textOf, type Sandbox } from '../helpers/tool-context.js';

let sb: Sandbox;
beforeEach(() => {
  sb = makeSandbox();
});
afterEach(() => sb.cleanup());

const del = createDeleteTool();

describe('Delete', () => {
  it('deletes a file, says what it removed, and reports it to the ledger', async () => {
    sb.write('old.txt', '12345');
    const r = await del.execute({ path: 'old.txt' }, sb.ctx());
    expect(r.isError).toBeFalsy();
    expect(textOf(r)).toBe('Deleted file old.txt (5 B).');
    expect(r.editedFiles).toEqual([{ path: 'old.txt', action: 'delete' }]);
    expect(sb.exists('old.txt')).toBe(false);
  });

  it('refuses a non-empty folder without recursive, deleting nothing', async () => {
    sb.write('build/a.js', 'a');
    sb.write('build/sub/b.js', 'b');
    const r = await del.execute({ path: 'build' }, sb.ctx());
    expect(r.isError).toBe(true);
    expect(textOf(r)).toContain('build is a folder holding 3 entries; nothing was deleted. Pass recursive: true');
    expect(r.editedFiles).toBeUndefined();
    expect(sb.read('build/sub/b.js')).toBe('b');
  });

  it('deletes a folder recursively and lists what was in it', async () => {
    sb.write('build/a.js', 'aa');
    sb.write('build/sub/b.js', 'b');
    const r = await del.execute({ path: 'build', recursive: true }, sb.ctx());
    expect(r.isError).toBeFalsy();
    const text = textOf(r);
    expect(text).toContain('Deleted folder build with 2 files, 1 folder (3 B):');
    expect(text).toContain('- build/a.js');
    expect(text).toContain('- build/sub/');
    expect(text).toContain('- build/sub/b.js');
    expect(r.details).toMatchObject({ kind: 'folder', files: 2, folders: 1 });
    expect(r.editedFiles).toEqual([{ path: 'build', action: 'delete' }]);
    expect(sb.exists('build')).toBe(false);
  });

  it('deletes an empty folder without the flag', async () => {
    fs.mkdirSync(path.join(sb.workdir, 'empty'));
    const r = await del.execute({ path: 'empty' }, sb.ctx());
    expect(textOf(r)).toBe('Deleted empty folder empty.');
    expect(sb.exists('empty')).toBe(false);
  });

  it('fails on a missing path and on the workspace itself, with no ledger entry', async () => {
    const missing = await del.execute({ path: 'ghost.txt' }, sb.ctx());
    expect(textOf(missing)).toBe('ghost.txt does not exist; nothing was deleted.');
    expect(missing.editedFiles).toBeUndefined();
    const root = await del.execute({ path: sb.workdir, recursive: true }, sb.ctx());
    expect(textOf(root)).toMatch(/^Refused: .* is the root of the workspace itself/);
    expect(fs.existsSync(sb.workdir)).toBe(true);
  });

  it('reaches the extra roots of tools.deleteRoots (enabled skill folders), reported by absolute path', async () => {
    const skill = path.join(sb.home, 'skills', 'demo');
    fs.mkdirSync(skill, { recursive: true });
    const file = path.join(skill, 'notes.md');
    fs.writeFileSync(file, 'x');
    expect((await del.execute({ path: file }, sb.ctx())).isError).toBe(true);
    expect(fs.existsSync(file)).toBe(true);
    const r = await del.execute({ path: file }, sb.ctx({ settings: { tools: { deleteRoots: [skill] } } }));
    expect(r.isError).toBeFalsy();
    expect(r.editedFiles).toEqual([{ path: file, action: 'delete' }]);
    expect(fs.existsSync(file)).toBe(false);
  });

  it('carries the delete rules for the system prompt', () => {
    expect(del.promptRules).toEqual([
      'Delete files and folders only with the Delete tool, never with Bash, ManagedProcess, scripts or deleting CLIs.',
      'To stage a tracked deletion, call Delete first, then run `git add -u -- <exact workspace-relative path>`.',
    ]);
  });

  it('answers a bad tools.deleteRoots with an error naming the field', async () => {
    sb.write('a.txt', 'a');
    const r = await del.execute({ path: 'a.txt' }, sb.ctx({ settings: { tools: { deleteRoots: ['relative/dir'] } } }));
    expect(textOf(r)).toBe('invalid settings: tools.deleteRoots.0: must be an absolute path');
    expect(sb.exists('a.txt')).toBe(true);
  });
});
