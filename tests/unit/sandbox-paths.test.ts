/**
 * What the handle-walking sandbox does with the paths it is given: a trailing slash, links
 * that stay inside, links nested in a folder being deleted, hard links, atomic replacement,
 * and the by-name fallback used where /proc/self/fd is missing.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createDeleteTool } from '../../plugins/tool-delete/index.js';
import { createEditTool } from '../../plugins/tool-edit/index.js';
import { createReadTool } from '../../plugins/tool-read/index.js';
import { useProcFdForTests } from '../../lib/tool-shared/sandbox-walk.js';
import { createWriteTool } from '../../plugins/tool-write/index.js';
import { makeSandbox, textOf, type Sandbox } from '../helpers/tool-context.js';

const read = createReadTool();
const write = createWriteTool();
const edit = createEditTool();
const del = createDeleteTool();

let sb: Sandbox;
beforeEach(() => {
  sb = makeSandbox();
});
afterEach(() => {
  useProcFdForTests(undefined);
  sb.cleanup();
});

describe('a path ending with "/"', () => {
  it('Write "dir/" is refused and creates no file named dir, whether or not the folder exists', async () => {
    for (const input of ['newdir/', 'sub/newdir/']) {
      const r = await write.execute({ file_path: input, content: 'x' }, sb.ctx());
      expect(r.isError).toBe(true);
      expect(textOf(r)).toContain("path ends with '/': Write needs a file path");
      expect(r.editedFiles).toBeUndefined();
    }
    expect(fs.readdirSync(sb.workdir)).toEqual([]);
    fs.mkdirSync(path.join(sb.workdir, 'dir'));
    expect(textOf(await write.execute({ file_path: 'dir/', content: 'x' }, sb.ctx()))).toContain("path ends with '/': Write needs a file path");
    expect(fs.readdirSync(path.join(sb.workdir, 'dir'))).toEqual([]);
  });

  it('Edit "file/" is refused; Delete "file/" is refused, Delete "folder/" deletes the folder', async () => {
    sb.write('a.txt', 'a');
    expect(textOf(await edit.execute({ file_path: 'a.txt/', old_string: 'a', new_string: 'b' }, sb.ctx()))).toContain("path ends with '/': Edit needs a file path");
    expect(sb.read('a.txt')).toBe('a');
    expect(textOf(await del.execute({ path: 'a.txt/' }, sb.ctx()))).toContain("path ends with '/' but a.txt is not a folder");
    expect(sb.exists('a.txt')).toBe(true);
    sb.write('d/x.txt', 'x');
    expect(textOf(await del.execute({ path: 'd/', recursive: true }, sb.ctx()))).toMatch(/^Deleted folder d with 1 file/);
    expect(sb.exists('d')).toBe(false);
  });
});

describe('links that stay inside the workspace', () => {
  it('Write and Edit follow a folder link and a file link inside; the links stay links', async () => {
    sb.write('real/file.txt', 'one\n');
    fs.symlinkSync('real', path.join(sb.workdir, 'alias'));
    fs.symlinkSync(path.join(sb.workdir, 'real', 'file.txt'), path.join(sb.workdir, 'file-link'));
    expect((await write.execute({ file_path: 'alias/new.txt', content: 'n' }, sb.ctx())).isError).toBeFalsy();
    expect(sb.read('real/new.txt')).toBe('n');
    expect(textOf(await write.execute({ file_path: 'file-link', content: 'two\n' }, sb.ctx()))).toMatch(/^Overwrote file-link/);
    expect((await edit.execute({ file_path: 'alias/file.txt', old_string: 'two', new_string: 'three' }, sb.ctx())).isError).toBeFalsy();
    expect(sb.read('real/file.txt')).toBe('three\n');
    expect(fs.lstatSync(path.join(sb.workdir, 'file-link')).isSymbolicLink()).toBe(true);
    expect(textOf(await read.execute({ file_path: 'file-link' }, sb.ctx()))).toBe('     1\tthree');
  });

  it('Write through a dangling link inside creates its target inside', async () => {
    fs.symlinkSync('made/by/link.txt', path.join(sb.workdir, 'dangle'));
    const r = await write.execute({ file_path: 'dangle', content: 'x' }, sb.ctx());
    expect(textOf(r)).toMatch(/^Created dangle/);
    expect(sb.read('made/by/link.txt')).toBe('x');
  });

  it('a link loop is refused by name', async () => {
    fs.symlinkSync('b', path.join(sb.workdir, 'a'));
    fs.symlinkSync('a', path.join(sb.workdir, 'b'));
    expect(textOf(await read.execute({ file_path: 'a' }, sb.ctx()))).toBe('Refused: "a" has too many levels of symbolic links');
    expect(textOf(await write.execute({ file_path: 'a/x.txt', content: 'x' }, sb.ctx()))).toBe('Refused: "a/x.txt" has too many levels of symbolic links');
  });

  it('a file used as a folder fails clearly', async () => {
    sb.write('f.txt', 'x');
    expect(textOf(await write.execute({ file_path: 'f.txt/sub.txt', content: 'x' }, sb.ctx()))).toBe('f.txt/sub.txt: a parent of it is not a folder');
  });
});

describe('Delete through held handles', () => {
  it('a recursive Delete removes a nested link to an outside folder, never what it points to', async () => {
    fs.writeFileSync(path.join(sb.outside, 'keep.txt'), 'k');
    sb.write('build/a.txt', 'a');
    fs.symlinkSync(sb.outside, path.join(sb.workdir, 'build', 'out-link'));
    fs.symlinkSync(path.join(sb.outside, 'keep.txt'), path.join(sb.workdir, 'build', 'file-link'));
    const r = await del.execute({ path: 'build', recursive: true }, sb.ctx());
    expect(textOf(r)).toContain('Deleted folder build with 1 file, 0 folders, 2 links');
    expect(sb.exists('build')).toBe(false);
    expect(fs.readdirSync(sb.outside)).toEqual(['keep.txt']);
    expect(fs.readFileSync(path.join(sb.outside, 'keep.txt'), 'utf8')).toBe('k');
  });

  it('Delete through a folder link inside removes the entry in the real folder', async () => {
    sb.write('real/x.txt', 'x');
    fs.symlinkSync('real', path.join(sb.workdir, 'alias'));
    expect(textOf(await del.execute({ path: 'alias/x.txt' }, sb.ctx()))).toBe('Deleted file alias/x.txt (1 B).');
    expect(sb.exists('real/x.txt')).toBe(false);
  });
});

describe('replacing files', () => {
  it('Write and Edit keep the mode of the file they replace and leave no temp file', async () => {
    const file = sb.write('run.sh', '#!/bin/sh\necho a\n');
    fs.chmodSync(file, 0o751);
    await write.execute({ file_path: 'run.sh', content: '#!/bin/sh\necho b\n' }, sb.ctx());
    await edit.execute({ file_path: 'run.sh', old_string: 'echo b', new_string: 'echo c' }, sb.ctx());
    expect(sb.read('run.sh')).toBe('#!/bin/sh\necho c\n');
    expect(fs.statSync(file).mode & 0o777).toBe(0o751);
    expect(fs.readdirSync(sb.workdir)).toEqual(['run.sh']);
  });

  it('a read-only file is not replaced; a long multibyte name still gets a temp file', async () => {
    const file = sb.write('ro.txt', 'keep');
    fs.chmodSync(file, 0o444);
    if (process.getuid?.() !== 0) {
      expect(textOf(await write.execute({ file_path: 'ro.txt', content: 'lost' }, sb.ctx()))).toBe('ro.txt: permission denied');
      expect(sb.read('ro.txt')).toBe('keep');
    }
    const long = `${'é'.repeat(120)}.txt`; // 244 bytes: the name itself fits NAME_MAX
    expect((await write.execute({ file_path: long, content: 'x' }, sb.ctx())).isError).toBeFalsy();
    expect(sb.read(long)).toBe('x');
  });

  it('a hard link to a file outside: Write and Edit replace the workspace entry, the outside file keeps its content', async () => {
    const outsideFile = path.join(sb.outside, 'shared.txt');
    fs.writeFileSync(outsideFile, 'outside content\n');
    fs.linkSync(outsideFile, path.join(sb.workdir, 'hard.txt'));
    expect((await edit.execute({ file_path: 'hard.txt', old_string: 'outside', new_string: 'inside' }, sb.ctx())).isError).toBeFalsy();
    expect(sb.read('hard.txt')).toBe('inside content\n');
    expect((await write.execute({ file_path: 'hard.txt', content: 'rewritten\n' }, sb.ctx())).isError).toBeFalsy();
    expect(sb.read('hard.txt')).toBe('rewritten\n');
    expect(fs.readFileSync(outsideFile, 'utf8')).toBe('outside content\n');
  });
});

describe('the by-name fallback (no /proc/self/fd)', () => {
  it('still works inside and refuses links leading outside', async () => {
    useProcFdForTests(false);
    sb.write('a/b.txt', 'hello\n');
    fs.symlinkSync(sb.outside, path.join(sb.workdir, 'out'));
    expect(textOf(await write.execute({ file_path: 'a/c/new.txt', content: 'n' }, sb.ctx()))).toMatch(/^Created a\/c\/new\.txt/);
    expect((await edit.execute({ file_path: 'a/b.txt', old_string: 'hello', new_string: 'bye' }, sb.ctx())).isError).toBeFalsy();
    expect(textOf(await read.execute({ file_path: 'a/b.txt' }, sb.ctx()))).toBe('     1\tbye');
    expect(textOf(await write.execute({ file_path: 'out/x.txt', content: 'x' }, sb.ctx()))).toMatch(/^Refused: "out\/x\.txt" resolves through a symbolic link to .*, outside the workspace/);
    expect(textOf(await del.execute({ path: 'a', recursive: true }, sb.ctx()))).toMatch(/^Deleted folder a with 2 files, 1 folder/);
    expect(fs.readdirSync(sb.outside)).toEqual([]);
  });
});
