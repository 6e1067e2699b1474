import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createEditTool } from '../../plugins/tool-edit/index.js';
import { createReadTool } from '../../plugins/tool-read/index.js';
import { createWriteTool } from '../../plugins/tool-write/index.js';
import { makeSandbox, textOf, type Sandbox } from '../helpers/tool-context.js';

let sb: Sandbox;
beforeEach(() => {
  sb = makeSandbox();
});
afterEach(() => sb.cleanup());

const read = createReadTool();
const write = createWriteTool();
const edit = createEditTool();
const PNG_1X1 = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64');
const lines = (n: number) => Array.from({ length: n }, (_, i) => `line ${i + 1}`).join('\n') + '\n';

describe('Read', () => {
  it('returns text with line numbers', async () => {
    sb.write('a.txt', 'alpha\nbeta\n');
    const r = await read.execute({ file_path: 'a.txt' }, sb.ctx());
    expect(r.isError).toBeFalsy();
    expect(textOf(r)).toBe('     1\talpha\n     2\tbeta');
    expect(r.details).toMatchObject({ path: 'a.txt', startLine: 1, endLine: 2, totalLines: 2, hasMore: false });
  });

  it('reads a range with offset (1-based) and limit, and says where to continue', async () => {
    sb.write('b.txt', lines(10));
    const r = await read.execute({ file_path: 'b.txt', offset: 4, limit: 3 }, sb.ctx());
    expect(textOf(r)).toContain('     4\tline 4\n     5\tline 5\n     6\tline 6');
    expect(textOf(r)).not.toContain('line 7');
    expect(textOf(r)).toContain('call Read with offset=7');
    expect(r.details).toMatchObject({ startLine: 4, endLine: 6, hasMore: true });
  });

  it('pages a large file by tools.read.maxLines and tools.read.maxBytes', async () => {
    sb.write('big.txt', lines(5000));
    const byLines = await read.execute({ file_path: 'big.txt' }, sb.ctx({ settings: { tools: { read: { maxLines: 100 } } } }));
    expect(byLines.details).toMatchObject({ startLine: 1, endLine: 100, hasMore: true, totalLines: null });
    const byBytes = await read.execute({ file_path: 'big.txt' }, sb.ctx({ settings: { tools: { read: { maxBytes: 1024 } } } }));
    const end = (byBytes.details as { endLine: number }).endLine;
    expect(end).toBeGreaterThan(1);
    expect(end).toBeLessThan(5000);
    expect(textOf(byBytes)).toContain(`offset=${end + 1}`);
    const last = await read.execute({ file_path: 'big.txt', offset: 4999 }, sb.ctx());
    expect(textOf(last)).toContain('  5000\tline 5000');
    expect(last.details).toMatchObject({ hasMore: false, totalLines: 5000 });
  });

  it('cuts overlong lines with a marker', async () => {
    sb.write('long.txt', 'x'.repeat(50_000) + '\nshort\n');
    const r = await read.execute({ file_path: 'long.txt' }, sb.ctx({ settings: { tools: { read: { maxLineLength: 100 } } } }));
    const [first, second] = textOf(r).split('\n');
    expect(first).toBe(`     1\t${'x'.repeat(100)} [... line cut at 100 characters]`);
    expect(second).toBe('     2\tshort');
  });

  it('handles a last line without newline, CRLF, and an empty file', async () => {
    sb.write('crlf.txt', 'one\r\ntwo');
    expect(textOf(await read.execute({ file_path: 'crlf.txt' }, sb.ctx()))).toBe('     1\tone\n     2\ttwo');
    sb.write('empty.txt', '');
    expect(textOf(await read.execute({ file_path: 'empty.txt' }, sb.ctx()))).toBe('(empty.txt is empty)');
  });

  it('fails clearly: offset past the end, a folder, a missing file, a binary file', async () => {
    sb.write('c.txt', lines(3));
    expect(textOf(await read.execute({ file_path: 'c.txt', offset: 9 }, sb.ctx()))).toBe('c.txt has 3 lines; offset 9 is past the end.');
    fs.mkdirSync(path.join(sb.workdir, 'dir'));
    expect(textOf(await read.execute({ file_path: 'dir' }, sb.ctx()))).toContain('dir is a folder');
    const missing = await read.execute({ file_path: 'nope.txt' }, sb.ctx());
    expect(missing.isError).toBe(true);
    expect(textOf(missing)).toBe('nope.txt: does not exist');
    sb.write('bin.dat', Buffer.from([1, 2, 0, 3]));
    expect(textOf(await read.execute({ file_path: 'bin.dat' }, sb.ctx()))).toContain('binary file');
  });

  it('returns an image file as image content', async () => {
    sb.write('pic.png', PNG_1X1);
    const r = await read.execute({ file_path: 'pic.png' }, sb.ctx());
    const img = r.content.find((b) => b.type === 'image');
    expect(img).toMatchObject({ type: 'image', mimeType: 'image/png', data: PNG_1X1.toString('base64'), path: path.join(sb.workdir, 'pic.png') });
  });

  it('is marked parallel-safe', () => {
    expect(read.concurrency).toBe('parallel');
  });
});

describe('Write', () => {
  it('creates a file and its parent folders, and reports it to the ledger', async () => {
    const r = await write.execute({ file_path: 'deep/er/new.txt', content: 'hi\nthere\n' }, sb.ctx());
    expect(r.isError).toBeFalsy();
    expect(textOf(r)).toBe('Created deep/er/new.txt (2 lines, 9 B).');
    expect(sb.read('deep/er/new.txt')).toBe('hi\nthere\n');
    expect(r.editedFiles).toEqual([{ path: 'deep/er/new.txt', action: 'write' }]);
  });

  it('overwrites an existing file', async () => {
    sb.write('a.txt', 'old content');
    const r = await write.execute({ file_path: path.join(sb.workdir, 'a.txt'), content: 'new' }, sb.ctx());
    expect(textOf(r)).toMatch(/^Overwrote a\.txt/);
    expect(sb.read('a.txt')).toBe('new');
    expect(r.editedFiles).toEqual([{ path: 'a.txt', action: 'write' }]);
  });

  it('refuses a folder path, with no ledger entry', async () => {
    fs.mkdirSync(path.join(sb.workdir, 'd'));
    const r = await write.execute({ file_path: 'd', content: 'x' }, sb.ctx());
    expect(r.isError).toBe(true);
    expect(r.editedFiles).toBeUndefined();
  });
});

describe('Edit', () => {
  it('replaces a unique string and shows the edited lines', async () => {
    sb.write('e.ts', 'const a = 1;\nconst b = 2;\n');
    const r = await edit.execute({ file_path: 'e.ts', old_string: 'const b = 2;', new_string: 'const b = 3;' }, sb.ctx());
    expect(r.isError).toBeFalsy();
    expect(sb.read('e.ts')).toBe('const a = 1;\nconst b = 3;\n');
    expect(textOf(r)).toContain('Edited e.ts: replaced 1 occurrence.');
    expect(textOf(r)).toContain('     2\tconst b = 3;');
    expect(r.editedFiles).toEqual([{ path: 'e.ts', action: 'edit' }]);
  });

  it('fails clearly when old_string is missing, leaving the file unchanged', async () => {
    sb.write('e.ts', 'hello\n');
    const r = await edit.execute({ file_path: 'e.ts', old_string: 'goodbye', new_string: 'x' }, sb.ctx());
    expect(r.isError).toBe(true);
    expect(textOf(r)).toMatch(/^old_string was not found in e\.ts; the file is unchanged/);
    expect(r.editedFiles).toBeUndefined();
    expect(sb.read('e.ts')).toBe('hello\n');
  });

  it('fails when old_string is not unique and replace_all was not asked, naming count and lines', async () => {
    sb.write('e.ts', 'x = 1\ny = 2\nx = 1\n');
    const r = await edit.execute({ file_path: 'e.ts', old_string: 'x = 1', new_string: 'x = 9' }, sb.ctx());
    expect(r.isError).toBe(true);
    expect(textOf(r)).toContain('old_string occurs 2 times in e.ts (lines 1, 3)');
    expect(textOf(r)).toContain('replace_all: true');
    expect(sb.read('e.ts')).toBe('x = 1\ny = 2\nx = 1\n');
  });

  it('replace_all replaces every occurrence; "$&" in new_string stays literal', async () => {
    sb.write('e.ts', 'foo foo foo');
    const r = await edit.execute({ file_path: 'e.ts', old_string: 'foo', new_string: '$&bar', replace_all: true }, sb.ctx());
    expect(textOf(r)).toContain('replaced 3 occurrences');
    expect(sb.read('e.ts')).toBe('$&bar $&bar $&bar');
  });

  it('matches LF old_string against a CRLF file, keeping CRLF', async () => {
    sb.write('w.txt', 'a\r\nb\r\nc\r\n');
    const r = await edit.execute({ file_path: 'w.txt', old_string: 'a\nb', new_string: 'A\nB' }, sb.ctx());
    expect(r.isError).toBeFalsy();
    expect(sb.read('w.txt')).toBe('A\r\nB\r\nc\r\n');
  });

  it('fails on a missing file, identical strings, and (in validation) an empty old_string', async () => {
    expect(textOf(await edit.execute({ file_path: 'nope.ts', old_string: 'a', new_string: 'b' }, sb.ctx()))).toContain('does not exist. Use Write');
    sb.write('e.ts', 'a');
    expect(textOf(await edit.execute({ file_path: 'e.ts', old_string: 'a', new_string: 'a' }, sb.ctx()))).toContain('identical');
    const v = edit.parameters.safeParse({ file_path: 'e.ts', old_string: '', new_string: 'x' });
    expect(v.success).toBe(false);
  });
});
